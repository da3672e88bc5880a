"""What every shipped stage is built on: :class:`BaseStage` (its ``requires`` and ``provides`` are checked against
:class:`~sqlweave.pipeline.State` when the class is defined) and :func:`check_options` (its options are checked
when it is made), so a wrong stage fails once, when a pipeline is built, never once per question."""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import ConfigurationError
from ..pipeline import check_slots


class BaseStage:
    """The base of sqlweave's stages: defining a subclass whose ``requires`` or ``provides`` names no slot of
    :class:`~sqlweave.pipeline.State` raises :class:`~sqlweave.errors.PipelineError` at once
    (:func:`~sqlweave.pipeline.check_slots`).

    >>> class Broken(BaseStage):
    ...     provides = ("answer",)
    Traceback (most recent call last):
    ...
    sqlweave.errors.PipelineError: stage Broken names 'answer', which is no slot of State
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_slots(cls.__qualname__, getattr(cls, "requires", ()), getattr(cls, "provides", ()))


def check_options(stage: Any, *, choices: dict[str, Sequence[Any]] | None = None,
                  at_least: dict[str, float] | None = None, between: dict[str, tuple[float, float]] | None = None,
                  optional: Sequence[str] = ()) -> None:
    """Raise :class:`~sqlweave.errors.ConfigurationError` when one of ``stage``'s options is out of range, so a
    wrong value fails when the pipeline is built, not on every question. Names in ``optional`` may be ``None``.

    >>> from sqlweave.stages.correct import ErrorCorrection
    >>> ErrorCorrection(max_rounds=-5)
    Traceback (most recent call last):
    ...
    sqlweave.errors.ConfigurationError: correct: max_rounds must be a number >= 0, not -5
    """
    label = getattr(stage, "name", type(stage).__name__)
    for option, allowed in (choices or {}).items():
        value = getattr(stage, option)
        if value not in allowed:
            import difflib

            close = difflib.get_close_matches(str(value), [str(a) for a in allowed], n=1)
            raise ConfigurationError(f"{label}: unknown {option} {value!r}",
                                     hint=(f"Did you mean {close[0]!r}? " if close else "")
                                     + f"Use one of: {', '.join(map(str, allowed))}.")
    limits = {k: (v, float("inf")) for k, v in (at_least or {}).items()} | dict(between or {})
    for option, (low, high) in limits.items():
        value = getattr(stage, option)
        if value is None and option in optional:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            bound = f">= {low:g}" if high == float("inf") else f"between {low:g} and {high:g}"
            raise ConfigurationError(f"{label}: {option} must be a number {bound}, not {value!r}",
                                     hint=f"Pass {option} {bound}.")
