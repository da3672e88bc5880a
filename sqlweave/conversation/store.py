"""The conversation store: conversations and their turns in two tables of any SQLAlchemy database.

Whether a failure of the store's database is worth another attempt is read from the driver's code (SQLite's
extended result code, PostgreSQL's SQLSTATE, MySQL's error number: :mod:`sqlweave.conversation.failures`),
never from its message.

>>> import tempfile
>>> store = ConversationStore(f"sqlite:///{tempfile.mkdtemp()}/c.sqlite")
>>> store.create("shop").turn_count
0
"""

from __future__ import annotations

import json
import random
import time
import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError, OperationalError

from ..config import cache_dir
from ..errors import ConfigurationError, ConversationNotFoundError, MissingDependencyError, SqlweaveError
from ..files import new_private_file, private_folder
from ..pipeline import Answer, PriorTurn
from .failures import is_transient, mended_by_retry, not_a_database
from .records import ConversationRecord, Turn, make_title, now_stamp, stored_answer

#: How many earlier turns with SQL a new question's prompt shows by default.
DEFAULT_MAX_HISTORY = 4

_ATTEMPTS = 40


class ConversationStoreError(SqlweaveError):
    """The conversation store could not be read or written (server down, disk full, locked for too long)."""

    code = "conversation_store"
    http_status = 503  # the store's database is down or locked: worth retrying
    retryable = True
    default_hint = "Check that the conversation store's database is reachable and writable, then retry."


_metadata = sa.MetaData()

conversations_table = sa.Table(
    "conversations", _metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("database", sa.String(255), nullable=False),
    sa.Column("title", sa.String(255), nullable=False, default=""),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("updated_at", sa.String(40), nullable=False),
    # Who may see it (a server's API-key name); NULL: anyone using the store without an owner.
    sa.Column("owner", sa.String(128)),
    sa.Index("ix_conversations_database_updated", "database", "updated_at"),
)

