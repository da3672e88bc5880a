"""A two-tenant shop for the access-policy and hostile-input tests, built the same way on SQLite, DuckDB and
PostgreSQL, with canaries: every hidden value holds ``CANARY`` and every row of the other tenant holds ``GLOBEX``,
so a leak shows as one of those words in any output.

Tables: ``users`` (hidden ``password_hash``; row filter on ``tenant_id``), ``orders`` (hidden ``secret_note``;
row filter), ``order_items`` and ``products`` (open), ``audit_log`` (hidden). :data:`POLICY` says so.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Iterable

#: The access policy of the tenant shop (the tests bind ``tenant`` to ``acme``).
POLICY_YAML = """
hidden_tables: [audit_log]
hidden_columns: [users.password_hash, orders.secret_note]
row_filters:
  users: tenant_id = :tenant
  orders: tenant_id = :tenant
"""
POLICY = {"hidden_tables": ["audit_log"], "hidden_columns": ["users.password_hash", "orders.secret_note"],
          "row_filters": {"users": "tenant_id = :tenant", "orders": "tenant_id = :tenant"}}
TENANT = {"tenant": "acme"}
#: Names that must never appear in what a user or the model sees.
HIDDEN_NAMES = ("audit_log", "password_hash", "secret_note")
#: Words that mark hidden values and the other tenant's rows.
LEAK_MARKERS = ("CANARY", "GLOBEX", "globex")

SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, email TEXT, password_hash TEXT, tenant_id TEXT);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price INTEGER);
CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), amount INTEGER, status TEXT,
                     tenant_id TEXT, secret_note TEXT);
CREATE TABLE order_items (order_id INTEGER REFERENCES orders(id), product_id INTEGER REFERENCES products(id),
                          quantity INTEGER);
CREATE TABLE audit_log (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), action TEXT);
"""

ROWS: dict[str, list[tuple[Any, ...]]] = {
    "users": [
        (1, "Ann Acme", "ann@acme.example", "CANARYHASH-ann", "acme"),
        (2, "Bo Acme", "bo@acme.example", "CANARYHASH-bo", "acme"),
        (3, "Cy Acme", "cy@acme.example", "CANARYHASH-cy", "acme"),
        (4, "GLOBEX Zed", "zed@globex.example", "CANARYHASH-zed", "globex"),
        (5, "GLOBEX Yu", "yu@globex.example", "CANARYHASH-yu", "globex"),
    ],
    "products": [(1, "Chess Set", 40), (2, "Kite", 15), (3, "Puzzle", 25)],
    "orders": [
        (1, 1, 100, "paid", "acme", "CANARYNOTE-1"),
        (2, 1, 250, "paid", "acme", "CANARYNOTE-2"),
        (3, 2, 75, "open", "acme", "CANARYNOTE-3"),
        (4, 3, 310, "paid", "acme", "CANARYNOTE-4"),
        (5, 4, 9001, "GLOBEX-paid", "globex", "CANARYNOTE-5"),
        (6, 5, 9002, "GLOBEX-open", "globex", "CANARYNOTE-6"),
        (7, 4, 9003, "paid", "globex", "CANARYNOTE-7"),
    ],
    "order_items": [(1, 1, 1), (1, 2, 2), (2, 3, 1), (3, 1, 3), (4, 2, 1), (5, 1, 7), (6, 3, 9), (7, 2, 8)],
    "audit_log": [(1, 1, "CANARYAUDIT login"), (2, 4, "CANARYAUDIT export")],
}


def _inserts() -> Iterable[tuple[str, list[tuple[Any, ...]]]]:
    for table, rows in ROWS.items():
        marks = ", ".join("?" for _ in rows[0])
        yield f"INSERT INTO {table} VALUES ({marks})", rows


def build_sqlite(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    for sql, rows in _inserts():
        conn.executemany(sql, rows)
    conn.commit()
    conn.close()
    return path


def build_duckdb(path: Path) -> Path:
    import duckdb

    conn = duckdb.connect(str(path))
    for stmt in SCHEMA.split(";"):
        if stmt.strip():
            conn.execute(stmt)
    for sql, rows in _inserts():
        conn.executemany(sql, rows)
    conn.close()
    return path


def postgres_script() -> str:
    """The whole database as one SQL script (for the test server's superuser)."""
    def lit(v: Any) -> str:
        return str(v) if isinstance(v, int) else "'" + str(v).replace("'", "''") + "'"

    lines = [SCHEMA]
    for table, rows in ROWS.items():
        values = ", ".join("(" + ", ".join(lit(v) for v in r) + ")" for r in rows)
        lines.append(f"INSERT INTO {table} VALUES {values};")
    return "\n".join(lines)


def build_oracle(path: Path) -> Path:
    """What tenant ``acme`` may see, as a database of its own: the expected results of any allowed query."""
    build_sqlite(path)
    conn = sqlite3.connect(path)
    conn.executescript("""
        DELETE FROM orders WHERE tenant_id <> 'acme';
        DELETE FROM users WHERE tenant_id <> 'acme';
        DROP TABLE audit_log;
        ALTER TABLE users DROP COLUMN password_hash;
        ALTER TABLE orders DROP COLUMN secret_note;
    """)
    conn.commit()
    conn.close()
    return path


def normalise(rows: Iterable[Iterable[Any]]) -> list[tuple[Any, ...]]:
    """Rows comparable across engines: numbers as rounded floats, sorted."""
    def cell(v: Any) -> Any:
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, (int, float)) or type(v).__name__ == "Decimal":
            return round(float(v), 6)
        return v

    return sorted((tuple(cell(v) for v in r) for r in rows), key=repr)


def leaks(text: str) -> list[str]:
    """Hidden names and leak markers found in ``text``."""
    return [m for m in (*HIDDEN_NAMES, *LEAK_MARKERS) if m in text]
