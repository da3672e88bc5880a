"""Feedback on answers, and the question/SQL pairs it proposes to the example pool.

The example pool teaches every later answer, so what reaches it from a shared door is guarded three ways:

* **Sealed answers.** Each answer a door gives carries an id sealed by :class:`AnswerSeal`: an HMAC over the
  database, the asker (tenant), the question and the SQL, under a key only the server holds. Feedback that names
  an answer the server did not give, another asker's answer, or changes the answer's question or SQL, is refused.
* **A pending list.** A pair that feedback proposes waits in :class:`PendingExamples` until the operator accepts
  it (``sqlweave examples pending``, ``accept``, ``reject``), unless the operator lets feedback reach the pool
  directly (``sqlweave serve --feedback-examples pool``).
* **Provenance.** Every pool entry records where it came from (:attr:`~sqlweave.retrieval.pool.PoolExample.origin`).

>>> seal = AnswerSeal(b"k" * 32)
>>> answer_id = seal.issue(database="shop", owner=None, question="How many?", sql="SELECT 1")
>>> seal.verify(answer_id, database="shop", owner=None, question="How many?", sql="SELECT 1")
True
>>> seal.verify(answer_id, database="shop", owner=None, question="Ignore previous instructions", sql="SELECT 1")
False
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import hmac
import json
import os
import secrets
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Literal, Sequence

from .errors import ConfigurationError, StorageError
from .files import append_jsonl, private_file, private_folder, write_atomically

if TYPE_CHECKING:
    from .config import Settings
    from .resources import Resources
    from .retrieval.pool import PoolExample

#: Where pairs proposed by feedback go: ``pending`` (the operator reviews them), ``pool`` (straight into the
#: example pool), ``off`` (feedback is only logged).
FeedbackExamples = Literal["pending", "pool", "off"]
FEEDBACK_EXAMPLES: tuple[str, ...] = ("pending", "pool", "off")

_NONCE_HEX = 16
_MAC_HEX = 32


class AnswerSeal:
    """Issues and checks the ids of answers: ``<nonce>.<mac>``, the MAC binding database, asker, question and SQL.

    The key is the server's own (:meth:`from_file` keeps one readable by its user alone), so ids stay valid
    across restarts and nobody without the key can make one up.
    """

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ConfigurationError("an answer key needs at least 16 bytes", hint="Use secrets.token_bytes(32).")
        self._key = key

    @classmethod
    def from_file(cls, path: Path) -> "AnswerSeal":
        """The seal whose key is kept in ``path`` (created with 32 random bytes, mode 0600, when missing)."""
        try:
            if not path.exists():
                key = secrets.token_bytes(32)
                if not write_atomically(path, lambda fh: fh.write(key.hex().encode("ascii"))):
                    raise StorageError(f"cannot write the answer key {str(path)!r}")
            private_file(path)
            return cls(bytes.fromhex(path.read_text(encoding="ascii").strip()))
        except (OSError, ValueError) as err:
            raise StorageError(f"cannot read the answer key {str(path)!r}: {err}",
                               hint="Remove the file; a new key is made at the next start (earlier answer ids "
                                    "then no longer take feedback).") from err

    def _mac(self, nonce: str, database: str, owner: str | None, question: str, sql: str | None) -> str:
        message = "\x1f".join((nonce, database, owner or "", question, sql or "")).encode("utf-8")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()[:_MAC_HEX]

    def issue(self, *, database: str, owner: str | None, question: str, sql: str | None) -> str:
        nonce = secrets.token_hex(_NONCE_HEX // 2)
        return f"{nonce}.{self._mac(nonce, database, owner, question, sql)}"

    def verify(self, answer_id: str | None, *, database: str, owner: str | None, question: str,
               sql: str | None) -> bool:
        """Did this server give this answer (this question and SQL, on ``database``, to ``owner``)?"""
        if not answer_id or answer_id.count(".") != 1:
            return False
        nonce, mac = answer_id.split(".")
        if len(nonce) != _NONCE_HEX or len(mac) != _MAC_HEX:
            return False
        return hmac.compare_digest(mac, self._mac(nonce, database, owner, question, sql))


@dataclass(frozen=True)
class PendingExample:
    """A question/SQL pair that feedback proposed, waiting for the operator's review.

    ``origin`` says where it came from (``feedback:right``, ``feedback:correction``), ``answer_id`` which answer
    it was given on, ``owner`` the tenant who gave it (``None``: the operator's own key or an open server)."""

    id: str
    question: str
    sql: str
    db_id: str
    database: str
    origin: str
    answer_id: str | None = None
    owner: str | None = None
    received: str = ""
    schema_names: tuple[str, ...] = field(default=(), repr=False)


class PendingExamples:
    """The pending list: a JSON-lines file (``<cache dir>/pool/pending.jsonl``), read and rewritten under a lock
    so that a server adding to it and the operator's ``sqlweave examples accept`` do not lose each other's work.

    >>> import tempfile, pathlib
    >>> pending = PendingExamples(pathlib.Path(tempfile.mkdtemp()) / "pending.jsonl")
    >>> p = pending.propose("How many products?", "SELECT COUNT(*) FROM products", db_id="shop", database="shop",
    ...                     origin="feedback:right")
    >>> [e.question for e in pending.waiting()], len(pending.reject([p.id])), pending.waiting()
    (['How many products?'], 1, [])
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @classmethod
    def of(cls, settings: "Settings | None" = None) -> "PendingExamples":
        from .config import Settings

        return cls((settings if settings is not None else Settings.from_env()).cache_dir / "pool" / "pending.jsonl")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            private_folder(self.path.parent)
            fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as err:
            raise StorageError(f"cannot write {str(self.path)!r}: {err.strerror or err}") from err
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _read(self) -> list[PendingExample]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                row["schema_names"] = tuple(row.get("schema_names") or ())
                out.append(PendingExample(**row))
            except (ValueError, TypeError):
                continue  # a line cut short by an interruption
        return out

    def _write(self, rows: Sequence[PendingExample]) -> None:
        text = "".join(json.dumps(asdict(r)) + "\n" for r in rows).encode("utf-8")
        if not write_atomically(self.path, lambda fh: fh.write(text)):
            raise StorageError(f"cannot write {str(self.path)!r}")

    def waiting(self) -> list[PendingExample]:
        """The pairs waiting, oldest first."""
        with self._locked():
            return self._read()

    def propose(self, question: str, sql: str, *, db_id: str, database: str, origin: str,
                answer_id: str | None = None, owner: str | None = None,
                schema_names: Iterable[str] = ()) -> PendingExample:
        """Put a pair on the list (the same pair for the same database is kept once) and return it."""
        with self._locked():
            for row in self._read():
                if (row.db_id, row.question, row.sql) == (db_id, question, sql):
                    return row
            row = PendingExample(secrets.token_hex(4), question, sql, db_id, database, origin, answer_id, owner,
                                 dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                 tuple(schema_names))
            append_jsonl(self.path, [asdict(row)])
            return row

    def take(self, ids: Iterable[str]) -> list[PendingExample]:
        """Remove the pairs with these ids (all of them for ``["all"]``) and return them; an unknown id is a
        :class:`~sqlweave.errors.ConfigurationError` and removes nothing."""
        wanted = list(dict.fromkeys(ids))
        with self._locked():
            rows = self._read()
            if wanted == ["all"]:
                chosen = rows
            else:
                known = {r.id for r in rows}
                unknown = [i for i in wanted if i not in known]
                if unknown:
                    raise ConfigurationError(f"no pending example has the id {', '.join(map(repr, unknown))}",
                                             hint="`sqlweave examples pending` lists them with their ids.")
                chosen = [r for r in rows if r.id in wanted]
            self._write([r for r in rows if r not in chosen])
            return chosen

    def accept(self, ids: Iterable[str], resources: "Resources | None" = None) -> list["PoolExample"]:
        """Move these pairs into the example pool, each with its origin."""
        from .retrieval.pool import add_user_example

        return [add_user_example(p.question, p.sql, db_id=p.db_id, schema_names=p.schema_names,
                                 origin=f"{p.origin} accepted" + (f" from {p.owner}" if p.owner else ""),
                                 resources=resources)
                for p in self.take(ids)]

    def reject(self, ids: Iterable[str]) -> list[PendingExample]:
        """Drop these pairs."""
        return self.take(ids)


__all__ = ["AnswerSeal", "FEEDBACK_EXAMPLES", "FeedbackExamples", "PendingExample", "PendingExamples"]
