"""Conversations: follow-up questions that build on earlier turns ("only those born after 1980", "sort that").

A :class:`Conversation` keeps the turns of one dialogue with a database in a :class:`ConversationStore`
(a SQLite file in the cache directory by default, or any SQLAlchemy URL that several processes share).
Each follow-up is first restated by the model as a question that stands on its own ("How many are there?" ->
"How many customers are from Canada?"), then answered with the earlier questions and their SQL in the prompt.
The answer's ``builds_on`` says which earlier turn it continues: the one whose SQL is most like the new SQL
(same tables, kept filters, similar syntax tree), or ``None`` when the question stands on its own. A failed
turn is kept in the store, but its SQL never reaches a later prompt.

>>> import tempfile
>>> import sqlweave
>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.db.demo import demo_database_path
>>> llm = FakeLLM(["SELECT first_name FROM customers WHERE country = 'Canada'",
...                "How many customers are from Canada?",                    # the follow-up, restated
...                "SELECT count(*) FROM customers WHERE country = 'Canada'"])
>>> engine = sqlweave.connect(demo_database_path(), llm=llm)
>>> store = ConversationStore(f"sqlite:///{tempfile.mkdtemp()}/conversations.sqlite")
>>> chat = engine.conversation(store=store)
>>> chat.ask("Which customers are from Canada?").builds_on is None
True
>>> answer = chat.ask("How many are there?")
>>> answer.builds_on, answer.result.rows[0][0] > 0, answer.restated
(1, True, 'How many customers are from Canada?')
>>> prompt = llm.calls[-1][0][-1].content     # the generation prompt: turn 1, then the restated question
>>> "Which customers are from Canada?" in prompt and prompt.endswith("Question: How many customers are from Canada?")
True
>>> [(t.number, t.question, t.builds_on) for t in chat.turns]
[(1, 'Which customers are from Canada?', None), (2, 'How many are there?', 1)]
>>> engine.conversation(chat.id, store=store).history()[0].sql   # resumed by id, e.g. in another process
"SELECT first_name FROM customers WHERE country = 'Canada'"
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import sqlalchemy as sa
from sqlalchemy import event
from sqlglot import exp
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError, OperationalError

from .config import cache_dir
from .errors import (
    ConfigurationError,
    ConversationMismatchError,
    ConversationNotFoundError,
    MissingDependencyError,
    SqlweaveError,
)
from .files import new_private_file, not_a_database, private_folder
from .llm.base import LLM, GenerationOptions, Message
from .pipeline import (Answer, ModelCall, Pipeline, PriorTurn, SampleCallback, StageCallback, StartCallback,
                       TraceEntry)
from .stages.restate import REWRITE_SYSTEM, parse_rewrite, rewrite_prompt

if TYPE_CHECKING:
    from .engine import Engine

#: How many earlier turns with SQL a new question's prompt shows by default.
DEFAULT_MAX_HISTORY = 4

#: A new answer builds on an earlier turn when their SQL scores at least this (see :func:`continuation_score`).
BUILDS_ON_THRESHOLD = 0.5

#: Titles are the first question, cut to about this many characters.
TITLE_CHARS = 80

#: Result rows kept per stored turn (the query itself is capped by the database's ``max_rows``).
STORED_ROWS = 200

_ATTEMPTS = 40


class ConversationStoreError(SqlweaveError):
    """The conversation store could not be read or written (server down, disk full, locked for too long)."""

    code = "conversation_store"
    retryable = True
    default_hint = "Check that the conversation store's database is reachable and writable, then retry."


# --- records -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One question of a conversation and what came of it.

    ``number`` counts from 1; ``builds_on`` is the number of the earlier turn the answer continues (``None``:
    it stands alone); ``answer`` is :meth:`Answer.as_dict <sqlweave.pipeline.Answer.as_dict>` without the prompts
    (each stage's name, seconds, error and SQL are kept under ``stages``; at most :data:`STORED_ROWS` rows).
    """

    number: int
    question: str
    sql: str | None
    ok: bool
    error_code: str | None
    error_message: str | None
    builds_on: int | None
    row_count: int | None
    created_at: str
    answer: dict[str, Any] = field(default_factory=dict, compare=False)

    def prior(self) -> PriorTurn:
        """The turn as later prompts show it."""
        return PriorTurn(self.question, self.sql)

    def as_dict(self) -> dict[str, Any]:
        return {"number": self.number, "question": self.question, "sql": self.sql, "ok": self.ok,
                "error_code": self.error_code, "error_message": self.error_message, "builds_on": self.builds_on,
                "row_count": self.row_count, "created_at": self.created_at, "answer": self.answer}


