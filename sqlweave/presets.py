"""Named pipelines. Later stages (pruning, examples, correction, voting, agent) add presets here.

>>> sorted(PRESETS)
['zero-shot', 'zero-shot-compact']
"""

from __future__ import annotations

from typing import Callable

from .errors import ConfigurationError
from .pipeline import Pipeline
from .stages import CheckQuestion, ExecuteSQL, ExtractSQL, GenerateSQL, RenderSchema


def zero_shot(style: str = "create_table") -> Pipeline:
    """Schema as CREATE TABLE statements with sample rows, then the question; one model call."""
    return Pipeline(
        "zero-shot" if style == "create_table" else f"zero-shot-{style.replace('_', '-')}",
        (CheckQuestion(), RenderSchema(style=style), GenerateSQL(), ExtractSQL(), ExecuteSQL()),
    )


PRESETS: dict[str, Callable[[], Pipeline]] = {
    "zero-shot": zero_shot,
    "zero-shot-compact": lambda: zero_shot("compact"),
}


def build_pipeline(name: str = "zero-shot") -> Pipeline:
    """The pipeline preset called ``name``."""
    try:
        return PRESETS[name]()
    except KeyError:
        raise ConfigurationError(f"unknown pipeline {name!r}", hint=f"Use one of: {', '.join(sorted(PRESETS))}.") from None
