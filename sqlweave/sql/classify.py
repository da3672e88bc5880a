"""Decide, from the sqlglot AST, whether a SQL text is one read-only statement.

Classification never looks at the first word: ``WITH ... SELECT`` is a read,
``SELECT ... INTO`` is a write, a data-modifying CTE is a write.

>>> is_read_only("WITH t AS (SELECT 1 AS x) SELECT x FROM t")
True
>>> is_read_only("SELECT * INTO backup FROM singer")
False
>>> is_read_only("DROP TABLE singer")
False
"""

from __future__ import annotations

import re
from typing import cast

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..errors import RefusedStatementError, SQLParseError

#: Statement roots that only read.
_READ_ROOTS: tuple[type[exp.Expression], ...] = (exp.Select, exp.SetOperation, exp.Subquery, exp.Values)

#: Nodes that change data, schema, session or the file system, wherever they appear in the tree.
_WRITE_NODES: tuple[type[exp.Expression], ...] = tuple(
    getattr(exp, name)
    for name in (
        "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "TruncateTable", "Command",
        "Pragma", "Attach", "Detach", "Set", "Use", "Copy", "Grant", "Revoke", "Transaction", "Commit",
        "Rollback", "Lock", "LoadData", "Analyze", "Into",
    )
    if hasattr(exp, name)
)

#: Functions with side effects or access outside the database, refused in every dialect.
_UNSAFE_FUNCTIONS = frozenset(
    {
        "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer",
        "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_sleep", "pg_terminate_backend",
        "pg_cancel_backend", "set_config", "nextval", "setval", "lo_import", "lo_export", "dblink",
        "dblink_exec", "query_to_xml", "read_csv", "read_csv_auto", "read_parquet", "read_json",
        "read_json_auto", "read_text", "read_blob", "glob", "install", "load",
    }
)

#: Further functions refused on one engine (and on text of unknown dialect): what reads or writes files or
#: other databases, runs SQL given as a string, takes locks, sleeps, or changes the server or the session.
_UNSAFE_BY_DIALECT: dict[str, frozenset[str]] = {
    "postgres": frozenset({
        "pg_sleep_for", "pg_sleep_until", "pg_stat_file", "pg_reload_conf", "pg_rotate_logfile",
        "pg_switch_wal", "pg_create_restore_point", "pg_promote", "pg_backup_start", "pg_backup_stop",
        "pg_start_backup", "pg_stop_backup", "pg_notify", "pg_logical_emit_message", "pg_current_logfile",
        "pg_log_backend_memory_contexts", "pg_import_system_collations", "pg_wal_replay_pause",
        "pg_wal_replay_resume", "txid_current", "pg_current_xact_id", "ts_stat", "query_to_xmlschema",
        "query_to_xml_and_xmlschema", "cursor_to_xml", "cursor_to_xmlschema",
    }),
    "duckdb": frozenset({
        "query", "query_table", "sniff_csv", "getenv", "duckdb_secrets", "which_secret", "st_read",
        "st_read_meta", "st_drivers", "arrow_scan", "pandas_scan", "python_map_function", "sqlite_scan",
        "sqlite_attach", "postgres_scan", "postgres_attach", "postgres_query", "postgres_execute", "mysql_query",
        "mysql_execute", "load_aws_credentials", "httpfs", "checkpoint", "force_checkpoint", "sleep_ms",
    }),
    "mysql": frozenset({
        "load_file", "sleep", "benchmark", "get_lock", "release_lock", "release_all_locks", "is_free_lock",
        "is_used_lock", "sys_exec", "sys_eval", "sys_get", "sys_set", "lib_mysqludf_sys_info", "last_insert_id",
        "setval", "nextval", "lastval",
    }),
}

#: Name prefixes refused per dialect (families of functions: dblink_*, lo_*, read_*, parquet_*).
_UNSAFE_PREFIXES: dict[str, tuple[str, ...]] = {
    "postgres": ("dblink", "lo_", "pg_advisory", "pg_try_advisory", "pg_ls_", "pg_file_", "pg_stat_reset",
                 "pg_replication_", "pg_create_", "pg_drop_", "pg_copy_", "pg_read_"),
    "duckdb": ("read_", "parquet_", "iceberg_", "delta_", "json_execute", "excel_", "csv_"),
    "mysql": ("master_", "source_", "wait_for_", "wait_until_", "sys_"),
}

#: A DuckDB table name that is a file (``FROM 'data.csv'`` scans the file).
_FILE_LIKE = re.compile(r"[/\\:~]|\.(csv|tsv|txt|parquet|json|jsonl|ndjson|arrow|ipc|feather|xlsx?|db|duckdb|sqlite3?"
                        r"|gz|zst|bz2|xz)$", re.IGNORECASE)


def _unsafe(name: str, dialect: str | None) -> bool:
    if name in _UNSAFE_FUNCTIONS:
        return True
    dialects = [dialect] if dialect in _UNSAFE_BY_DIALECT else list(_UNSAFE_BY_DIALECT) if dialect is None else []
    return any(name in _UNSAFE_BY_DIALECT[d] or name.startswith(_UNSAFE_PREFIXES[d]) for d in dialects)


