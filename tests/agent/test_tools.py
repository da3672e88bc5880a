"""The four tools on a real SQLite database (Spider's concert_singer), used on their own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sqlweave.agent.tools import Toolkit, join_graph
from sqlweave.database import Database
from sqlweave.schema import Column, Schema, Table
from sqlweave.errors import SchemaError

from ..conftest import file_digest


@pytest.fixture
def kit(singer_db: Path) -> Toolkit:
    return Toolkit(Database.open(singer_db))


def test_shortest_path_follows_foreign_keys(kit: Toolkit) -> None:
    path = kit.find_shortest_path("singer.Name", "stadium.Name")
    assert path.tables == ("singer", "singer_in_concert", "concert", "stadium")
    assert len(path.joins) == 3 and not path.inferred
    assert path.from_clause.startswith("FROM singer JOIN singer_in_concert ON ")
    # The conditions really join: the FROM clause runs.
    rows = kit.execute_sql(f"SELECT count(*) {path.from_clause}").rows
    assert rows[0][0] > 0


def test_shortest_path_accepts_the_papers_column_table_order_and_bare_tables(kit: Toolkit) -> None:
    assert kit.find_shortest_path("Name.singer", "concert").tables == ("singer", "singer_in_concert", "concert")
    assert kit.find_shortest_path("singer.Name", "singer.Age").joins == ()


def test_shortest_path_errors_name_the_fix(kit: Toolkit) -> None:
    with pytest.raises(SchemaError, match="has no column 'Nope'") as err:
        kit.find_shortest_path("singer.Nope", "stadium.Name")
    assert "Song_Name" in (err.value.hint or "")
    with pytest.raises(SchemaError, match="several tables"):
        kit.find_shortest_path("Name", "stadium.Capacity")


def test_undeclared_keys_are_inferred_from_primary_key_names() -> None:
    schema = Schema("x", (
        Table("dept", (Column("dept_id", "INT", primary_key=True), Column("title", "TEXT"))),
        Table("emp", (Column("emp_id", "INT", primary_key=True), Column("dept_id", "INT"), Column("name", "TEXT"))),
    ))
    g = join_graph(schema)
    assert g.edges[("emp", "dept_id"), ("dept", "dept_id")]["kind"] == "inferred"


def test_search_value_finds_the_stored_spelling_and_respects_restrictions(kit: Toolkit) -> None:
    hits = kit.search_value("netherland")
    assert (hits[0].table, hits[0].column, hits[0].value) == ("singer", "Country", "Netherlands")
    assert all(h.table == "stadium" for h in kit.search_value("Stark", table="stadium"))
    with pytest.raises(SchemaError):
        kit.search_value("x", table="no_such_table")


def test_value_index_is_persisted_and_rebuilt_only_where_data_changed(tmp_path: Path, singer_db: Path) -> None:
    from sqlweave.config import cache_dir
    from sqlweave.retrieval.values import ValueIndex

    ValueIndex.build(Database.open(singer_db))
    files = {p.name: p.stat().st_mtime_ns for p in (cache_dir() / "values").rglob("*.json")}
    assert len(files) >= 3  # one per table with text columns
    with sqlite3.connect(singer_db) as conn:  # the user changes one table
        conn.execute("INSERT INTO stadium (Stadium_ID, Location, Name, Capacity, Highest, Lowest, Average) "
                     "VALUES (99, 'Nowhere', 'Zebra Park', 1, 1, 1, 1)")
    idx = ValueIndex.build(Database.open(singer_db))
    after = {p.name: p.stat().st_mtime_ns for p in (cache_dir() / "values").rglob("*.json")}
    changed = [n for n in files if after[n] != files[n]]
    assert len(changed) == 1
    assert idx.search("zebra park")[0].value == "Zebra Park"
    again = Database.open(singer_db)  # a new process: the schema and the values come from disk
    sent: list[str] = []
    real = again.trusted_read
    again.trusted_read = lambda sql, **kw: sent.append(sql) or real(sql, **kw)  # type: ignore[method-assign]
    assert len(ValueIndex.build(again)) == len(idx) and sent == ["PRAGMA schema_version"]  # no COUNT, no read


def test_a_database_without_text_values_is_searched_for_none() -> None:
    from sqlweave.retrieval.values import ValueIndex

    empty = ValueIndex([])
    assert empty.search("Paris") == [] and empty.search("Paris", table="t") == []
    assert empty.matches_in("customers from Paris") == []


def test_execute_is_the_safe_executor(kit: Toolkit, singer_db: Path) -> None:
    before = file_digest(singer_db)
    text, err = kit.call("ExecuteSQL", ["DROP TABLE singer"], {})
    assert text.startswith("Error: DROP statements are not allowed")
    text, _ = kit.call("ExecuteSQL", ["SELECT Name FROM singer; DELETE FROM singer"], {})
    assert text.startswith("Error:")
    assert file_digest(singer_db) == before


def test_observations_are_truncated(kit: Toolkit) -> None:
    text, result = kit.call("ExecuteSQL", ["SELECT s1.Name, s2.Name FROM singer s1, singer s2"], {})
    lines = text.splitlines()
    assert len(lines) == 1 + kit.max_rows + 1 and lines[-1].startswith("... 36 rows")
    long = "x" * 500
    text, _ = kit.call("ExecuteSQL", [f"SELECT '{long}' AS v"], {})
    assert len(text.splitlines()[1]) == 100 and text.splitlines()[1].endswith("...")


def test_tool_misuse_becomes_an_observation(kit: Toolkit) -> None:
    assert kit.call("SearchValue", [], {})[0].startswith("Error: wrong arguments for SearchValue")
    assert kit.call("SearchValue", ["  "], {})[0].startswith("Error: SearchValue needs a value")
    assert "unknown tool 'Explode'" in kit.call("Explode", [], {})[0]


@pytest.mark.extra("embed")
def test_search_column_ranks_with_real_embeddings(kit: Toolkit) -> None:
    cols = kit.search_column("how old a singer is", k=3)
    assert (cols[0].table, cols[0].column) == ("singer", "Age")
    assert cols[0].statistics.startswith("min ")
    assert cols[0].score >= cols[1].score >= cols[2].score
    cap = kit.search_column("number of seats in a stadium", k=3)
    assert ("stadium", "Capacity") in {(c.table, c.column) for c in cap}
    names = kit.search_column("name of the country a singer comes from", k=2)
    assert names[0].statistics.startswith("values e.g. ")


def test_execute_repairs_wrong_names_and_says_so(kit: Toolkit) -> None:
    sql = ("SELECT T2.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID")
    text, result = kit.call("ExecuteSQL", [sql], {})
    assert result.sql.startswith("SELECT T1.Name") and result.rows
    assert text.startswith("(names corrected; ran: SELECT T1.Name")
    # A failure with no single reading stays an error observation.
    text, result = kit.call("ExecuteSQL", ["SELECT loc FROM stadium"], {})
    assert text.startswith("Error: no such column: loc") and result is not None and not hasattr(result, "rows")
