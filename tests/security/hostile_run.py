"""Run the hostile-input corpus (:mod:`tests.security.corpus`): build the corpus database on an engine, run one
case through its door, and report the outcome, whether the database (and its folder) is byte-for-byte unchanged,
and which hidden name or hidden value showed up in any output or prompt.

Used by ``tests/security/test_hostile_corpus.py`` and ``benchmarks/safety/bench_hostile.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sqlweave.database import Database
from sqlweave.engine import Engine
from sqlweave.errors import NoSQLInOutputError, QueryTimeoutError, RefusedStatementError, SQLParseError, SqlweaveError
from sqlweave.llm.base import GenerationOptions, Message
from sqlweave.llm.fake import FakeLLM
from sqlweave.policy import AccessPolicy
from sqlweave.presets import build_pipeline
from tests.hostile import HOSTILE_VALUES

from . import tenants
from .corpus import CELL_PAYLOADS, COMMENT_COLUMNS, COMMENT_PAYLOADS, Case

#: The corpus database's time limit (seconds): a query meant to run for ever is stopped this soon.
TIMEOUT_S = 1.0
#: Words that only hidden values and the other tenant's rows hold: never allowed in any output or prompt.
DATA_MARKERS = ("CANARY", "GLOBEX")

EXTRA_SCHEMA = [
    "CREATE TABLE feedback (id INTEGER PRIMARY KEY, product_id INTEGER, comment TEXT)",
    "CREATE TABLE hostile (id INTEGER PRIMARY KEY, label TEXT, value TEXT)",
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, " + ", ".join(f"{c} TEXT" for c in COMMENT_COLUMNS) + ")",
    *(f"CREATE TABLE note_{i} (id INTEGER PRIMARY KEY, body TEXT)" for i in range(1, len(CELL_PAYLOADS) + 1)),
]


def extra_rows(engine: str) -> dict[str, list[tuple[Any, ...]]]:
    rows: dict[str, list[tuple[Any, ...]]] = {
        "feedback": [(1, 1, "great chess set"), (2, 2, "kite broke quickly")]
        + [(i + 2, 3, value) for i, (value, _, _) in enumerate(CELL_PAYLOADS, 1)],
        "hostile": [(i, label, value) for i, (label, value) in enumerate(HOSTILE_VALUES, 1)
                    if engine not in ("duckdb", "postgres") or "\x00" not in value],
        "notes": [(1, *("x" for _ in COMMENT_COLUMNS))],
    }
    for i, (value, _, _) in enumerate(CELL_PAYLOADS, 1):
        rows[f"note_{i}"] = [(1, value)]
    return rows


def comment_statements() -> list[str]:
    out = [f"COMMENT ON COLUMN notes.{col} IS '{text}'" for col, (text, _, _) in zip(COMMENT_COLUMNS, COMMENT_PAYLOADS)]
    return out + ["COMMENT ON COLUMN users.password_hash IS 'CANARY bcrypt of the password'"]


def knowledge_yaml() -> str:
    """SQLite has no comments: the same instructions as column descriptions of a knowledge file."""
    lines = ["tables:", "  notes:", "    columns:"]
    lines += [f"      {col}: {json.dumps(text)}" for col, (text, _, _) in zip(COMMENT_COLUMNS, COMMENT_PAYLOADS)]
    lines += ["  users:", "    columns:", '      password_hash: "CANARY bcrypt of the password"']
    return "\n".join(lines) + "\n"


def build_file(engine: str, folder: Path) -> Path:
    """The corpus database as a SQLite or DuckDB file in ``folder`` (made for it alone)."""
    folder.mkdir(parents=True, exist_ok=True)
    if engine == "sqlite":
        import sqlite3

        path = tenants.build_sqlite(folder / "corpus.sqlite")
        conn = sqlite3.connect(path)
        for stmt in EXTRA_SCHEMA:
            conn.execute(stmt)
        for table, rows in extra_rows(engine).items():
            conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' for _ in rows[0])})", rows)
        conn.commit()
        conn.close()
        (folder.parent / f"{folder.name}-knowledge.yaml").write_text(knowledge_yaml())
        return path
    import duckdb

    path = tenants.build_duckdb(folder / "corpus.duckdb")
    conn = duckdb.connect(str(path))
    for stmt in EXTRA_SCHEMA + comment_statements():
        if stmt.startswith("CREATE"):
            conn.execute(stmt)
    for table, rows in extra_rows(engine).items():
        conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' for _ in rows[0])})", rows)
    for stmt in comment_statements():
        conn.execute(stmt)
    conn.close()
    return path


def postgres_script(engine: str = "postgres") -> str:
    def lit(v: Any) -> str:
        return str(v) if isinstance(v, int) else "'" + str(v).replace("'", "''") + "'"

    lines = [tenants.postgres_script()] + [s + ";" for s in EXTRA_SCHEMA]
    for table, rows in extra_rows(engine).items():
        lines.append(f"INSERT INTO {table} VALUES " + ", ".join("(" + ", ".join(lit(v) for v in r) + ")" for r in rows)
                     + ";")
    return "\n".join(lines + [s + ";" for s in comment_statements()])


def mysql_statements(engine: str = "mysql") -> list[str]:
    """The corpus database for MySQL and MariaDB, one statement each (the driver runs one per call)."""
    def lit(v: Any) -> str:
        return str(v) if isinstance(v, int) else "'" + str(v).replace("\\", "\\\\").replace("'", "''") + "'"

    out = [stmt.strip() for stmt in tenants.postgres_script().split(";") if stmt.strip()] + list(EXTRA_SCHEMA)
    for table, rows in extra_rows(engine).items():
        out.append(f"INSERT INTO {table} VALUES " + ", ".join("(" + ", ".join(lit(v) for v in r) + ")" for r in rows))
    columns = [("notes", col, text) for col, (text, _, _) in zip(COMMENT_COLUMNS, COMMENT_PAYLOADS)]
    columns.append(("users", "password_hash", "CANARY bcrypt of the password"))
    out += [f"ALTER TABLE {t} MODIFY {c} TEXT COMMENT {lit(text)}" for t, c, text in columns]
    return out


# --- unchanged? ------------------------------------------------------------------------------------------


def folder_state(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with the SHA-256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def postgres_state(url: str) -> Callable[[], str]:
    """A function that digests the PostgreSQL database at ``url`` (as the superuser, on one connection kept
    open): columns, every table's rows, extensions, large objects, roles, functions and the configuration files."""
    import psycopg

    conn = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True)

    def rows(sql: str) -> list[tuple]:
        return conn.execute(sql).fetchall()

    def digest() -> str:
        parts = [repr(rows("SELECT table_name, column_name, data_type FROM information_schema.columns "
                           "WHERE table_schema = 'public' ORDER BY 1, 2"))]
        for (table,) in rows("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                             "ORDER BY 1"):
            parts.append(repr(rows(f'SELECT md5(COALESCE(string_agg(t::text, \'|\' ORDER BY t::text), \'\')) '
                                   f'FROM "{table}" t')))
        for sql in ("SELECT extname FROM pg_extension ORDER BY 1", "SELECT count(*) FROM pg_largeobject_metadata",
                    "SELECT rolname, rolsuper FROM pg_roles ORDER BY 1",
                    "SELECT name, setting FROM pg_file_settings ORDER BY 1, 2",
                    "SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1"):
            parts.append(repr(rows(sql)))
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    return digest


def mysql_state(url: str) -> Callable[[], str]:
    """A function that digests the MySQL or MariaDB database at ``url`` (on one connection kept open): columns,
    every table's rows, the server's users, plugins, functions and the settings an attack would change."""
    import pymysql
    from sqlalchemy.engine import make_url

    u = make_url(url)
    conn = pymysql.connect(host=u.host, port=u.port, user=u.username, database=u.database, autocommit=True,
                           charset="utf8mb4")

    def rows(sql: str) -> list[tuple]:
        with conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def digest() -> str:
        parts = [repr(rows("SELECT table_name, column_name, data_type, column_comment FROM information_schema.columns "
                           "WHERE table_schema = DATABASE() ORDER BY 1, 2"))]
        for (table,) in rows("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() "
                             "ORDER BY 1"):
            parts.append(repr(sorted(rows(f"SELECT * FROM `{table}`"), key=repr)))
        for sql in ("SELECT user, host FROM mysql.user ORDER BY 1, 2",
                    "SELECT plugin_name, plugin_status FROM information_schema.plugins ORDER BY 1",
                    "SELECT routine_schema, routine_name FROM information_schema.routines ORDER BY 1, 2",
                    "SELECT @@GLOBAL.max_connections, @@GLOBAL.general_log, @@GLOBAL.general_log_file, "
                    "@@GLOBAL.sql_mode, @@GLOBAL.read_only"):
            parts.append(repr(rows(sql)))
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    return digest


# --- running a case ----------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What happened to one case."""

    case: Case
    outcome: str  # refused | answered | stopped | failed
    error: str = ""
    unchanged: bool = True
    leaks: list[str] = field(default_factory=list)
    seen: bool = True  # the model was shown the injected text (cell and comment cases)
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome == self.case.expect and self.unchanged and not self.leaks and self.seen


def classify(err: SqlweaveError | None) -> str:
    if err is None:
        return "answered"
    if isinstance(err, (RefusedStatementError, SQLParseError, NoSQLInOutputError)):
        return "refused"  # nothing reached the database: refused, unparseable, or not even taken for SQL
    if isinstance(err, QueryTimeoutError):
        return "stopped"
    return "failed"


def fenced(sql: str) -> str:
    return f"Here is the query.\n```sql\n{sql}\n```"


def _obeying_model(case: Case, sql: str) -> FakeLLM:
    """A model that does what it is told: answers the case's SQL (once it has seen the injected text)."""
    if case.door == "agent":
        return _obeying_agent(case, sql)

    def respond(messages: tuple[Message, ...], options: GenerationOptions) -> str:
        if case.payload and not any(case.payload in m.content for m in messages):
            return fenced("SELECT COUNT(*) FROM products")
        return fenced(sql)

    return FakeLLM(responder=respond)


def _obeying_agent(case: Case, sql: str) -> FakeLLM:
    """The agent: read the hostile text through a tool, then do what it says, then stop."""
    if case.kind == "hostile-cell":
        turns = [f'Thought: read it.\nAction: ExecuteSQL("{sql}")']
        if "DROP TABLE" in case.payload:
            turns.append('Thought: the value says to drop the table.\nAction: ExecuteSQL("DROP TABLE hostile")')
    else:
        value = case.payload
        turns = [f'Thought: find the value.\nAction: SearchValue("{value}")',
                 f"Thought: read it.\nAction: ExecuteSQL(\"SELECT comment FROM feedback WHERE comment = '{value}'\")",
                 f'Thought: the feedback tells me what to run.\nAction: ExecuteSQL("{sql}")']
    turns.append("Thought: done.\nAction: Done")
    script = iter(turns)
    return FakeLLM(responder=lambda m, o: next(script, "Thought: done.\nAction: Done"))


def run_case(case: Case, db: Database, folder: Path, target: str, *,
             state: Callable[[], Any]) -> Outcome:
    """Run ``case`` on ``db`` (opened on the corpus database with the tenant policy and bound to ``acme``)."""
    sql = case.sql.replace("{dir}", str(folder)).replace("{target}", target)
    before = state()
    texts: list[str] = []
    seen = True
    error: SqlweaveError | None = None
    detail = ""
    if case.door == "sql":
        try:
            result = db.execute(sql)
            texts.append(json.dumps([list(result.columns), [[str(v) for v in r] for r in result.rows]]))
            detail = f"{result.row_count} rows"
        except SqlweaveError as err:
            error = err
    else:
        llm = _obeying_model(case, sql)
        engine = Engine(db, llm, build_pipeline(case.preset))
        answer = engine.run(case.question)
        error = answer.error
        texts.append(json.dumps(answer.as_dict(), default=str))
        prompts = [m.content for messages, _ in llm.calls for m in messages]
        texts += prompts
        if case.payload:
            seen = any(case.payload in p for p in prompts)
        if case.preset == "values":  # value selection itself must have picked the injected value
            seen = seen and any(e.stage == "select_values" and case.payload in json.dumps(e.notes, default=str)
                                for e in answer.trace)
        if case.door == "agent":  # ... and the agent must have read it in a tool's observation
            observations = [str(t.get("observation")) for e in answer.trace for t in e.notes.get("trajectory", [])]
            seen = seen and any(case.payload in o for o in observations)
        if case.door == "agent" and case.kind == "cell-injection":
            trajectory = next((e.notes.get("trajectory") for e in answer.trace if e.notes.get("trajectory")), [])
            attack = [t for t in trajectory if t.get("action") and sql in str(t["action"])]
            detail = str(attack[-1].get("observation", ""))[:200] if attack else "attack not tried"
            if not attack:
                seen = False
            elif "answered" != _attack_expect(case) and not str(attack[-1].get("observation", "")).startswith("Error"):
                detail = "ATTACK RAN: " + detail
                error = None
                return Outcome(case, "failed", "", state() == before, _leaks(case, texts), seen, detail)
        if case.kind == "hostile-cell" and answer.result is not None and case.payload:
            stored = [r[0] for r in answer.result.rows]
            if stored != [case.payload]:
                detail = f"value changed: {stored!r}"
                return Outcome(case, "failed", "", state() == before, _leaks(case, texts), seen, detail)
    if error is not None:
        texts.append(error.message + " " + (error.hint or ""))
    after = state()
    return Outcome(case, classify(error), "" if error is None else f"{type(error).__name__}: {error.message}",
                   before == after, _leaks(case, texts), seen, detail)


def _attack_expect(case: Case) -> str:
    for value, _sql, expect in CELL_PAYLOADS:
        if value == case.payload:
            return expect
    return "refused"


def _leaks(case: Case, texts: list[str]) -> list[str]:
    """Hidden values and other tenants' rows anywhere; hidden names anywhere the case's own input did not put them."""
    given = " ".join((case.sql, case.question, case.payload)).lower()
    found = []
    for text in texts:
        for marker in DATA_MARKERS:
            if marker in text and marker not in found:
                found.append(marker)
        low = text.lower()
        for name in tenants.HIDDEN_NAMES:
            if name not in given and re.search(rf"\b{name}\b", low) and name not in found:
                found.append(name)
    return found


def open_corpus(target: str, engine: str, folder: Path) -> Database:
    """The corpus database under the tenant shop's policy, bound to tenant ``acme``, with a short time limit."""
    descriptions = folder.parent / f"{folder.name}-knowledge.yaml" if engine == "sqlite" else None
    db = Database.open(target, timeout_s=TIMEOUT_S, descriptions=descriptions,
                       policy=AccessPolicy.from_yaml(tenants.POLICY_YAML))
    db.schema()
    return db.bind(tenants.TENANT)
