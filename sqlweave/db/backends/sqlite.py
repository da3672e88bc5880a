"""SQLite: a file opened with the ``mode=ro`` URI and ``PRAGMA query_only``, stopped by a progress handler.

Python's ``sqlite3.Error`` carries SQLite's result code (``sqlite_errorcode``): a time-out is ``SQLITE_INTERRUPT``,
a writer's lock ``SQLITE_BUSY`` or ``SQLITE_LOCKED``, a file that is no database ``SQLITE_NOTADB``. What a query
got wrong is only ever ``SQLITE_ERROR``, whose message alone says which kind it is: :func:`sqlite_error_kind`
reads it, the one place that does.

>>> import sqlite3
>>> try:
...     sqlite3.connect(":memory:").execute("SELECT * FROM nowhere")
... except sqlite3.Error as raw:
...     SQLite().diagnose(raw, sql="SELECT * FROM nowhere").name
'nowhere'
"""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

import sqlalchemy as sa

from ...errors import (
    AmbiguousColumnError,
    DatabaseSyntaxError,
    ExecutionError,
    UnknownColumnError,
    UnknownFunctionError,
    UnknownTableError,
)
from ..diagnose import ABSENT, CANNOT_OPEN, FAILED, LOCKED
from ..sqlite_functions import AGGREGATE_MISUSE, add_percentiles
from .base import Backend, cause_of

#: SQLite's result codes sqlweave acts on (https://sqlite.org/rescode.html; the primary code is the low byte).
SQLITE_ERROR, SQLITE_INTERNAL, SQLITE_BUSY, SQLITE_LOCKED = 1, 2, 5, 6
SQLITE_INTERRUPT, SQLITE_CORRUPT, SQLITE_CANTOPEN, SQLITE_NOTADB = 9, 11, 14, 26

#: What SQLite says within ``SQLITE_ERROR``, by kind (its message is all it gives).
_KINDS: tuple[tuple[type[ExecutionError], "re.Pattern[str]"], ...] = (
    (UnknownColumnError, re.compile(r"^no such column: (?P<name>.+)$")),
    (UnknownTableError, re.compile(r"^no such table: (?P<name>.+)$")),
    (AmbiguousColumnError, re.compile(r"^ambiguous column name: (?P<name>.+)$")),
    (UnknownFunctionError, re.compile(r"^no such function: (?P<name>.+)$")),
    (DatabaseSyntaxError, re.compile(r"syntax error|^incomplete input$")),
)


def result_code(raw: BaseException | None) -> int | None:
    """SQLite's primary result code of ``raw`` (or of the ``sqlite3.Error`` it wraps), or ``None``.

    >>> import sqlite3
    >>> try:
    ...     sqlite3.connect(":memory:").execute("SELECT nope")
    ... except sqlite3.Error as raw:
    ...     result_code(raw) == SQLITE_ERROR
    True
    """
    found = cause_of(raw, sqlite3.Error)
    code = getattr(found, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def sqlite_error_kind(text: str) -> tuple[type[ExecutionError], str | None] | None:
    """Which typed error an ``SQLITE_ERROR`` is, from its message (SQLite gives nothing else), and its name.

    >>> sqlite_error_kind("no such column: agee")
    (<class 'sqlweave.errors.UnknownColumnError'>, 'agee')
    >>> sqlite_error_kind("near \\"SELEC\\": syntax error")[0].__name__
    'DatabaseSyntaxError'
    """
    for cls, pattern in _KINDS:
        m = pattern.search(text)
        if m:
            return cls, m.groupdict().get("name")
    return None


def sqlite_text(b: bytes) -> str:
    """A SQLite text value: real-world files (Spider's among them) hold invalid UTF-8, which is never an error and
    loses nothing: undecodable bytes become lone surrogates, which JSON output keeps exactly, displays show as
    escapes (:func:`sqlweave.text.visible`) and model prompts receive as U+FFFD (:func:`sqlweave.text.well_formed`)."""
    return b.decode("utf-8", errors="surrogateescape")


class SQLite(Backend):
    """A SQLite file, read-only."""

    names = ("sqlite",)
    dialect = "sqlite"
    refuses_many_rows = False
    pool_per_thread = True
    one_namespace = ("SQLite", "a SQLite file has one schema")
    opens_files = True

    def create_engine(self, path: Path, timeout_s: float) -> sa.Engine:
        """An engine on the file at ``path``, read-only: ``mode=ro`` and ``PRAGMA query_only``, and a writer's
        lock waited for 5 s at most, never longer than a query may run."""
        uri = f"file:{quote(str(path))}?mode=ro"

        def creator() -> sqlite3.Connection:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=min(5.0, timeout_s))
            conn.text_factory = sqlite_text
            conn.execute("PRAGMA query_only = ON")
            add_percentiles(conn)
            return conn

        return sa.create_engine("sqlite://", creator=creator, poolclass=sa.pool.SingletonThreadPool)

    def arm_timeout(self, conn: sa.Connection, raw: Any, timeout_s: float) -> Callable[[], None]:
        deadline = time.perf_counter() + timeout_s
        raw.set_progress_handler(lambda: 1 if time.perf_counter() > deadline else 0, 1000)
        return lambda: raw.set_progress_handler(None, 0)

    def timed_out(self, raw: BaseException) -> bool:
        return result_code(raw) == SQLITE_INTERRUPT

    def locked(self, raw: BaseException) -> bool:
        return result_code(raw) in (SQLITE_BUSY, SQLITE_LOCKED)

    def unreachable_reason(self, raw: BaseException | None) -> str:
        code = result_code(raw)
        if code in (SQLITE_BUSY, SQLITE_LOCKED):
            return LOCKED
        if code in (SQLITE_NOTADB, SQLITE_CORRUPT):
            return ABSENT[2]
        if code == SQLITE_CANTOPEN:
            return CANNOT_OPEN
        return FAILED

    def message(self, raw: BaseException) -> str:
        text = super().message(raw)
        if result_code(raw) == SQLITE_ERROR and cause_of(raw, sqlite3.OperationalError) is not None \
                and _aggregate_failed(raw):
            return AGGREGATE_MISUSE  # Python's sqlite3 hides the reason an aggregate of sqlweave's own failed
        return text

    def error_kind(self, raw: BaseException, text: str) -> tuple[type[ExecutionError], str | None] | None:
        if result_code(raw) != SQLITE_ERROR:
            return None
        return sqlite_error_kind(text)


def _aggregate_failed(raw: BaseException) -> bool:
    """Did one of sqlweave's own aggregates (:mod:`sqlweave.db.sqlite_functions`) raise? Python's sqlite3 then
    raises ``OperationalError`` with its own fixed text as the only sign (no code of its own): that text is read
    here, the one place."""
    return str(cause_of(raw, sqlite3.OperationalError)).startswith("user-defined aggregate's")