@dataclass(frozen=True)
class ConversationRecord:
    """A stored conversation. ``turns`` is empty in :meth:`ConversationStore.list` (``turn_count`` says how many)."""

    id: str
    database: str
    title: str
    created_at: str
    updated_at: str
    turns: tuple[Turn, ...] = ()
    turn_count: int = 0
    owner: str | None = None

    def as_dict(self, *, turns: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "database": self.database, "title": self.title,
                             "created_at": self.created_at, "updated_at": self.updated_at,
                             "turn_count": self.turn_count}
        if turns:
            d["turns"] = [t.as_dict() for t in self.turns]
        return d


def make_title(question: str, limit: int = TITLE_CHARS) -> str:
    """The conversation title a first question gives: one line, cut at a word to about ``limit`` characters.

    >>> make_title("Which singers are from France?")
    'Which singers are from France?'
    >>> make_title("word " * 30)
    'word word word word word word word word word word word word word word word…'
    """
    text = " ".join(question.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2:]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip() + "…"


_clock_lock = threading.Lock()
_last_time = datetime.min.replace(tzinfo=timezone.utc)


def _now() -> str:
    """ISO 8601 UTC time with microseconds, strictly increasing within this process (stable ordering)."""
    global _last_time
    with _clock_lock:
        now = datetime.now(timezone.utc)
        if now <= _last_time:
            now = _last_time + timedelta(microseconds=1)
        _last_time = now
    return now.isoformat(timespec="microseconds")


def stored_answer(answer: Answer, max_rows: int = STORED_ROWS) -> dict[str, Any]:
    """``answer.as_dict()`` made small enough to store with every turn: no prompts, at most ``max_rows`` rows."""
    d = answer.as_dict()
    d["stages"] = [{"stage": e["stage"], "seconds": e["seconds"], "error": e["error"], "sql": e["sql"]}
                   for e in d.pop("trace")]
    rewrite = next((e for e in answer.trace if e.stage == "rewrite_question"), None)
    if rewrite is not None and rewrite.notes.get("rewritten"):
        d["rewritten_question"] = rewrite.notes["rewritten"]
    if len(d["rows"]) > max_rows:
        d["rows"] = d["rows"][:max_rows]
        d["rows_stored"] = max_rows
    return json.loads(json.dumps(d, default=str))


# --- the store ---------------------------------------------------------------------------------------------

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


def _is_transient(err: DBAPIError) -> bool:
    text = str(err.orig if err.orig is not None else err).lower()
    return any(s in text for s in ("locked", "busy", "deadlock", "serialization", "could not serialize"))


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
                from .db.backends.postgres import libpq_limits  # a store that does not answer is an error in seconds

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
            except DBAPIError as err:  # another process created them at the same moment
                lasting = not_a_database(err) or any(s in str(err).lower() for s in ("password", "permission denied"))
                if lasting or attempt + 1 == _ATTEMPTS:  # no retry mends a file that is not a database
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
        now = _now()
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
            now = _now()
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
                if not _is_transient(err):
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


# --- which earlier turn an answer continues ----------------------------------------------------------------


def continuation_score(sql: str, earlier: str, dialect: str | None = "sqlite") -> float:
    """How much ``sql`` looks like a continuation of ``earlier``, in [0, 1].

    0 when the queries share no table (or one does not parse). Otherwise the larger of

    - the share of ``earlier``'s filter conditions (WHERE and HAVING comparisons, values included) that ``sql``
      keeps: "only those older than 30" after "singers from France" keeps ``country = 'France'``;
    - the mean of the AST similarity (:func:`~sqlweave.sql.similarity.ast_similarity`) of the two normalised
      queries, table and column names kept, values masked, and the Jaccard overlap of the tables and columns
      they name: "sort that by name" or "which one has the most?" keep most of the tree and its names.

    On the follow-up set (``benchmarks/data/conversations-spider.json``) the gold SQL of 93% of the follow-ups
    scores at least :data:`BUILDS_ON_THRESHOLD` against the turn before it, against 3% of pairs from different
    conversations on the same database.

    >>> continuation_score("SELECT avg(Age) FROM singer WHERE Country = 'France'",
    ...                    "SELECT Name FROM singer WHERE Country = 'France'")
    1.0
    >>> round(continuation_score("SELECT avg(Age) FROM singer", "SELECT Name FROM singer WHERE Country = 'France'"), 2)
    0.28
    >>> continuation_score("SELECT count(*) FROM concert", "SELECT Name FROM singer WHERE Country = 'France'")
    0.0
    """
    from .sql.normalize import normalize_ast
    from .sql.similarity import ast_similarity
    from .sql.skeleton import sql_entities

    try:
        new, old = (normalize_ast(q, dialect, mask_identifiers=False, mask_values=False) for q in (sql, earlier))
    except SqlweaveError:
        return 0.0
    (new_tables, new_columns), (old_tables, old_columns) = sql_entities(new), sql_entities(old)
    if not new_tables & old_tables:
        return 0.0
    old_filters = _filters(old)
    kept = len(old_filters & _filters(new)) / len(old_filters) if old_filters else 0.0
    names_new = {("t", t) for t in new_tables} | {("c", c) for c in new_columns}
    names_old = {("t", t) for t in old_tables} | {("c", c) for c in old_columns}
    overlap = len(names_new & names_old) / len(names_new | names_old)
    masked = [q.transform(lambda n: exp.Placeholder() if isinstance(n, exp.Literal) else n) for q in (new, old)]
    return max(kept, (ast_similarity(masked[0], masked[1], dialect) + overlap) / 2)


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike, exp.In, exp.Between, exp.Is)


