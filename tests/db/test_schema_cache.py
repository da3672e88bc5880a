"""Schemas kept on disk between processes (sqlweave.db.schema_cache): used while the database is unchanged, read
again as soon as a table, a column, a row, the policy or the knowledge file changes; and a long-lived handle's
schema read again when the database's structure (not its rows) changes."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.db.schema_cache import fingerprint
from sqlweave.policy import AccessPolicy
from tests.conftest import keyless_shop
from tests.extras import need_extra


def _read(path: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    with Database.open(path, **kwargs) as db:  # type: ignore[arg-type]
        return db.schema()


def _kept(cache: Path) -> list[Path]:
    return sorted((cache / "schemas").glob("*.json"))


def _cache() -> Path:
    return Path(os.environ["SQLWEAVE_CACHE_DIR"])


def test_a_schema_read_before_is_taken_from_disk_until_a_row_changes(tmp_path: Path, reads: list[str]) -> None:
    path = keyless_shop(tmp_path / "shop.sqlite")
    first = Database.open(path).schema()
    again = Database.open(path).schema()
    assert reads == ["shop"] and again == first  # the second handle (a new process alike) read nothing
    assert len(_kept(_cache())) == 1 and first.keys_from_data  # keys read from the data are kept too
    before = path.stat()
    con = sqlite3.connect(path)
    con.execute("UPDATE customers SET country = 'IT' WHERE customer_id = 2")
    con.commit()
    con.close()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # as if written within the clock's same tick
    assert path.stat().st_size == before.st_size  # and the file's size did not change either
    changed = Database.open(path).schema()
    assert reads == ["shop", "shop"]
    assert "IT" in changed.table("customers").column("country").samples


def test_rows_in_the_write_ahead_log_are_seen(tmp_path: Path, reads: list[str]) -> None:
    path = keyless_shop(tmp_path / "shop.sqlite")
    writer = sqlite3.connect(path)
    assert writer.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    assert Database.open(path).schema().table("notes").row_count == 2
    writer.execute("INSERT INTO notes VALUES ('new', 1)")
    writer.commit()  # in the log, not yet in the file: the writer is still open
    assert Database.open(path).schema().table("notes").row_count == 3
    assert len(reads) == 2
    writer.close()


def test_duckdb_file_written_by_another_process_is_read_again(tmp_path: Path, reads: list[str]) -> None:
    need_extra("duckdb")
    import duckdb

    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, city VARCHAR); INSERT INTO customer VALUES (1, 'Lyon')")
    con.close()
    assert _read(path).table("customer").row_count == 1
    assert _read(path).table("customer").row_count == 1 and len(reads) == 1
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO customer VALUES (2, 'Oslo')")
    con.close()
    assert _read(path).table("customer").row_count == 2 and len(reads) == 2
    con = duckdb.connect(str(path))
    con.execute("ALTER TABLE customer ADD COLUMN country VARCHAR")
    con.close()
    assert _read(path).table("customer").column_names == ("id", "city", "country")


def test_what_the_read_depends_on_besides_the_database_is_in_its_key(tmp_path: Path, reads: list[str]) -> None:
    path = keyless_shop(tmp_path / "shop.sqlite")
    assert "notes" in Database.open(path).schema().table_names
    hidden = Database.open(path, policy=AccessPolicy.from_yaml("hidden_tables: [notes]")).schema()
    assert "notes" not in hidden.table_names  # not the schema read without the policy
    assert not Database.open(path, keys_from_data=False).schema().foreign_keys
    knowledge = tmp_path / "shop.yaml"
    knowledge.write_text("tables:\n  customers:\n    description: people who buy\n", encoding="utf-8")
    assert Database.open(path, descriptions=knowledge).schema().table("customers").description == "people who buy"
    knowledge.write_text("tables:\n  customers:\n    description: buyers\n", encoding="utf-8")
    assert Database.open(path, descriptions=knowledge).schema().table("customers").description == "buyers"
    assert len(reads) == 5
    assert Database.open(path, policy=AccessPolicy.from_yaml("hidden_tables: [notes]")).schema() == hidden
    assert len(reads) == 5  # the same policy again: from disk


def test_off_old_unreadable_or_incomplete_reads_are_not_used(tmp_path: Path, reads: list[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = keyless_shop(tmp_path / "shop.sqlite")
    cache = _cache()
    monkeypatch.setenv("SQLWEAVE_SCHEMA_CACHE", "0")
    Database.open(path).schema()
    assert not _kept(cache)
    monkeypatch.delenv("SQLWEAVE_SCHEMA_CACHE")
    Database.open(path).schema()
    (kept,) = _kept(cache)
    data = json.loads(kept.read_text())
    data["read_at"] -= 2 * 24 * 3600  # two days old
    kept.write_text(json.dumps(data))
    Database.open(path).schema()
    kept.write_text("{not json")
    assert Database.open(path).schema().table("customers").row_count == 3
    assert len(reads) == 4
    # a slow view whose row count runs out of time: the schema is read, and read again next time
    con = sqlite3.connect(path)
    con.execute("CREATE VIEW slow AS WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 100000000) "
                "SELECT i FROM r")
    con.commit()
    con.close()
    before = len(_kept(cache))
    db = Database.open(path, timeout_s=0.3)
    assert db.schema().table("slow").row_count is None and db.reads_cut_short > 0
    assert len(_kept(cache)) == before  # no file for it: every file there is one of the reads before the view
    Database.open(path, timeout_s=0.3).schema()
    assert len(reads) == 6


def test_fingerprint_is_none_where_nothing_tells_a_change(tmp_path: Path) -> None:
    need_extra("duckdb")
    from sqlweave.db.backends import DuckDB
    from sqlweave.db.connection import Connection

    path = keyless_shop(tmp_path / "shop.sqlite")
    assert fingerprint(Database.open(path)) == fingerprint(Database.open(path))
    import sqlalchemy as sa

    memory = Database(Connection(sa.create_engine("duckdb:///:memory:"), DuckDB(), name="mem",
                                 target="duckdb:///:memory:"))
    assert fingerprint(memory) is None


def test_a_long_lived_handle_sees_a_new_table_or_column_but_not_every_new_row(tmp_path: Path,
                                                                              reads: list[str]) -> None:
    path = keyless_shop(tmp_path / "shop.sqlite")
    db = Database.open(path)  # a server's handle
    first = db.schema()
    con = sqlite3.connect(path)
    con.execute("INSERT INTO notes VALUES ('more', 1)")
    con.commit()
    db.recheck_s = 0  # check at every call (a server checks every minute)
    assert db.schema() is first  # rows alone: the schema is not read again
    con.execute("CREATE TABLE returns (order_id INTEGER, reason TEXT)")
    con.commit()
    db.recheck_s = None
    assert db.schema() is first  # not checked
    db.recheck_s = 0
    assert "returns" in db.schema().table_names and db.schema().table("notes").row_count == 3
    con.execute("ALTER TABLE returns ADD COLUMN amount REAL")
    con.commit()
    con.close()
    assert db.schema().table("returns").column_names == ("order_id", "reason", "amount")
    assert len(reads) == 3
    bound = db.bind({"tenant": "a"})  # a request's handle takes the schema its parent holds, checked by the parent
    assert bound.schema() is db.schema() and bound.recheck_s is None
    with sqlite3.connect(path) as con:
        con.execute("DROP TABLE returns")
    con.close()
    assert "returns" not in db.bind({}).schema().table_names and len(reads) == 4


def test_a_long_lived_handle_opens_a_file_renamed_over_its_own(tmp_path: Path) -> None:
    # a nightly rebuild writes the database elsewhere and renames it over the one a server reads: the server's
    # connections still read the old file, whatever its structure says
    import os

    path = keyless_shop(tmp_path / "shop.sqlite")
    db = Database.open(path)
    db.schema()
    assert db.execute("SELECT count(*) FROM orders").rows == ((4,),)
    before = db.schema_structure
    rebuilt = keyless_shop(tmp_path / "rebuilt.sqlite")  # the same tables, so the same schema_version
    with sqlite3.connect(rebuilt) as con:
        con.execute("INSERT INTO orders VALUES (14, 2, 9.5)")
        con.execute("CREATE TABLE returns (order_id INTEGER, reason TEXT)")
    con.close()
    os.replace(rebuilt, path)
    assert db.execute("SELECT count(*) FROM orders").rows == ((4,),)  # not yet checked: the old file
    db.recheck_s = 0
    assert "returns" in db.schema().table_names and db.schema_structure != before
    assert db.execute("SELECT count(*) FROM orders").rows == ((5,),)
    path.unlink()  # gone: what is open still answers
    assert db.execute("SELECT count(*) FROM orders").rows == ((5,),) and "returns" in db.schema().table_names


def test_a_duckdb_file_renamed_over_is_opened_again(tmp_path: Path) -> None:
    need_extra("duckdb")
    import os

    import duckdb

    path = tmp_path / "wh.duckdb"
    for target, rows in ((path, 2), (tmp_path / "new.duckdb", 3)):
        con = duckdb.connect(str(target))
        con.execute(f"CREATE TABLE kpi AS SELECT range AS x FROM range({rows})")
        con.close()
    with Database.open(path) as db:
        assert db.execute("SELECT count(*) FROM kpi").rows == ((2,),)
        before = db.schema_structure if db.schema() else None
        os.replace(tmp_path / "new.duckdb", path)
        db.recheck_s = 0
        db.schema()
        assert db.execute("SELECT count(*) FROM kpi").rows == ((3,),) and db.schema_structure != before


def test_duckdb_structure_changes_with_a_column_not_with_a_row(tmp_path: Path) -> None:
    need_extra("duckdb")
    import duckdb

    from sqlweave.db.schema_cache import structure

    path = tmp_path / "wh.duckdb"

    def write(sql: str) -> str | None:
        con = duckdb.connect(str(path))
        con.execute(sql)
        con.close()
        with Database.open(path) as db:  # DuckDB lets one process hold a file one way at a time
            return structure(db)

    before = write("CREATE TABLE kpi (x INTEGER)")
    assert before is not None and write("INSERT INTO kpi VALUES (1)") == before
    assert write("ALTER TABLE kpi ADD COLUMN y VARCHAR") not in (None, before)


def test_progress_is_told_of_each_table_read_and_not_of_a_schema_from_disk(tmp_path: Path) -> None:
    path = keyless_shop(tmp_path / "shop.sqlite")
    calls: list[tuple[int, int]] = []
    with Database.open(path) as db:
        db.schema(progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    with Database.open(path) as db:
        db.schema(progress=lambda done, total: calls.append((done, total)))
    assert len(calls) == 5
