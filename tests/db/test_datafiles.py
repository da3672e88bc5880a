"""CSV, TSV, Parquet and JSON files (or a folder of them) opened as a read-only database through a DuckDB copy."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from sqlalchemy.exc import SQLAlchemyError
from typer.testing import CliRunner

from sqlweave.cli import app
from sqlweave.database import Database
from sqlweave.db.datafiles import data_database, table_names
from sqlweave.errors import DatabaseError, DatabaseNotFoundError, MissingDependencyError, RefusedStatementError
from tests.extras import need_extra

PEOPLE = 'id,name,amount,joined\n1,Ann,2.5,2024-01-02\n2,"Bo, Jr",3,2024-02-03\n3,Cy,,2024-03-04\n'


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "datafiles"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    need_extra("duckdb")
    import duckdb

    data = tmp_path / "shop data"
    data.mkdir()
    (data / "people.csv").write_text(PEOPLE)
    (data / "visits.tsv").write_text("person_id\tpage\n1\thome\n1\tcart\n3\thome\n")
    (data / "events.jsonl").write_text('{"person_id": 2, "what": "login"}\n{"person_id": 2, "what": "logout"}\n')
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT 1 AS person_id, 'gold' AS tier) TO '{data / 'tiers.parquet'}' (FORMAT parquet)")
    (data / "notes.txt").write_text("not data: a folder's .txt files are left out\n")
    (data / ".hidden.csv").write_text("a\n1\n")
    return data


def test_a_folder_of_files_is_a_database_of_typed_tables(folder: Path, cache: Path) -> None:
    with Database.open(folder) as db:
        assert db.name == "shop data" and db.dialect == "duckdb"
        schema = db.schema()
        assert sorted(schema.table_names) == ["events", "people", "tiers", "visits"]
        types = {c.name: c.type.upper() for c in schema.table("people").columns}
        assert types["id"] == "BIGINT" and types["joined"] == "DATE" and types["name"] == "VARCHAR"
        rows = db.execute("SELECT p.name, COUNT(*) FROM people p JOIN visits v ON v.person_id = p.id "
                          "GROUP BY p.name ORDER BY p.name").rows
        assert rows == (("Ann", 2), ("Cy", 1))
        assert db.execute("SELECT name FROM people WHERE amount IS NULL").rows == (("Cy",),)
        assert db.execute("SELECT tier FROM tiers").rows == (("gold",),)
        assert db.execute("SELECT COUNT(*) FROM events WHERE what = 'login'").rows == ((1,),)
    assert len(list(cache.glob("*.duckdb"))) == 1 and not list(cache.glob(".*partial*"))


def test_one_file_is_a_database_of_one_table(folder: Path, cache: Path) -> None:
    with Database.open(str(folder / "people.csv")) as db:
        assert db.name == "people" and db.schema().table_names == ("people",)
        assert db.execute("SELECT SUM(amount) FROM people").rows == ((5.5,),)
    dotted = folder.parent / "exports.v2"  # a folder's whole name is the database's name
    dotted.mkdir()
    (dotted / "sales.2024.csv").write_text("region,amount\nNorth,1\n")
    with Database.open(dotted) as db:
        assert db.name == "exports.v2" and db.schema().table_names == ("sales_2024",)
    with Database.open(str(folder / "people.csv")) as db:
        assert db.execute("SELECT SUM(amount) FROM people").rows == ((5.5,),)


def test_the_files_are_read_only_and_nothing_else_is_read(folder: Path, cache: Path) -> None:
    before = (folder / "people.csv").read_bytes()
    with Database.open(folder) as db:
        with pytest.raises(RefusedStatementError):
            db.execute("DELETE FROM people")
        with pytest.raises(RefusedStatementError):
            db.execute(f"SELECT * FROM read_csv('{folder / 'notes.txt'}')")
        with pytest.raises(SQLAlchemyError, match="file system operations are disabled"):
            # past the guard, DuckDB itself reads no other file
            db.engine.connect().exec_driver_sql(f"SELECT * FROM read_csv('{folder / 'notes.txt'}')").fetchall()
    assert (folder / "people.csv").read_bytes() == before


def test_a_changed_file_is_read_again_and_the_old_copy_removed(folder: Path, cache: Path) -> None:
    with Database.open(folder) as db:
        assert db.execute("SELECT COUNT(*) FROM people").rows == ((3,),)
    first = list(cache.glob("*.duckdb"))
    assert len(first) == 1
    with Database.open(folder) as db:  # unchanged: the same copy, not built again
        assert list(cache.glob("*.duckdb")) == first
    (folder / "people.csv").write_text(PEOPLE + "4,Di,1,2024-04-05\n")
    os.utime(folder / "people.csv", ns=(1, 1))  # a different modification time, whatever the clock's resolution
    with Database.open(folder) as db:
        assert db.execute("SELECT COUNT(*) FROM people").rows == ((4,),)
    second = list(cache.glob("*.duckdb"))
    assert len(second) == 1 and second != first


def test_a_server_reads_files_changed_while_it_runs_once_they_hold_still(folder: Path, cache: Path) -> None:
    # a folder of exports refreshed every night, served by a process that lives on
    db = Database.open(folder)
    db.recheck_s = None

    def check() -> tuple[str, ...]:  # what a server does once a minute
        db.recheck_s = 0
        try:
            return db.schema().table_names
        finally:
            db.recheck_s = None

    def count(table: str) -> int:
        return db.execute(f"SELECT COUNT(*) FROM {table}").rows[0][0]

    assert count("people") == 3 and len(check()) == 4
    (folder / "people.csv").write_text(PEOPLE + "4,Di,1,2024-04-05\n")
    os.utime(folder / "people.csv", ns=(1, 1))
    (folder / "orders.csv").write_text("id,person_id\n1,1\n")
    assert "orders" not in check() and count("people") == 3  # just changed: perhaps still being written
    assert "orders" in check() and count("people") == 4  # unchanged since the last check: built again, and read
    assert len(list(cache.glob("*.duckdb"))) == 1  # the old copy removed
    (folder / "zz broken.parquet").write_bytes(b"not a parquet file")
    check()
    assert "orders" in check() and count("orders") == 1  # cannot be built: the copy in use stays, no error
    (folder / "zz broken.parquet").unlink()
    (folder / "orders.csv").write_text("id,person_id\n1,1\n2,3\n")
    os.utime(folder / "orders.csv", ns=(2, 2))
    check()
    check()
    assert count("orders") == 2
    db.close()


def test_a_file_duckdb_cannot_read_is_named_and_nothing_half_built_is_kept(folder: Path, cache: Path) -> None:
    (folder / "zz broken.parquet").write_bytes(b"not a parquet file")
    with pytest.raises(DatabaseError, match="zz broken.parquet") as err:
        Database.open(folder)
    assert err.value.hint and "format" in err.value.hint
    assert not cache.exists() or list(cache.iterdir()) == []
    (folder / "zz broken.parquet").unlink()
    with Database.open(folder) as db:  # a later run builds it whole
        assert len(db.schema().table_names) == 4


def test_missing_and_empty_sources_get_clear_errors(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(DatabaseNotFoundError, match="no data file at"):
        Database.open(tmp_path / "nowhere.csv")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatabaseNotFoundError, match="a folder without data files") as err:
        Database.open(tmp_path / "empty")
    assert "CSV" in (err.value.hint or "")


def test_without_duckdb_the_error_says_which_extra_to_install(tmp_path: Path, cache: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "people.csv").write_text(PEOPLE)
    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb now fails, as without the extra
    with pytest.raises(MissingDependencyError, match="DuckDB") as err:
        data_database(tmp_path / "people.csv", cache=tmp_path / "c")
    assert "sqlweave[duckdb]" in (err.value.hint or "")


def test_table_names_are_sql_names_and_unique() -> None:
    names = table_names([Path("sales 2024.csv"), Path("sales-2024.json"), Path("2023.parquet"), Path("é.csv.gz"),
                         Path("!!!.tsv")])
    assert list(names.values()) == ["sales_2024", "sales_2024_2", "t_2023", "é", "data"]


def test_the_cli_asks_a_csv_file(folder: Path, cache: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(app, ["sql", "--db", str(folder / "people.csv"), "SELECT COUNT(*) AS n FROM people", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["rows"] == [[3]]
    r = runner.invoke(app, ["schema", "--db", str(folder)])
    assert r.exit_code == 0 and "people(" in r.output and "tiers(" in r.output


def test_an_excel_workbook_gives_a_table_per_sheet_with_data(tmp_path: Path, cache: Path) -> None:
    need_extra("duckdb")
    import datetime as dt

    import openpyxl

    book = openpyxl.Workbook()
    sales = book.active
    sales.title = "Q1 sales"
    sales.append(["region", "amount", "day", None, "region"])
    sales.append(["North", 10.5, dt.date(2024, 1, 2), "x", "N"])
    sales.append(["South", 4, dt.date(2024, 2, 3), None, "S"])
    sales.append([None, None, None, None, None])  # an empty row is left out
    book.create_sheet("Targets").append(["region", "target"])
    book["Targets"].append(["North", 12])
    book.create_sheet("Empty")
    book.create_sheet("Plan").append(["step", "owner"])  # a header alone: a table without rows
    book.save(tmp_path / "book.xlsx")
    with Database.open(tmp_path / "book.xlsx") as db:
        schema = db.schema()
        assert sorted(schema.table_names) == ["book_Plan", "book_Q1_sales", "book_Targets"]
        assert db.execute('SELECT COUNT(*) FROM "book_Plan"').rows == ((0,),)
        assert [c.name for c in schema.table("book_Plan").columns] == ["step", "owner"]
        columns = [(c.name, c.type.upper()) for c in schema.table("book_Q1_sales").columns]
        assert columns == [("region", "VARCHAR"), ("amount", "FLOAT"), ("day", "DATE"), ("column_4", "VARCHAR"),
                           ("region_5", "VARCHAR")]
        assert db.execute('SELECT region, amount FROM "book_Q1_sales" ORDER BY day').rows == (("North", 10.5),
                                                                                              ("South", 4.0))
        assert db.execute('SELECT target FROM "book_Targets"').rows == ((12,),)
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no sheet CSV or partial copy left
    (tmp_path / "one.xlsx").write_bytes(b"PK\x03\x04 not really a workbook")
    with pytest.raises(DatabaseError, match="one.xlsx"):
        Database.open(tmp_path / "one.xlsx")


def test_the_demo_shop_as_csv_files_gets_back_the_keys_its_data_shows(tmp_path: Path, cache: Path) -> None:
    need_extra("duckdb")
    import csv
    import sqlite3

    from sqlweave.db.demo import demo_database_path

    folder = tmp_path / "shop"
    folder.mkdir()
    with sqlite3.connect(demo_database_path()) as conn:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            cur = conn.execute(f'SELECT * FROM "{table}"')
            with (folder / f"{table}.csv").open("w", newline="") as fh:
                writer = csv.writer(fh)
                writer.writerow([d[0] for d in cur.description])
                writer.writerows(cur)
    with Database.open(demo_database_path()) as original, Database.open(folder) as copy:
        declared = {(fk.table, fk.column, fk.ref_table, fk.ref_column) for fk in original.schema().foreign_keys}
        inferred = {(fk.table, fk.column, fk.ref_table, fk.ref_column) for fk in copy.schema().foreign_keys}
        # every declared key but the self-reference under another name (employees.manager_id), and nothing else
        assert inferred == {fk for fk in declared if fk[1] != "manager_id"} and len(inferred) == 5
        keys = {t.name: t.primary_key for t in copy.schema().tables}
        assert keys == {t.name: t.primary_key for t in original.schema().tables if len(t.primary_key) == 1} | {
            "order_items": ()}  # its key is two columns: no single column is one


def test_keys_need_the_name_and_the_values(tmp_path: Path, cache: Path) -> None:
    need_extra("duckdb")
    (tmp_path / "teams.csv").write_text("id,name\n1,Red\n2,Blue\n")
    (tmp_path / "team.csv").write_text("id,name\n1,Old red\n2,Old blue\n")  # a second table a team_id could mean
    (tmp_path / "players.csv").write_text("player_id,team_id,coach_id,score\n1,1,9,2.5\n1,2,9,3.5\n")  # id repeated
    (tmp_path / "coaches.csv").write_text("coach_id,name\n8,Ann\n")  # 9 is no coach's key
    (tmp_path / "games.csv").write_text("game_id,score_id\n1.5,1\n2.5,2\n")  # a float is no key
    with Database.open(tmp_path) as db:
        schema = db.schema()
        keys = {t.name: t.primary_key for t in schema.tables}
        assert keys == {"teams": ("id",), "team": ("id",), "players": (), "coaches": ("coach_id",), "games": ()}
        assert schema.foreign_keys == ()  # team_id: two tables; coach_id: a value no coach has


def test_foreign_keys_that_close_a_cycle_are_left_out_and_the_rest_kept(tmp_path: Path, cache: Path) -> None:
    need_extra("duckdb")
    import duckdb

    from sqlweave.db.infer_keys import declare_keys, infer_keys

    con = duckdb.connect()
    con.execute("CREATE TABLE authors AS SELECT * FROM (VALUES (1, 10)) t(author_id, book_id)")
    con.execute("CREATE TABLE books AS SELECT * FROM (VALUES (10, 1)) t(book_id, author_id)")
    keys = infer_keys(con, ["authors", "books"])
    assert sorted(keys.foreign) == [("authors", "book_id", "books", "book_id"),
                                    ("books", "author_id", "authors", "author_id")]
    assert len(declare_keys(con, keys)) == 1
    kinds = con.execute("SELECT constraint_type, COUNT(*) FROM duckdb_constraints() "
                        "WHERE constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY') GROUP BY 1 ORDER BY 1").fetchall()
    assert kinds == [("FOREIGN KEY", 1), ("PRIMARY KEY", 2)]
    assert con.execute("SELECT COUNT(*) FROM authors JOIN books USING (book_id)").fetchone() == (1,)


def test_a_value_far_down_that_breaks_the_guessed_type_makes_the_column_text(tmp_path: Path, cache: Path) -> None:
    need_extra("duckdb")
    # DuckDB guesses types from the first rows; a lap time after 25,000 speeds would stop the copy
    lines = ["lap,speed"] + [f"{i},{200 + i % 7}.5" for i in range(25_000)] + ["25000,01:42.6"]
    (tmp_path / "laps.csv").write_text("\n".join(lines) + "\n")
    with Database.open(tmp_path / "laps.csv") as db:
        speed = {c.name: c.type.upper() for c in db.schema().table("laps").columns}["speed"]
        assert speed == "VARCHAR"
        assert db.execute("SELECT speed FROM laps WHERE lap = 25000").rows == (("01:42.6",),)
        assert db.execute("SELECT COUNT(*) FROM laps").rows == ((25_001,),)


def test_a_first_column_named_after_its_table_is_its_key_but_not_one_named_after_another(tmp_path: Path,
                                                                                         cache: Path) -> None:
    need_extra("duckdb")
    (tmp_path / "airports.csv").write_text("AirportCode,name\nAPG,Alton\nABR,Aberdeen\n")
    (tmp_path / "routes.csv").write_text("route_id,AirportCode\n1,APG\n2,APG\n")
    (tmp_path / "films.csv").write_text("film_id,title\n1,Up\n2,Heat\n")
    (tmp_path / "film_category.csv").write_text("film_id,category\n1,drama\n2,crime\n")  # unique, yet films' key
    with Database.open(tmp_path) as db:
        schema = db.schema()
        keys = {t.name: t.primary_key for t in schema.tables}
        assert keys == {"airports": ("AirportCode",), "routes": ("route_id",), "films": ("film_id",),
                        "film_category": ()}
        assert {(f.table, f.column, f.ref_table) for f in schema.foreign_keys} == {
            ("routes", "AirportCode", "airports"), ("film_category", "film_id", "films")}


def test_a_column_that_names_a_key_or_its_table_refers_to_it_when_the_values_agree(tmp_path: Path,
                                                                                  cache: Path) -> None:
    need_extra("duckdb")
    (tmp_path / "staff.csv").write_text("staff_id,name\n1,Ann\n2,Bo\n")
    (tmp_path / "campuses.csv").write_text("id,town\n1,Fresno\n2,Chico\n")
    (tmp_path / "aircraft.csv").write_text("aircraft_id,model\n7,Jet\n8,Prop\n")
    (tmp_path / "makers.csv").write_text("code,name\n1,Acme\n2,Bolt\n")  # keyed by a name that says no table
    (tmp_path / "parts.csv").write_text("part_id,code\n1,1\n2,1\n")
    (tmp_path / "visits.csv").write_text(
        "visit_id,reported_by_staff_id,staff_id_2,campus,winning_aircraft,staff_count,other_staff_id,country_code\n"
        "1,1,2,2,8,1,9,1\n2,2,1,1,7,2,1,2\n")
    with Database.open(tmp_path) as db:
        found = {(f.table, f.column, f.ref_table, f.ref_column) for f in db.schema().foreign_keys}
    # a word before the key's name, a number after it, the table's name (with a word before it); staff_count
    # names no key, other_staff_id holds a value (9) that is no staff member's key, and country_code is no
    # maker's code, though its values are
    assert found == {("visits", "reported_by_staff_id", "staff", "staff_id"),
                     ("visits", "staff_id_2", "staff", "staff_id"), ("visits", "campus", "campuses", "id"),
                     ("visits", "winning_aircraft", "aircraft", "aircraft_id"), ("parts", "code", "makers", "code")}


def test_a_plural_in_ies_names_its_key_in_either_singular(tmp_path: Path, cache: Path) -> None:
    need_extra("duckdb")
    (tmp_path / "movies.csv").write_text("id,title\nm1,Up\nm2,Heat\n")
    (tmp_path / "categories.csv").write_text("id,name\nc1,drama\n")
    (tmp_path / "ratings.csv").write_text("rating_id,movie_id,category_id,stars\n1,m1,c1,4\n2,m2,c1,5\n")
    with Database.open(tmp_path) as db:
        found = {(f.column, f.ref_table) for f in db.schema().foreign_keys}
    assert found == {("movie_id", "movies"), ("category_id", "categories")}


def test_a_first_column_is_a_key_when_another_table_refers_to_it_by_its_name(tmp_path: Path, cache: Path) -> None:
    need_extra("duckdb")
    (tmp_path / "apartments.csv").write_text("apt_id,rooms\n10,2\n11,3\n")  # not named after its table
    (tmp_path / "bookings.csv").write_text("booking_id,apt_id\n1,10\n2,10\n3,11\n")
    (tmp_path / "readings.csv").write_text("sensor_no,value\n1,2.5\n2,3.5\n")  # no table refers to it
    (tmp_path / "north.csv").write_text("unit_no,name\n1,A\n2,B\n")  # two tables keyed by one name:
    (tmp_path / "south.csv").write_text("unit_no,name\n1,C\n2,D\n")  # which one is meant is not known
    (tmp_path / "repairs.csv").write_text("repair_id,unit_no\n1,1\n2,2\n")
    with Database.open(tmp_path) as db:
        schema = db.schema()
        keys = {t.name: t.primary_key for t in schema.tables}
        assert keys == {"apartments": ("apt_id",), "bookings": ("booking_id",), "readings": (), "north": (),
                        "south": (), "repairs": ("repair_id",)}
        assert {(f.table, f.column, f.ref_table) for f in schema.foreign_keys} == {("bookings", "apt_id",
                                                                                    "apartments")}


def test_a_copy_without_keys_is_kept_apart_from_the_copy_with_them(folder: Path, cache: Path) -> None:
    (folder / "orders.csv").write_text("order_id,person_id\n1,1\n")
    (folder / "persons.csv").write_text("person_id,name\n1,Ann\n")
    with_keys, without = data_database(folder), data_database(folder, keys=False)
    assert with_keys != without and with_keys.is_file() and without.is_file()  # neither build removed the other
    with Database.open(with_keys) as a, Database.open(without, keys_from_data=False) as b:
        assert a.schema().foreign_keys and a.schema().table("persons").primary_key == ("person_id",)
        assert not a.schema().keys_from_data  # declared on the copy
        assert not b.schema().foreign_keys and all(not t.primary_key for t in b.schema().tables)
    with Database.open(without) as c:  # the copy without keys, read as sqlweave reads a keyless database
        assert c.schema().keys_from_data and {str(f) for f in a.schema().foreign_keys} == {
            str(f) for f in c.schema().foreign_keys}


def test_keys_duckdb_refuses_leave_their_table_as_it_was_loaded(tmp_path: Path) -> None:
    need_extra("duckdb")
    import duckdb

    from sqlweave.db.infer_keys import Keys, declare_keys

    con = duckdb.connect()
    con.execute("CREATE TABLE teams AS SELECT * FROM (VALUES (1, 'Red')) t(team_id, name)")
    con.execute("CREATE TABLE players AS SELECT * FROM (VALUES ('p1', '1')) t(player_id, team_id)")  # text
    keys = Keys({"teams": "team_id", "players": "player_id"}, [("players", "team_id", "teams", "team_id")])
    assert declare_keys(con, keys) == [("players", "team_id", "teams", "team_id")]  # a text column: refused
    assert con.execute("SELECT * FROM players").fetchall() == [("p1", "1")]
    kinds = con.execute("SELECT table_name, constraint_type FROM duckdb_constraints() "
                        "WHERE constraint_type = 'PRIMARY KEY' ORDER BY 1").fetchall()
    assert kinds == [("teams", "PRIMARY KEY")]
    assert con.execute("SHOW TABLES").fetchall() == [("players",), ("teams",)]  # no table left half-made


def test_scripts_postgres_sh_loads_a_folder_of_data_files(folder: Path, cache: Path, pg_server) -> None:
    # README: "load takes ... data files"; the script used to refuse anything but a file
    url = pg_server.load("shop_files", folder)
    with Database.open(url.replace("postgresql+psycopg://", "postgresql://")) as db:
        assert sorted(db.schema().table_names) == ["events", "people", "tiers", "visits"]
        assert db.execute("SELECT COUNT(*) FROM people").rows == ((3,),)
