"""Files and folders sqlweave keeps as it works.

:func:`append_jsonl` appends to the files it grows (example pools, simplified questions, feedback): JSON lines
that an interrupted write cannot corrupt for the next reader. :func:`private_folder` makes the folders of its
cache, which hold what it read from the user's databases (schema samples, value indexes, copies of data files,
questions and answers): each folder it creates is readable by the user alone (``0700``), as ``~/.ssh`` is.

>>> import json, tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.jsonl"
>>> path.write_bytes(b'{"a": 1}\\n{"a": 2, "cut sho')   # a run killed mid-line
26
>>> append_jsonl(path, [{"a": 3}])
>>> [json.loads(line)["a"] for line in path.read_text().splitlines() if line.endswith("}")]
[1, 3]
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import tempfile
import threading
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Sequence

from .errors import StorageError

log = logging.getLogger("sqlweave.cache")


def private_folder(path: Path) -> Path:
    """Create the folder ``path`` and each missing folder above it readable by the user alone (``0700``), and
    return ``path``. A folder that exists keeps its permissions (an administrator's shared cache stays shared).

    >>> import stat, tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> made = private_folder(root / "cache" / "schemas")
    >>> [oct(stat.S_IMODE(p.stat().st_mode)) for p in (root / "cache", made)]
    ['0o700', '0o700']
    """
    missing = []
    folder = Path(path)
    while not folder.is_dir():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:  # another process made it meanwhile (a file there fails below, as mkdir would)
            if not folder.is_dir():
                raise
        else:
            os.chmod(folder, 0o700)  # whatever the umask: only the user's own bits count here
    return path


def private_file(path: Path) -> Path:
    """Make the file ``path`` readable and writable by the user alone (``0600``) when it is the user's own, and
    return ``path`` (a file of another user's, in an administrator's shared cache, is left as it is)."""
    try:
        st = os.stat(path)
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(path, 0o600)
    except OSError:
        pass  # gone meanwhile, or not ours to change: the folder's own mode still holds
    return path


def new_private_file(path: Path) -> Path:
    """Create ``path`` empty with mode ``0600`` when it does not exist yet (before SQLite opens it: its journal and
    WAL files take the database file's mode), and return it."""
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    return path


def secure_cache(root: Path) -> list[Path]:
    """Make the cache folder ``root`` private again where an earlier version (or a permissive umask) left it
    readable by others: each of the user's own folders in it becomes ``0700`` and each file ``0600``. Returns what
    was changed; a warning names the root when anything was. A root owned by another user (an administrator's
    shared cache) is not changed; a warning says it is readable by others.

    >>> import os, stat, tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()); os.chmod(root, 0o755)
    >>> (root / "answers.sqlite").write_bytes(b""); os.chmod(root / "answers.sqlite", 0o644)
    0
    >>> [p.name for p in secure_cache(root)], oct(stat.S_IMODE(root.stat().st_mode))
    ([..., 'answers.sqlite'], '0o700')
    """
    changed: list[Path] = []
    try:
        st = os.stat(root)
    except OSError:
        return changed  # not made yet: private_folder makes it private
    uid = os.getuid()
    if st.st_uid != uid:
        if st.st_mode & 0o077:
            log.warning("sqlweave's cache %s belongs to another user and others can read it: the questions, answers "
                        "and database samples kept there are not private", root)
        return changed
    for folder, dirs, files in os.walk(root):
        for path, private in [(Path(folder), 0o700)] + [(Path(folder) / f, 0o600) for f in files]:
            try:
                st = os.lstat(path)
                if st.st_uid == uid and st.st_mode & 0o077 and not os.path.islink(path):
                    os.chmod(path, private)
                    changed.append(path)
            except OSError:
                continue
    if changed:
        log.warning("sqlweave's cache %s was readable by other users (%d files and folders); it is private now "
                    "(0700 folders, 0600 files)", root, len(changed))
    return changed


_SECURED: set[str] = set()


def secure_cache_once(root: Path) -> None:
    """:func:`secure_cache` once per process and folder (every door calls it at start)."""
    key = str(root)
    if key not in _SECURED:
        _SECURED.add(key)
        secure_cache(root)


def write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> bool:
    """Write ``path`` in one step: ``write`` fills a temporary file of its own in the same (private) folder, which
    then replaces ``path``. A reader sees the old file or the new one, never half of one, however many processes
    write at once; on failure (a full disk, a read-only folder) nothing is left behind and ``False`` comes back.
    For caches, whose failure costs speed, never an answer.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "kept" / "v.json"
    >>> write_atomically(path, lambda fh: fh.write(b"[1]")), path.read_text(), [p.name for p in path.parent.iterdir()]
    (True, '[1]', ['v.json'])
    """
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=private_folder(path.parent), prefix=f".{path.stem}-", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return False


def append_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Append ``rows`` to ``path`` as JSON lines (creating its folder). A last line cut short by an
    interruption is ended first, so it cannot swallow the first new row; readers skip it. A place that cannot be
    written is a :class:`~sqlweave.errors.StorageError`."""
    try:
        private_folder(path.parent)
        with os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600), "a+b") as fh:
            fh.seek(0, 2)
            if fh.tell() > 0:
                fh.seek(-1, 2)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")
            for row in rows:
                fh.write((json.dumps(row) + "\n").encode("utf-8"))
            fh.flush()
    except OSError as err:
        raise StorageError(f"cannot write {str(path)!r}: {err.strerror or err}") from err


class CacheFile:
    """A SQLite file sqlweave keeps as a cache (model answers, embeddings): one that cannot be read or written
    costs its speed, never an answer or a command.

    A file that is not a SQLite database (cut short, overwritten) is kept aside as ``<name>.broken`` and a new one is
    started; a read that fails (the file locked past ``timeout_s``, unreadable) is a miss; a write that fails (disk
    full, locked, read-only) leaves the value unstored. Each failure is told once per file in the log
    (``sqlweave.cache``), with what to do.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "c.sqlite"
    >>> _ = path.write_bytes(b"not a database at all, but it is long enough to look like a header" * 2)
    >>> cache = CacheFile(path, "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT)")
    >>> cache.write("INSERT OR REPLACE INTO kv VALUES (?, ?)", [("a", "1")])
    >>> cache.read("SELECT v FROM kv WHERE k = ?", ("a",)), path.with_name("c.sqlite.broken").exists()
    ([('1',)], True)
    """

    def __init__(self, path: Path, ddl: str, *, timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.ddl = ddl
        self.timeout_s = timeout_s
        self._ready = False
        self._told: set[str] = set()
        self._lock = threading.Lock()

    def prepare(self) -> bool:
        """Create the file and its table now (instead of at the first read or write); False when it cannot be."""
        try:
            with self._connection():
                return True
        except (sqlite3.Error, OSError) as err:  # OSError: its folder cannot be made (read-only, a file in the way)
            self._tell("read", err)
            return False

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of ``sql``; none when the cache cannot be read."""
        try:
            with self._connection() as conn:
                return [tuple(r) for r in conn.execute(sql, tuple(params)).fetchall()]
        except (sqlite3.Error, OSError) as err:
            self._tell("read", err)
            return []

    def write(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run ``sql`` for each of ``rows`` and commit; nothing when the cache cannot be written."""
        try:
            with self._connection() as conn:
                conn.executemany(sql, [tuple(r) for r in rows])
        except (sqlite3.Error, OSError) as err:
            self._tell("written", err)

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A connection to the file, prepared the first time, committed (rolled back on an error) and closed."""
        if not self._ready:
            with self._lock:
                if not self._ready:
                    self._prepare()
        with closing(sqlite3.connect(self.path, timeout=self.timeout_s)) as conn, conn:
            yield conn

    def _prepare(self) -> None:
        new_private_file(private_folder(self.path.parent) / self.path.name)
        for attempt in (1, 2):
            try:
                with closing(sqlite3.connect(self.path, timeout=self.timeout_s)) as conn, conn:
                    conn.execute(self.ddl)
                private_file(self.path)
                self._ready = True
                return
            except sqlite3.DatabaseError as err:
                if attempt == 2 or not not_a_database(err):
                    raise  # read() and write() tell it; the next call tries again
                aside = self.path.with_name(self.path.name + ".broken")
                os.replace(self.path, aside)
                log.warning("sqlweave's cache %s was not a readable SQLite file (%s); it is kept as %s and a new one "
                            "is started", self.path, err, aside)

    def _tell(self, what: str, err: Exception) -> None:
        if what not in self._told:
            self._told.add(what)
            log.warning("sqlweave's cache %s could not be %s (%s); answers are given without it. Check the free "
                        "space and permissions there, or remove the file.", self.path, what, err)


#: SQLite's result codes of a file that is no database it can read: SQLITE_CORRUPT, SQLITE_NOTADB.
_NOT_A_DATABASE = (11, 26)


def not_a_database(err: BaseException | None) -> bool:
    """Does SQLite's error (or a driver's wrapping of it) say, by its result code, that the file is no database it
    can read (overwritten, cut short, encrypted), which no retry mends?

    >>> import sqlite3, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.sqlite"
    >>> _ = path.write_bytes(b"no database" * 400)
    >>> try:
    ...     sqlite3.connect(path).execute("SELECT 1 FROM sqlite_master")
    ... except sqlite3.Error as err:
    ...     not_a_database(err)
    True
    >>> not_a_database(sqlite3.OperationalError("file is not a database"))  # the words alone, no code: no
    False
    """
    seen = 0
    while err is not None and seen < 8:
        code = getattr(err, "sqlite_errorcode", None)
        if isinstance(code, int):
            return code & 0xFF in _NOT_A_DATABASE
        err = getattr(err, "orig", None) or err.__cause__
        seen += 1
    return False


__all__ = ["CacheFile", "append_jsonl", "not_a_database", "private_folder", "write_atomically"]
