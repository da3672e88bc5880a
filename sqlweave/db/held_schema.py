"""The schema a database handle holds: read once (or taken from disk: :mod:`sqlweave.db.schema_cache`), and
checked at most every ``recheck_s`` seconds against the database's structure by one query, so that a handle that
lives on (a server's) reads it again when tables, columns, keys or grants changed, or its file was replaced.

>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> db = Database.open(demo_database_path())
>>> db.schema() is db.schema()  # held
True
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ..schema import Schema
    from .protocol import Reader


class HeldSchema:
    """One handle's schema, its structure when read, and when it was last checked.

    ``recheck_s`` is the time after which the next :meth:`get` checks the structure (``None``: never, as a bound
    handle of one request, whose schema is its parent's).
    """

    def __init__(self, recheck_s: float | None = 60.0, value: "Schema | None" = None,
                 structure: str | None = None, kept_since: float | None = None) -> None:
        self.value = value
        self.recheck_s = recheck_s
        #: the database's structure (:func:`~sqlweave.db.schema_cache.structure`) when its schema was read
        self.structure = structure
        #: when the schema held was read, if it came from disk (None: read by this handle)
        self.kept_since = kept_since
        self._checked_at = time.monotonic()
        self._recheck_lock = threading.Lock()

    def get(self, db: "Reader", *, refresh: bool = False, progress: "Callable[[int, int], None] | None" = None,
            shown: "Callable[[Schema], Schema] | None" = None) -> "Schema":
        """The schema of ``db``, read when none is held, when ``refresh`` says so or when the structure changed;
        ``shown`` reduces what was read to what may be shown (an access policy's filter)."""
        if self.value is not None and not refresh and self._structure_changed(db):
            self.value = None
        if self.value is None or refresh:
            from .schema_cache import read_schema

            self.kept_since = None
            self._checked_at = time.monotonic()
            with db.one_connection():
                schema = read_schema(db, refresh=refresh, progress=progress)
            self.value = shown(schema) if shown is not None else schema
        return self.value

    def snapshot(self) -> "HeldSchema":
        """The schema held now, for a bound handle: never checked by it (its parent checks)."""
        return HeldSchema(None, self.value, self.structure, self.kept_since)

    def _structure_changed(self, db: "Reader") -> bool:
        """Is it time to check the database's structure, and has it changed since the schema was read?"""
        if self.recheck_s is None or self.structure is None or time.monotonic() - self._checked_at < self.recheck_s:
            return False
        from .schema_cache import structure

        if not self._recheck_lock.acquire(blocking=False):
            return False  # another request is checking (or rebuilding) now
        try:
            self._checked_at = time.monotonic()
            if db.connection.source_rebuilt() or db.connection.file_replaced():
                return True
            now = structure(db)
            return now is not None and now != self.structure
        finally:
            self._recheck_lock.release()