def _filters(tree: exp.Expression) -> set[str]:
    """The comparisons of a normalised query's WHERE and HAVING clauses as text, columns without their table."""
    out = set()
    for clause in tree.find_all(exp.Where, exp.Having):
        for cond in clause.find_all(*_COMPARISONS):
            cond = cond.copy()
            for col in cond.find_all(exp.Column):
                col.set("table", None)
            out.add(cond.sql())
    return out


def builds_on(sql: str | None, earlier: Sequence[Turn], dialect: str | None = "sqlite",
              threshold: float = BUILDS_ON_THRESHOLD) -> int | None:
    """The number of the turn in ``earlier`` that ``sql`` continues: the one with the highest
    :func:`continuation_score` (the most recent on a tie) if it reaches ``threshold``, else ``None``.
    Turns without SQL or that failed never count.

    >>> t = Turn(1, "Which singers are French?", "SELECT Name FROM singer WHERE Country = 'France'", True,
    ...          None, None, None, 4, "2024-01-01T00:00:00+00:00")
    >>> builds_on("SELECT Name FROM singer WHERE Country = 'France' AND Age > 30", [t])
    1
    >>> builds_on("SELECT count(*) FROM stadium", [t]) is None
    True
    """
    if not sql:
        return None
    best, best_score = None, -1.0
    for turn in earlier:
        if not turn.ok or not turn.sql:
            continue
        score = continuation_score(sql, turn.sql, dialect)
        if score >= best_score:
            best, best_score = turn.number, score
    return best if best is not None and best_score >= threshold else None


# --- follow-up questions made standalone ---------------------------------------------------------------------

# --- the conversation ----------------------------------------------------------------------------------------


