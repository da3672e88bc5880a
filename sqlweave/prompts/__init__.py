"""Prompt templates, one text file per stage, filled with :func:`render`.

Templates use ``{name}`` placeholders. Each file holds a system part and a user
part separated by a line ``---``; the stable part (instructions, schema) comes
first and the question last, so llama.cpp can reuse the evaluated prefix.

>>> system, user = render("zero_shot", dialect="SQLite", schema="CREATE TABLE t (a INT);", question="How many?")
>>> user.endswith("How many?")
True

A template whose system part is ``@system zero_shot`` shares that template's instructions (:data:`SAME_SYSTEM`):

>>> load("zero_shot_link_first")[0] == load("zero_shot")[0]
True

Optional placeholders (:data:`OPTIONAL`) default to an empty string, so a caller that has
nothing to show renders exactly the text it rendered before the placeholder existed:

>>> with_values = render("zero_shot", dialect="SQLite", schema="CREATE TABLE t (a INT);", question="How many?",
...                      values="Values from the database that match the question:\\n- t.a: 'x'\\n\\n")
>>> print(with_values[1])
Database schema:
CREATE TABLE t (a INT);
<BLANKLINE>
Values from the database that match the question:
- t.a: 'x'
<BLANKLINE>
Question: How many?
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from ..errors import ConfigurationError

#: Placeholders a template may use that callers may leave out (they render as an empty string).
#: ``values`` is the block of database values matching the question (the ``select_values`` stage's prompt block,
#: :attr:`sqlweave.pipeline.State.prompt_blocks`); ``history`` the earlier turns of a conversation
#: (:func:`sqlweave.stages.generate.history_block`); ``language`` a word on a question that is not in
#: English (:func:`sqlweave.question.language_block`); ``knowledge`` the database's business terms, preferred
#: joins and sample questions that fit the question (:func:`sqlweave.stages.generate.knowledge_block`); ``evidence``
#: the question's evidence (:func:`sqlweave.stages.generate.evidence_block`); ``links`` the question's words that
#: name a table or column by another word (the ``link_schema`` stage's prompt block).
OPTIONAL: dict[str, str] = {"values": "", "history": "", "language": "", "knowledge": "", "evidence": "",
                            "links": ""}


#: A system part reading ``@system NAME`` is the system part of template ``NAME``: a template that asks the same
#: thing another way (a view of generation's prompt) keeps generation's instructions without a copy to keep in step.
SAME_SYSTEM = "@system "


def _parts(name: str) -> tuple[str, str]:
    """The ``(system, user)`` parts of template ``name`` as written, a file of this package (no path is followed)."""
    try:
        if not name.replace("_", "").isalnum() or not name.isascii():
            raise FileNotFoundError(name)
        text = resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        names = sorted(p.name[:-4] for p in resources.files(__package__).iterdir() if p.name.endswith(".txt"))
        raise ConfigurationError(f"no prompt template {name!r}", hint=f"Templates: {', '.join(names)}.") from None
    system, _, user = text.partition("\n---\n")
    return system.strip(), user.strip()


@lru_cache(maxsize=None)
def load(name: str) -> tuple[str, str]:
    """The ``(system, user)`` parts of template ``name``, an ``@system`` reference resolved (one step: the template
    it names must write its instructions out, so no chain or cycle of references can form)."""
    system, user = _parts(name)
    if system.startswith(SAME_SYSTEM):  # another template's instructions, word for word
        source = system[len(SAME_SYSTEM):].strip()
        if source == name:
            raise ConfigurationError(f"prompt template {name!r} takes its instructions from itself",
                                     hint="Point @system at a template that writes its instructions out.")
        system = _parts(source)[0]
        if system.startswith(SAME_SYSTEM):
            raise ConfigurationError(f"prompt template {name!r} takes its instructions from {source!r}, which takes "
                                     "them from another template",
                                     hint="Point @system at a template that writes its instructions out.")
    return system, user


def render(name: str, **values: str) -> tuple[str, str]:
    """``(system, user)`` texts of template ``name`` with ``values`` filled in (:data:`OPTIONAL` ones default to "")."""
    system, user = load(name)
    filled = {**OPTIONAL, **values}
    return system.format(**filled), user.format(**filled)