turns_table = sa.Table(
    "turns", _metadata,
    sa.Column("conversation_id", sa.String(32), sa.ForeignKey("conversations.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("number", sa.Integer, nullable=False),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("sql", sa.Text),
    sa.Column("ok", sa.Boolean, nullable=False),
    sa.Column("error_code", sa.String(64)),
    sa.Column("error_message", sa.Text),
    sa.Column("builds_on", sa.Integer),
    sa.Column("row_count", sa.Integer),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("answer", sa.Text, nullable=False),
    # Two writers that pick the same number for one conversation cannot both commit: the loser retries.
    sa.PrimaryKeyConstraint("conversation_id", "number", name="pk_turns"),
)


def default_store_url() -> str:
    """``sqlite:///<cache dir>/conversations.sqlite``."""
    return f"sqlite:///{cache_dir() / 'conversations.sqlite'}"


class ConversationStore:
    """Conversations and their turns in two tables (``conversations``, ``turns``) of any SQLAlchemy database.

    ``url`` defaults to a SQLite file in the cache directory (:func:`default_store_url`); a server URL such as
    ``postgresql+psycopg://user@host/db`` lets several processes share one store. SQLite runs in WAL mode with a
    busy timeout, and every write takes the write lock when it begins, so concurrent writers wait instead of
    failing. Turn numbers are assigned inside the transaction that inserts the turn; a clash on the unique
    ``(conversation_id, number)`` key is retried, so concurrent appends never lose a turn. Safe to share between
    threads.

    >>> import tempfile
    >>> store = ConversationStore(f"sqlite:///{tempfile.mkdtemp()}/c.sqlite")
    >>> rec = store.create("shop")
    >>> (len(rec.id), rec.database, rec.turn_count)
    (32, 'shop', 0)
    >>> [r.id for r in store.list("shop")] == [rec.id]
    True
    >>> try:
    ...     store.get("0" * 32)
    ... except ConversationNotFoundError as err:
    ...     print(err.code)
    conversation_not_found
    """

    def __init__(self, url: str | Path | None = None, *, busy_timeout_s: float = 30.0) -> None:
        text = str(url) if url is not None else default_store_url()
        if "://" not in text:  # a plain file path
            text = f"sqlite:///{Path(text).expanduser()}"
        self.url = text
        try:
            parsed = sa.engine.make_url(text)
        except ArgumentError as err:
            raise ConfigurationError(f"not a database URL for the conversation store: {text!r}",
                                     hint="Use a SQLAlchemy URL, e.g. sqlite:///conversations.sqlite or "
                                          "postgresql+psycopg://user@host/db.") from err
        self._sqlite = parsed.get_backend_name() == "sqlite"
        try:
            if self._sqlite:
                if not parsed.database or parsed.database == ":memory:":
                    raise ConfigurationError("the conversation store needs a file, not an in-memory SQLite database",
                                             hint="Pass sqlite:///path/to/conversations.sqlite.")
                try:
                    private_folder(Path(parsed.database).expanduser().parent)
                    new_private_file(Path(parsed.database).expanduser())  # its WAL files take its mode
                except OSError as err:
                    raise ConversationStoreError(
                        f"the conversation store's folder cannot be made: {err.strerror or err}",
                        hint="Pass a writable place (--conversations sqlite:///path/conversations.sqlite, or a "
                             "PostgreSQL URL), or set SQLWEAVE_CACHE_DIR to a folder you can write.") from err
                self._engine = sa.create_engine(
                    parsed, connect_args={"timeout": busy_timeout_s, "check_same_thread": False})
                self._setup_sqlite(busy_timeout_s)
            else:
                from ..db.backends.postgres import libpq_limits  # a store that does not answer is an error in seconds

                self._engine = sa.create_engine(parsed, pool_pre_ping=True,
                                                connect_args=libpq_limits(parsed, busy_timeout_s))
        except NoSuchModuleError as err:
            raise ConfigurationError(f"unknown database kind in {parsed.render_as_string()!r}",
                                     hint="Use sqlite:/// or postgresql+psycopg:// URLs.") from err
        except ModuleNotFoundError as err:
            raise MissingDependencyError(f"the driver for the conversation store is not installed: {err.name}",
                                         hint="Install it, e.g. pip install 'sqlweave[postgres]'.") from err
        self._create_tables()

    def _setup_sqlite(self, busy_timeout_s: float) -> None:
        ms = int(busy_timeout_s * 1000)

        @event.listens_for(self._engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout = {ms}")
            cur.execute("PRAGMA journal_mode = WAL")
            cur.execute("PRAGMA foreign_keys = ON")
            cur.close()

        @event.listens_for(self._engine, "begin")
        def _on_begin(conn: sa.Connection) -> None:
            # Writers take the write lock at once: a transaction that read first and then wants to write could
            # otherwise fail with "database is locked" when another writer got there in between.
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN")

    def _create_tables(self) -> None:
        for attempt in range(_ATTEMPTS):
            try:
                with self._write() as conn:
                    _metadata.create_all(conn, checkfirst=True)
                    # Stores made before conversations had owners gain the column (NULL: no owner).
                    if "owner" not in {c["name"] for c in sa.inspect(conn).get_columns("conversations")}:
                        conn.execute(sa.text("ALTER TABLE conversations ADD COLUMN owner VARCHAR(128)"))
                return
            except DBAPIError as err:
                # Another process creating them at the same moment, or holding the lock, is waited for; no retry
                # mends a file that is not a database, a refused login or a server that is not there.
                if not mended_by_retry(err) or attempt + 1 == _ATTEMPTS:
                    raise self._store_error(err) from err
                self._backoff(attempt)

    def _write(self):  # noqa: ANN202 - a context manager yielding a Connection in a write transaction
        return self._engine.execution_options(write=True).begin()

    def _read(self):  # noqa: ANN202
        return self._engine.connect()

    @staticmethod
    def _backoff(attempt: int) -> None:
        time.sleep(min(0.5, 0.005 * (2 ** min(attempt, 7))) * (0.5 + random.random()))

    def _store_error(self, err: Exception) -> ConversationStoreError:
        msg = str(getattr(err, "orig", None) or err).splitlines()[0]
        hint = None
        if self._sqlite and not_a_database(err):
            # no path here: a server's clients see the hint (the operator finds the file in the configuration)
            hint = ("The store's file is not a readable SQLite database: move it away (a new store is started in its "
                    "place) or pass another file with --conversations.")
        return ConversationStoreError(f"the conversation store failed: {msg}", hint=hint,
                                      url=self._engine.url.render_as_string())

    # --- conversations -------------------------------------------------------------------------------------

    def create(self, database: str, title: str = "", *, owner: str | None = None) -> ConversationRecord:
        """Start an empty conversation about ``database`` (a name the caller chooses: the file, the catalog entry).
        Without a ``title``, the first question becomes it. ``owner`` (e.g. an API key's name) is who may see it:
        :meth:`get`, :meth:`list` and :meth:`delete` given an owner see only that owner's conversations."""
        now = now_stamp()
        rec = ConversationRecord(uuid.uuid4().hex, database, make_title(title) if title else "", now, now,
                                 owner=owner)
        try:
            with self._write() as conn:
                conn.execute(sa.insert(conversations_table).values(
                    id=rec.id, database=rec.database, title=rec.title, created_at=now, updated_at=now, owner=owner))
        except DBAPIError as err:
            raise self._store_error(err) from err
        return rec

    def get(self, id: str, *, owner: str | None = None) -> ConversationRecord:
        """The conversation with all its turns; :class:`ConversationNotFoundError` if there is none (or, given an
        ``owner``, if it is someone else's: the same error, so its existence is not told)."""
        try:
            with self._read() as conn:
                row = conn.execute(sa.select(conversations_table).where(conversations_table.c.id == id)).first()
                if row is None or (owner is not None and row.owner != owner):
                    raise _not_found(id)
                turns = tuple(_turn(r) for r in conn.execute(
                    sa.select(turns_table).where(turns_table.c.conversation_id == id)
                    .order_by(turns_table.c.number)))
        except DBAPIError as err:
            raise self._store_error(err) from err
        return ConversationRecord(row.id, row.database, row.title, row.created_at, row.updated_at, turns, len(turns),
                                  row.owner)

    def list(self, database: str | None = None, limit: int = 50, *, owner: str | None = None) -> list[ConversationRecord]:
        """Conversations, most recently active first (optionally only those about ``database``, or ``owner``'s),
        without their turns; ``turn_count`` says how many each has."""
        c, t = conversations_table.c, turns_table.c
        count = (sa.select(t.conversation_id, sa.func.count().label("n"))
                 .group_by(t.conversation_id).subquery())
        query = (sa.select(conversations_table, sa.func.coalesce(count.c.n, 0).label("turn_count"))
                 .outerjoin(count, count.c.conversation_id == c.id)
                 .order_by(c.updated_at.desc(), c.created_at.desc(), c.id).limit(max(0, int(limit))))
        if database is not None:
            query = query.where(c.database == database)
        if owner is not None:
            query = query.where(c.owner == owner)
        try:
            with self._read() as conn:
                rows = conn.execute(query).all()
        except DBAPIError as err:
            raise self._store_error(err) from err
        return [ConversationRecord(r.id, r.database, r.title, r.created_at, r.updated_at, (), int(r.turn_count),
                                   r.owner) for r in rows]

    def delete(self, id: str, *, owner: str | None = None) -> None:
        """Remove the conversation and its turns; :class:`ConversationNotFoundError` if there is none (or, given an
        ``owner``, if it is someone else's)."""
        if owner is not None:
            self.get(id, owner=owner)
        try:
            with self._write() as conn:
                conn.execute(sa.delete(turns_table).where(turns_table.c.conversation_id == id))
                gone = conn.execute(sa.delete(conversations_table).where(conversations_table.c.id == id)).rowcount
                if not gone:
                    raise _not_found(id)
        except DBAPIError as err:
            raise self._store_error(err) from err

    # --- turns ---------------------------------------------------------------------------------------------

    def append(self, id: str, question: str, answer: Answer, builds_on: int | None = None) -> Turn:
        """Store ``answer`` to ``question`` as the conversation's next turn and return it.

        The number is the conversation's highest plus one, chosen in the same transaction as the insert; if
        another writer took it first, the unique key refuses the insert and this one retries with the next.
        """
        c, t = conversations_table.c, turns_table.c
        payload = stored_answer(answer)
        error = answer.error
        result = answer.result
        last: DBAPIError  # the last transient failure, reported when every attempt failed
        for attempt in range(_ATTEMPTS):
            now = now_stamp()
            try:
                with self._write() as conn:
                    # Updating the conversation row first also locks it (PostgreSQL): appends to one
                    # conversation then queue up instead of clashing.
                    found = conn.execute(
                        sa.update(conversations_table).where(c.id == id).values(
                            updated_at=now,
                            title=sa.case((c.title == "", make_title(question)), else_=c.title))).rowcount
                    if not found:
                        raise _not_found(id)
                    number = int(conn.execute(
                        sa.select(sa.func.coalesce(sa.func.max(t.number), 0) + 1).where(t.conversation_id == id)
                    ).scalar_one())
                    turn = Turn(number, question, answer.sql, answer.ok,
                                None if error is None else error.code, None if error is None else error.message,
                                builds_on, None if result is None else result.row_count, now, payload)
                    conn.execute(sa.insert(turns_table).values(
                        conversation_id=id, number=number, question=question, sql=turn.sql, ok=turn.ok,
                        error_code=turn.error_code, error_message=turn.error_message, builds_on=builds_on,
                        row_count=turn.row_count, created_at=now, answer=json.dumps(payload)))
                return turn
            except IntegrityError as err:  # the number was taken meanwhile: take the next one
                last = err
            except OperationalError as err:
                if not is_transient(err):
                    raise self._store_error(err) from err
                last = err
            except DBAPIError as err:
                raise self._store_error(err) from err
            self._backoff(attempt)
        raise self._store_error(last)

    def turns(self, id: str, *, with_sql: bool = False, last: int | None = None) -> tuple[Turn, ...]:
        """The conversation's turns, oldest first: the ``last`` ones only, and only those that produced SQL
        (``ok`` and a query) with ``with_sql``. :class:`ConversationNotFoundError` if there is none."""
        t = turns_table.c
        query = sa.select(turns_table).where(t.conversation_id == id)
        if with_sql:
            query = query.where(t.ok == sa.true(), t.sql.is_not(None))
        query = query.order_by(t.number.desc())
        if last is not None:
            query = query.limit(max(0, int(last)))
        try:
            with self._read() as conn:
                rows = conn.execute(query).all()
                if not rows and conn.execute(
                        sa.select(conversations_table.c.id).where(conversations_table.c.id == id)).first() is None:
                    raise _not_found(id)
        except DBAPIError as err:
            raise self._store_error(err) from err
        return tuple(_turn(r) for r in reversed(rows))

    def history(self, id: str, max_turns: int = DEFAULT_MAX_HISTORY) -> tuple[PriorTurn, ...]:
        """The last ``max_turns`` turns that produced SQL, oldest first, as generation prompts show them."""
        return tuple(turn.prior() for turn in self.turns(id, with_sql=True, last=max_turns))

    def close(self) -> None:
        """Close the store's connections (it reopens them if used again)."""
        self._engine.dispose()

    def __repr__(self) -> str:
        return f"ConversationStore({self._engine.url.render_as_string()!r})"


def _not_found(id: str) -> ConversationNotFoundError:
    return ConversationNotFoundError(f"no conversation with id {id!r}", conversation_id=id)


def _turn(row: Any) -> Turn:
    try:
        answer = json.loads(row.answer) if row.answer else {}
    except ValueError:
        answer = {}
    return Turn(int(row.number), row.question, row.sql, bool(row.ok), row.error_code, row.error_message,
                row.builds_on, row.row_count, row.created_at, answer)

