"""A question's time budget: one deadline that the pipeline checks between stages and the model while it works.

A shared server must not let one question hold the model for minutes. Each preset has a budget
(:func:`preset_budget`), which every door applies (the HTTP API and the page at most the operator's ceiling,
``sqlweave serve --max-question-seconds``; MCP; ``sqlweave ask`` and ``chat``); in the library, a budget holds when
it is asked for (``Pipeline(budget_s=...)``, or ``budget_s=`` of :meth:`Pipeline.run
<sqlweave.pipeline.Pipeline.run>` and :meth:`Engine.ask <sqlweave.engine.Engine.ask>`), so batch work and
evaluations answer every question in full. :meth:`Pipeline.run <sqlweave.pipeline.Pipeline.run>` starts a
:class:`Deadline` and makes it the :func:`current` one while its stages run; the embedded model stops
evaluating a prompt or generating at the deadline (llama.cpp's abort callback and a logits check), a model server's
call gets the time left as its timeout. A deadline also carries a cancel event: a door whose client went away sets
it, and the question stops within a second. When the budget is spent, voting and correcting stop and the answer
found so far comes back marked ``cut_short``; with none, a typed :class:`~sqlweave.errors.QuestionTimeoutError`.

>>> d = Deadline.start(30)
>>> d.expired(), 29 < d.remaining() <= 30
(False, True)
>>> with within(d):
...     current() is d
True
>>> current() is None
True
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Iterator

from .errors import QuestionCancelledError, QuestionTimeoutError

#: Seconds of model time a preset's question may take (its base name: ``default+values`` is ``default``'s). Set
#: from the presets' measured cost on this project's 2-core reference machine: far above a typical question's
#: (BENCHMARKS.md, "Service bounds"), low enough that nobody waits minutes behind one question.
PRESET_BUDGETS_S: dict[str, float] = {
    "zero-shot": 120.0,
    "default": 180.0,
    "best": 300.0,
}
#: The budget of a pipeline with no entry above (custom pipelines, research presets).
DEFAULT_BUDGET_S = 240.0


def preset_budget(name: str) -> float:
    """The model-time budget of the preset ``name`` (seconds).

    >>> preset_budget("default"), preset_budget("default+values"), preset_budget("my-pipeline")
    (180.0, 180.0, 240.0)
    """
    return PRESET_BUDGETS_S.get(name.split("+", 1)[0].strip(), DEFAULT_BUDGET_S)


@dataclass(frozen=True)
class Deadline:
    """When a question's time is up (``at``, on :func:`time.monotonic`; ``None``: never), and whether whoever asked
    it has gone (``cancel``)."""

    at: float | None
    seconds: float | None
    cancel: threading.Event = field(default_factory=threading.Event, compare=False)
    #: Someone may cancel (a door passed its event): the model then watches for it as it works.
    cancellable: bool = False

    @classmethod
    def start(cls, seconds: float | None, cancel: threading.Event | None = None) -> "Deadline":
        at = None if seconds is None or seconds == float("inf") else time.monotonic() + seconds
        return cls(at, seconds, cancel if cancel is not None else threading.Event(), cancel is not None)

    @property
    def watched(self) -> bool:
        """Whether the model must watch this deadline while it works (a time limit, or a cancel that may come)."""
        return self.at is not None or self.cancellable

    def remaining(self) -> float | None:
        """Seconds left (0 once expired or cancelled; ``None`` without a time limit)."""
        if self.cancel.is_set():
            return 0.0
        return None if self.at is None else max(0.0, self.at - time.monotonic())

    def cancelled(self) -> bool:
        return self.cancel.is_set()

    def expired(self) -> bool:
        """The time is up, or the question was cancelled."""
        return self.cancel.is_set() or (self.at is not None and time.monotonic() >= self.at)

    def error(self) -> QuestionTimeoutError | QuestionCancelledError:
        """The typed error for a question stopped by this deadline."""
        if self.cancel.is_set():
            return QuestionCancelledError("the question was cancelled: whoever asked it has gone")
        return QuestionTimeoutError(f"no answer within the question's time budget of {self.seconds:g} s",
                                    budget_s=self.seconds)

    def check(self) -> None:
        """Raise :meth:`error` once expired."""
        if self.expired():
            raise self.error()


_CURRENT: ContextVar[Deadline | None] = ContextVar("sqlweave_deadline", default=None)


def current() -> Deadline | None:
    """The deadline of the question being answered in this thread (``None`` outside a pipeline run)."""
    return _CURRENT.get()


def watched() -> Deadline | None:
    """The :func:`current` deadline when a model must watch it while it works (it has a time limit, or a caller who
    may cancel); ``None`` otherwise, so a call with nothing to watch runs as it always has."""
    deadline = _CURRENT.get()
    return deadline if deadline is not None and deadline.watched else None


@contextmanager
def within(deadline: Deadline | None) -> Iterator[Deadline | None]:
    """Make ``deadline`` the :func:`current` one inside the block."""
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


__all__ = ["DEFAULT_BUDGET_S", "Deadline", "PRESET_BUDGETS_S", "current", "preset_budget", "watched", "within"]