class Conversation:
    """A dialogue with one engine's database whose questions may follow up on earlier ones.

    Without ``id`` a new conversation is created in ``store`` (default: :class:`ConversationStore` in the cache
    directory) under ``database`` (default: the engine's database name); with ``id`` the stored one is
    continued (:class:`~sqlweave.errors.ConversationNotFoundError` if the store has none). ``max_history``
    earlier turns with SQL go into each prompt; ``threshold`` is the :func:`continuation_score` from which
    an answer counts as building on an earlier turn. With ``rewrite`` (the default), the pipeline first restates a
    follow-up as a standalone question (its :class:`~sqlweave.stages.restate.RestateFollowUp` stage, one short
    extra call, in the trace as ``rewrite_question``: the same stage every door uses) and answers that, with the
    earlier turns still in its prompt; the stored turn and the returned answer keep the user's own wording, and
    ``answer.restated`` holds the standalone question.
    """

    def __init__(self, engine: "Engine", store: ConversationStore | None = None, id: str | None = None,
                 database: str | None = None, *, max_history: int = DEFAULT_MAX_HISTORY,
                 threshold: float = BUILDS_ON_THRESHOLD, rewrite: bool = True, owner: str | None = None,
                 lazy: bool = False) -> None:
        self.engine = engine
        self.store = store if store is not None else ConversationStore()
        self.max_history = max_history
        self.threshold = threshold
        self.rewrite = rewrite
        self.owner = owner
        self.id: str | None = None
        self.database: str = database or engine.db.name
        if id is None:
            if not lazy:  # lazy: made with its first turn (a refused or abandoned question leaves none behind)
                self.id = str(self.store.create(self.database, owner=owner).id)
        else:
            record = self.store.get(id, owner=owner)  # another owner's is not found
            if database is not None and database != record.database:
                raise ConversationMismatchError(
                    f"conversation {id!r} is about database {record.database!r}, not {database!r}",
                    hint="Continue it with the database it was started on, or start a new conversation.")
            self.id, self.database = str(record.id), record.database

    @property
    def record(self) -> ConversationRecord:
        """The stored conversation, turns included (read from the store)."""
        if self.id is None:
            raise ConversationNotFoundError("this conversation has no turn yet", hint="Ask a question first.")
        return self.store.get(self.id, owner=self.owner)

    @property
    def turns(self) -> tuple[Turn, ...]:
        """Every turn so far, oldest first (failed ones included)."""
        return self.record.turns

    @property
    def title(self) -> str:
        return self.record.title

    def history(self) -> tuple[PriorTurn, ...]:
        """What the next question's prompt will show: the last ``max_history`` turns that produced SQL."""
        return tuple(t.prior() for t in self.earlier())

    def earlier(self) -> tuple[Turn, ...]:
        """The turns with SQL that the next question's prompt shows (oldest first)."""
        if self.id is None or self.max_history <= 0:
            return ()
        return self.store.turns(self.id, with_sql=True, last=self.max_history)

    def answer(self, question: str, earlier: Sequence[Turn] = (), *, pipeline: Pipeline | None = None,
               **options: Any) -> Answer:
        """Answer ``question`` after the ``earlier`` turns (:meth:`earlier`), storing nothing: the model's part of
        :meth:`run`, which a door runs in its model worker. ``options`` are :meth:`Engine.run
        <sqlweave.engine.Engine.run>`'s."""
        pipe = pipeline or self.engine.pipeline
        if pipe.restate_follow_ups != self.rewrite:
            pipe = replace(pipe, restate_follow_ups=self.rewrite)
        return self.engine.run(question, history=[t.prior() for t in earlier], pipeline=pipe, **options)

    def keep(self, question: str, answer: Answer, earlier: Sequence[Turn] = ()) -> tuple[Answer, Turn]:
        """Store ``answer`` as the next turn (creating the conversation first if it has none yet) and return it with
        its ``builds_on`` set (which of the ``earlier`` turns it continues), and the stored turn."""
        continues = None
        if answer.ok and earlier:
            try:
                continues = builds_on(answer.sql, earlier, self.engine.db.dialect, self.threshold)
            except Exception:  # noqa: BLE001 - a failed guess must not lose the turn
                continues = None
        answer = replace(answer, builds_on=continues)
        if self.id is None:
            self.id = str(self.store.create(self.database, owner=self.owner).id)
        return answer, self.store.append(self.id, question, answer, continues)

    def run(self, question: str, *, on_stage: StageCallback | None = None,
            pipeline: Pipeline | None = None, min_confidence: float | None = None,
            budget_s: float | None = None, on_start: StartCallback | None = None,
            on_sample: SampleCallback | None = None) -> Answer:
        """Answer ``question`` in the context of the earlier turns, store it as the next turn, and return it
        (a failed answer too, with its ``error``). ``builds_on`` is set on the returned answer; ``min_confidence``
        and ``budget_s`` are as in :meth:`Engine.ask <sqlweave.engine.Engine.ask>`. The one flow of every door:
        :meth:`earlier`, :meth:`answer`, :meth:`keep`."""
        earlier = self.earlier()
        answer = self.answer(question, earlier, on_stage=on_stage, pipeline=pipeline, min_confidence=min_confidence,
                             budget_s=budget_s, on_start=on_start, on_sample=on_sample)
        return self.keep(question, answer, earlier)[0]

    def ask(self, question: str, *, on_stage: StageCallback | None = None,
            pipeline: Pipeline | None = None, min_confidence: float | None = None,
            budget_s: float | None = None) -> Answer:
        """Like :meth:`run`, but raise the typed error when no result came out (as :meth:`Engine.ask
        <sqlweave.engine.Engine.ask>` does); the failed turn is stored all the same."""
        return self.run(question, on_stage=on_stage, pipeline=pipeline, min_confidence=min_confidence,
                        budget_s=budget_s).raise_for_error()

    def __repr__(self) -> str:
        return f"Conversation(id={self.id!r}, database={self.database!r})"


__all__ = [
    "BUILDS_ON_THRESHOLD", "Conversation", "ConversationMismatchError", "ConversationRecord", "ConversationStore",
    "ConversationStoreError",
    "REWRITE_SYSTEM", "Turn", "builds_on", "continuation_score", "default_store_url", "make_title", "parse_rewrite",
    "rewrite_prompt", "stored_answer",
]
