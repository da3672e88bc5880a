"""Named pipelines. Later stages (pruning, examples, correction, voting, agent) add presets here.

>>> sorted(PRESETS)
['correct', 'correct-all', 'dac', 'revise', 'vote', 'vote-correct', 'zero-shot', 'zero-shot-compact']
"""

from __future__ import annotations

from typing import Callable

from .errors import ConfigurationError
from .pipeline import Pipeline
from .stages import CheckQuestion, ExecuteSQL, ExtractSQL, GenerateSQL, RenderSchema
from .stages.correct import ErrorCorrection
from .stages.dac import DecomposedCorrection
from .stages.revise import RevisionChain
from .stages.vote import SelfConsistency


def zero_shot(style: str = "create_table") -> Pipeline:
    """Schema as CREATE TABLE statements with sample rows, then the question; one model call."""
    return Pipeline(
        "zero-shot" if style == "create_table" else f"zero-shot-{style.replace('_', '-')}",
        (CheckQuestion(), RenderSchema(style=style), GenerateSQL(), ExtractSQL(), ExecuteSQL()),
    )


def with_stages(base: Pipeline, name: str, *extra) -> Pipeline:
    """``base`` with ``extra`` stages appended (correction stages run after execution)."""
    return Pipeline(name, base.stages + tuple(extra))


PRESETS: dict[str, Callable[[], Pipeline]] = {
    "zero-shot": zero_shot,
    "zero-shot-compact": lambda: zero_shot("compact"),
    "correct": lambda: with_stages(zero_shot(), "correct", ErrorCorrection()),
    "revise": lambda: with_stages(zero_shot(), "revise", RevisionChain()),
    "vote": lambda: with_stages(zero_shot(), "vote", SelfConsistency()),
    "vote-correct": lambda: with_stages(zero_shot(), "vote-correct", SelfConsistency(), ErrorCorrection()),
    "dac": lambda: with_stages(zero_shot(), "dac", DecomposedCorrection()),
    # Every correction method, with the safety check: answers that run, return rows and on which
    # the sampled candidates agree (>= 60%) are left alone by the model-judged stages.
    "correct-all": lambda: with_stages(
        zero_shot(), "correct-all", SelfConsistency(), ErrorCorrection(),
        DecomposedCorrection(skip_if_confident=0.6), RevisionChain(skip_if_confident=0.6),
    ),
}


def build_pipeline(name: str = "zero-shot") -> Pipeline:
    """The pipeline preset called ``name``."""
    try:
        return PRESETS[name]()
    except KeyError:
        raise ConfigurationError(f"unknown pipeline {name!r}", hint=f"Use one of: {', '.join(sorted(PRESETS))}.") from None
