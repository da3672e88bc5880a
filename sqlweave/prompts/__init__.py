"""Prompt templates, one text file per stage, filled with :func:`render`.

Templates use ``{name}`` placeholders. Each file holds a system part and a user
part separated by a line ``---``; the stable part (instructions, schema) comes
first and the question last, so llama.cpp can reuse the evaluated prefix.

>>> system, user = render("zero_shot", dialect="SQLite", schema="CREATE TABLE t (a INT);", question="How many?")
>>> user.endswith("How many?")
True
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from ..errors import ConfigurationError


@lru_cache(maxsize=None)
def load(name: str) -> tuple[str, str]:
    try:
        text = resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"no prompt template {name!r}") from None
    system, _, user = text.partition("\n---\n")
    return system.strip(), user.strip()


def render(name: str, **values: str) -> tuple[str, str]:
    """``(system, user)`` texts of template ``name`` with ``values`` filled in."""
    system, user = load(name)
    return system.format(**values), user.format(**values)
