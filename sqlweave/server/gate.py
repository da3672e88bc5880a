"""The bounded queue in front of the model: a few requests run, a bounded number wait, the rest are turned away.

The embedded model is one in-process resource. Requests that use it take a :class:`Ticket` from the
:class:`ModelGate`: the ticket runs at once when a slot is free, waits in line (first come, first served)
when the line has room, and is refused with :class:`ServerBusyError` otherwise. A waiting ticket that is
cancelled (client gone, time limit) leaves the line; a running ticket frees its slot when released.

The gate is safe to use from several threads and event loops: waiters are woken through their own loop.

>>> import asyncio
>>> async def demo():
...     gate = ModelGate(running=1, waiting=1)
...     first, second = gate.enter(), gate.enter()
...     try:
...         gate.enter()
...     except ServerBusyError as err:
...         print("third:", err.code)
...     await first.wait()
...     print("positions:", first.position, second.position, gate.stats())
...     first.release()
...     await second.wait()
...     second.release()
...     return gate.stats()
>>> asyncio.run(demo())
third: busy
positions: 0 1 {'waiting': 1, 'running': 1, 'capacity': 2}
{'waiting': 0, 'running': 0, 'capacity': 2}
"""

from __future__ import annotations

import asyncio
import math
import statistics
import threading
import time
from collections import deque
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from ..errors import SqlweaveError


class ServerBusyError(SqlweaveError):
    """The model's queue is full (or a request waited for it too long): try again shortly."""

    code = "busy"
    http_status = 503
    retryable = True
    default_hint = "The server is answering other questions; retry after the number of seconds in Retry-After."

    def __init__(self, message: str, *, retry_after: int = 5, **details: Any) -> None:  # details may carry hint=
        super().__init__(message, **details)
        self.retry_after = max(1, int(retry_after))


class Ticket:
    """One request's place at the gate: waiting (``position`` > 0 in line) or running."""

    def __init__(self, gate: "ModelGate", position: int, running: bool) -> None:
        self._gate = gate
        self.position = position
        self.entered = time.perf_counter()
        self.started: float | None = self.entered if running else None
        self.released = False
        self._future: asyncio.Future[None] | None = None

    @property
    def running(self) -> bool:
        return self.started is not None and not self.released

    @property
    def wait_s(self) -> float:
        """Seconds spent waiting for a slot (so far, if still waiting)."""
        end = self.started if self.started is not None else time.perf_counter()
        return end - self.entered

    async def wait(self, timeout_s: float | None = None) -> None:
        """Return once this ticket holds a slot. On timeout or cancellation it leaves the line."""
        if self.started is not None:
            return
        loop = asyncio.get_running_loop()
        with self._gate._lock:
            if self.started is None and self._future is None:
                self._future = loop.create_future()
            fut = self._future
        if self.started is not None or fut is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout_s)
        except asyncio.TimeoutError:
            self.release()  # frees the slot too if it was granted at the deadline
            raise ServerBusyError(f"waited {timeout_s:g} s for the model without getting a turn",
                                  retry_after=self._gate.retry_after()) from None
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """Leave the line, or free the slot; safe to call more than once and from any thread."""
        self._gate._release(self)

    async def __aenter__(self) -> "Ticket":
        await self.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()


class ModelGate:
    """At most ``running`` tickets hold a slot; at most ``waiting`` more wait in line; others are refused."""

    def __init__(self, running: int = 1, waiting: int = 16, *, typical_s: float = 5.0) -> None:
        if running < 1 or waiting < 0:
            raise ValueError("running must be >= 1 and waiting >= 0")
        self.max_running = running
        self.max_waiting = waiting
        self._running = 0
        self._line: deque[Ticket] = deque()
        self._lock = threading.Lock()
        self._typical_s = typical_s  # a slot's hold time before any was measured, for Retry-After
        self._held: deque[float] = deque(maxlen=50)  # the last hold times: their median is a slot's typical time
        self.refused = 0
        self.served = 0

    @property
    def capacity(self) -> int:
        return self.max_running + self.max_waiting

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"waiting": len(self._line), "running": self._running, "capacity": self.capacity}

    def typical_s(self) -> float:
        """A slot's typical hold time: the median of the last ones measured (one long question does not make every
        client wait longer), or the starting guess before any."""
        with self._lock:
            return statistics.median(self._held) if self._held else self._typical_s

    def retry_after(self) -> int:
        """Seconds a refused client should wait: the time for the questions ahead of it to be served, from the
        measured hold times."""
        typical = self.typical_s()
        with self._lock:
            ahead = len(self._line) + 1
        return max(1, min(120, math.ceil(typical * ahead / self.max_running)))

    def check_room(self) -> None:
        """Raise :class:`ServerBusyError` now if :meth:`enter` would (a hint, not a reservation)."""
        with self._lock:
            full = self._running >= self.max_running and len(self._line) >= self.max_waiting
            if full:
                self.refused += 1
        if full:
            raise ServerBusyError("the model is busy and its queue is full", retry_after=self.retry_after(),
                                  queue=self.stats())

    def enter(self) -> Ticket:
        """A ticket that runs now or waits in line; :class:`ServerBusyError` when the line is full."""
        with self._lock:
            if self._running < self.max_running and not self._line:
                self._running += 1
                return Ticket(self, 0, running=True)
            if len(self._line) < self.max_waiting:
                ticket = Ticket(self, len(self._line) + 1, running=False)
                self._line.append(ticket)
                return ticket
            self.refused += 1
        raise ServerBusyError("the model is busy and its queue is full", retry_after=self.retry_after(),
                              queue=self.stats())

    @asynccontextmanager
    async def slot(self, timeout_s: float | None = None) -> AsyncIterator[Ticket]:
        """``async with gate.slot(): ...``: enter, wait for a slot, release at the end."""
        ticket = self.enter()
        try:
            await ticket.wait(timeout_s)
            yield ticket
        finally:
            ticket.release()

    def _release(self, ticket: Ticket) -> None:
        wake: list[Ticket] = []
        with self._lock:
            if ticket.released:
                return
            ticket.released = True
            if ticket.started is None:  # still waiting: just leave the line
                try:
                    self._line.remove(ticket)
                except ValueError:
                    pass
                fut = ticket._future
                if fut is not None and not fut.done():
                    fut.get_loop().call_soon_threadsafe(_cancel, fut)
                self._renumber()
                return
            self._running -= 1
            self.served += 1
            self._held.append(time.perf_counter() - ticket.started)
            while self._running < self.max_running and self._line:
                nxt = self._line.popleft()
                nxt.started = time.perf_counter()
                self._running += 1
                wake.append(nxt)
            self._renumber()
        for nxt in wake:
            fut = nxt._future
            if fut is not None and not fut.done():
                fut.get_loop().call_soon_threadsafe(_resolve, fut)

    def _renumber(self) -> None:
        for i, t in enumerate(self._line, 1):
            t.position = i


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _cancel(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.cancel()
