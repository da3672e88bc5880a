"""How far a stage is, for whoever waits: "Trying other readings 2/4".

A stage's model call may draw several samples (a vote's four); the model backend reports each one as it is done
(:func:`report`), and the pipeline passes the count to the door that asked (:func:`reporting`), which says it in
its progress. Nothing is reported outside a :func:`reporting` block.

>>> seen = []
>>> with reporting(lambda done, total: seen.append((done, total))):
...     report(1, 4); report(2, 4)
>>> report(3, 4); seen
[(1, 4), (2, 4)]
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

#: Called with the samples done and the samples asked for.
ProgressCallback = Callable[[int, int], None]

_CURRENT: ContextVar[ProgressCallback | None] = ContextVar("sqlweave_progress", default=None)


def report(done: int, total: int) -> None:
    """Say that ``done`` of ``total`` samples of the current call are done (a failing listener is ignored)."""
    listener = _CURRENT.get()
    if listener is not None:
        try:
            listener(done, total)
        except Exception:  # noqa: BLE001 - progress is a courtesy: it never stops an answer
            pass


@contextmanager
def reporting(listener: ProgressCallback | None) -> Iterator[None]:
    """Send what :func:`report` says inside the block to ``listener``."""
    token = _CURRENT.set(listener)
    try:
        yield
    finally:
        _CURRENT.reset(token)


__all__ = ["ProgressCallback", "report", "reporting"]