def _parse(sql: str, dialect: str | None) -> list[exp.Expression | None]:
    try:
        # sqlglot 30 types parse() with its Expr base; every node it parses is a concrete Expression.
        return cast("list[exp.Expression | None]", sqlglot.parse(sql, read=dialect))
    except SqlglotError as err:
        raise SQLParseError(str(err).splitlines()[0], hint="Check the SQL syntax.", sql=sql) from err


def _hidden_from_the_parser(sql: str) -> str | None:
    """What MySQL and MariaDB run that sqlglot does not read as they do: ``/*! ... */`` and ``/*M! ... */`` (run as
    SQL), ``--`` not followed by a space (``1--1`` is 1 - -1 there), and ``INTO OUTFILE``/``INTO DUMPFILE``
    (a file written on the server, which sqlglot cannot parse). Strings and quoted names are skipped as MySQL reads
    them (a backslash escapes)."""
    code: list[str] = []  # the text outside strings and comments
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`":
            i += 1
            while i < n:
                if sql[i] == "\\" and ch != "`":
                    i += 2
                    continue
                if sql[i] == ch:
                    if i + 1 < n and sql[i + 1] == ch:  # a doubled quote
                        i += 2
                        continue
                    break
                i += 1
            code.append(" '' ")
        elif sql.startswith("/*", i):
            if re.match(r"/\*M?!", sql[i:i + 4]):
                return "a /*! ... */ comment, which MySQL runs as SQL,"
            end = sql.find("*/", i + 2)
            i = n if end < 0 else end + 1
            code.append(" ")
        elif sql.startswith("--", i):
            if i + 2 < n and not sql[i + 2].isspace():
                return "-- not followed by a space, which MySQL reads as two minus signs,"
            end = sql.find("\n", i)
            i = n if end < 0 else end
        elif ch == "#":
            end = sql.find("\n", i)
            i = n if end < 0 else end
        else:
            code.append(ch)
        i += 1
    if re.search(r"\bINTO\s+(OUTFILE|DUMPFILE)\b", "".join(code), re.IGNORECASE):
        return "SELECT ... INTO OUTFILE, which writes a file on the database server,"
    return None


def ensure_read_only(sql: str, dialect: str | None = "sqlite") -> exp.Expression:
    """Return the parsed statement if ``sql`` is exactly one read-only statement; raise otherwise.

    Raises:
        RefusedStatementError: several statements, or any write, DDL, PRAGMA, ATTACH, ``SELECT INTO``.
        SQLParseError: the text does not parse, so it cannot be shown to be safe.

    >>> ensure_read_only("SELECT 1; DELETE FROM t")
    Traceback (most recent call last):
    ...
    sqlweave.errors.RefusedStatementError: 2 statements given; only one SELECT may run (...)
    """
    if dialect in ("mysql", None):
        hidden = _hidden_from_the_parser(sql)
        if hidden:
            raise RefusedStatementError(f"{hidden} is not allowed", sql=sql)
    # a comment after the last semicolon comes back as an empty statement holding it: not a statement
    statements = [s for s in _parse(sql, dialect) if s is not None and not isinstance(s, exp.Semicolon)]
    if not statements:
        raise SQLParseError("no SQL statement found", sql=sql)
    if len(statements) > 1:
        raise RefusedStatementError(f"{len(statements)} statements given; only one SELECT may run", sql=sql)
    tree = statements[0]
    if not isinstance(tree, _READ_ROOTS):
        # sqlglot keeps statements it has no model for (VACUUM, REPLACE INTO, ...) as a Command: name the command
        kind = str(tree.this).split()[0].upper() if isinstance(tree, exp.Command) and tree.this else tree.key.upper()
        raise RefusedStatementError(f"{kind} statements are not allowed", sql=sql)
    for node in tree.walk():
        if isinstance(node, _WRITE_NODES):
            raise RefusedStatementError(f"{node.key.upper()} is not allowed in a read-only query", sql=sql)
        if isinstance(node, exp.Select) and node.args.get("into") is not None:
            raise RefusedStatementError("SELECT ... INTO writes a table and is not allowed", sql=sql)
        if isinstance(node, exp.Select) and node.args.get("locks"):
            raise RefusedStatementError("SELECT ... FOR UPDATE/SHARE takes locks and is not allowed", sql=sql)
        if isinstance(node, exp.PropertyEQ) and isinstance(node.this, exp.Parameter):
            raise RefusedStatementError("setting a variable (@name := ...) is not allowed", sql=sql)
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if _unsafe(name, dialect):
                raise RefusedStatementError(f"function {name}() is not allowed", sql=sql)
        if dialect in ("duckdb", None) and isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) \
                and node.this.quoted and _FILE_LIKE.search(node.name):
            raise RefusedStatementError(f"reading the file {node.name!r} is not allowed", sql=sql)
    return tree


def is_read_only(sql: str, dialect: str | None = "sqlite") -> bool:
    """True if :func:`ensure_read_only` accepts ``sql``; False for writes and for text that does not parse."""
    try:
        ensure_read_only(sql, dialect)
    except (RefusedStatementError, SQLParseError):
        return False
    return True
