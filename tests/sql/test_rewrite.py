"""Rule-based meaning rewrites: a needless join dropped, a name grouping keyed, and the many cases left alone."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlweave.database import Database
from sqlweave.sql.name_keys import name_keys
from sqlweave.sql.rewrite import relink_values, rewrite_query
from sqlweave.stages.rewrite import value_probe
from sqlweave.sql.validate import parse_one, schema_issues

JOIN_SIC = "JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID"


@pytest.fixture
def db(singer_db: Path):
    database = Database.open(singer_db)
    yield database
    database.close()


@pytest.mark.parametrize(("question", "sql", "expected"), [
    # A table joined only to be joined, never named by the question.
    ("What is the name of the oldest singer?",
     f"SELECT T1.Name FROM singer AS T1 {JOIN_SIC} ORDER BY T1.Age DESC LIMIT 1",
     "SELECT T1.Name FROM singer AS T1 ORDER BY T1.Age DESC LIMIT 1"),
    # The FROM table is the needless one: the joined table takes its place.
    ("Names of singers older than 30",
     "SELECT T2.Name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.Singer_ID = T2.Singer_ID WHERE T2.Age > 30",
     "SELECT T2.Name FROM singer AS T2 WHERE T2.Age > 30"),
    # Unqualified columns are read against the schema; the last needless join of a chain goes first.
    ("Which stadiums have a capacity above 5000?",
     "SELECT Location FROM stadium JOIN concert ON stadium.Stadium_ID = concert.Stadium_ID WHERE Capacity > 5000",
     "SELECT Location FROM stadium WHERE Capacity > 5000"),
])
def test_a_needless_join_is_dropped(db, question: str, sql: str, expected: str) -> None:
    rewrite = rewrite_query(sql, db.schema(), question)
    assert rewrite.sql == expected
    assert rewrite.changes and rewrite.changes[0].startswith("dropped the join of")
    assert schema_issues(rewrite.sql, db.schema()) == []
    # Without the join, every row of the table reads (the join could only have removed or repeated rows).
    before, after = db.execute(sql).rows, db.execute(rewrite.sql).rows
    assert set(before) <= set(after) if "LIMIT" not in sql else len(after) == len(before)


@pytest.mark.parametrize(("question", "sql"), [
    # The question names the joined table: the join is what it asks for.
    ("Which singers performed in a concert?", f"SELECT T1.Name FROM singer AS T1 {JOIN_SIC}"),
    ("Names of singers in concerts", f"SELECT T1.Name FROM singer AS T1 {JOIN_SIC}"),
    # Counting: the join decides what is counted.
    ("How many appearances did each artist make?", f"SELECT T1.Name, count(*) FROM singer AS T1 {JOIN_SIC} GROUP BY T1.Singer_ID"),
    ("How many performers are there?", f"SELECT count(*) FROM singer AS T1 {JOIN_SIC}"),
    # Grouped aggregates over the joined rows.
    ("Average age per country of performers", f"SELECT T1.Country, avg(T1.Age) FROM singer AS T1 {JOIN_SIC} GROUP BY T1.Country"),
    # The joined table's columns are used.
    ("Which show ids had what artists?", f"SELECT T1.Name, T2.concert_ID FROM singer AS T1 {JOIN_SIC}"),
    ("Artists of show 1", f"SELECT T1.Name FROM singer AS T1 {JOIN_SIC} WHERE T2.concert_ID = 1"),
    # A bridge between two tables the query needs.
    ("Artists and the shows they played",
     f"SELECT T1.Name, T3.Theme FROM singer AS T1 {JOIN_SIC} JOIN concert AS T3 ON T2.concert_ID = T3.concert_ID"),
    # Outer joins, stars and cross joins are left alone.
    ("Artists", f"SELECT T1.Name FROM singer AS T1 LEFT JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID"),
    ("Everything about artists", f"SELECT * FROM singer AS T1 {JOIN_SIC}"),
    ("Artists", "SELECT T1.Name FROM singer AS T1, singer_in_concert AS T2"),
    # An unqualified column two joined tables share: whose it is cannot be told.
    ("Artists", f"SELECT Singer_ID FROM singer AS T1 {JOIN_SIC}"),
    # The alias also names a table in a subquery: left alone.
    ("Artists", f"SELECT T1.Name FROM singer AS T1 {JOIN_SIC} WHERE T1.Age > (SELECT avg(T2.Age) FROM singer AS T2)"),
    # No join, a set operation of single tables, and text that is not SQL.
    ("Artists", "SELECT Name FROM singer"),
    ("Artists", "SELECT Name FROM singer UNION SELECT Name FROM stadium"),
    ("Artists", "SELECT FROM WHERE"),
])
def test_joins_that_may_matter_are_kept(db, question: str, sql: str) -> None:
    rewrite = rewrite_query(sql, db.schema(), question)
    assert not rewrite.changed and rewrite.sql == sql


def test_drop_joins_false_keeps_every_join(db) -> None:
    sql = f"SELECT T1.Name FROM singer AS T1 {JOIN_SIC} ORDER BY T1.Age DESC LIMIT 1"
    assert rewrite_query(sql, db.schema(), "Le nom du chanteur le plus âgé ?", drop_joins=False).sql == sql


def test_needless_joins_are_dropped_one_at_a_time(db) -> None:
    # In a subquery as well as in the outer query, each drop read on what the last one left.
    sql = ("SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID "
           "WHERE T1.Age > (SELECT max(S.Capacity) FROM stadium AS S JOIN concert AS C ON S.Stadium_ID = C.Stadium_ID)")
    rewrite = rewrite_query(sql, db.schema(), "Who is older than the largest venue holds?")
    assert len(rewrite.changes) == 2 and "JOIN" not in rewrite.sql
    # A chain: the concert's join is needless, and once it is gone so is the bridge that led to it.
    chain = (f"SELECT T1.Name FROM singer AS T1 {JOIN_SIC} JOIN concert AS T3 ON T2.concert_ID = T3.concert_ID "
             "WHERE T1.Age > 40")
    rewrite = rewrite_query(chain, db.schema(), "Names of the singers older than 40")
    assert rewrite.sql == "SELECT T1.Name FROM singer AS T1 WHERE T1.Age > 40"
    assert [c.split(" (")[0] for c in rewrite.changes] == ["dropped the join of concert",
                                                           "dropped the join of singer_in_concert"]
    # The question names the concert: it stays, and so does the bridge that leads to it.
    assert not rewrite_query(chain, db.schema(), "Names of the singers older than 40 in a concert").changed


def test_a_name_grouping_gains_the_key_of_its_table(db) -> None:
    sql = f"SELECT T1.Name, count(*) FROM singer AS T1 {JOIN_SIC} GROUP BY T1.Name"
    rewrite = rewrite_query(sql, db.schema(), "How many concerts has each singer performed in?")
    assert rewrite.sql.endswith("GROUP BY T1.Name, T1.Singer_ID")
    assert rewrite.changes == ["grouped by T1.Singer_ID as well as by T1.Name (one group per row of singer)"]
    # One row per singer who performed, whatever their names.
    performers = db.execute("SELECT count(DISTINCT Singer_ID) FROM singer_in_concert").rows[0][0]
    assert len(db.execute(rewrite.sql).rows) == performers


def test_a_grouping_written_without_aliases_is_keyed_by_the_table_name(db) -> None:
    sql = ("SELECT singer.Name, count(*) FROM singer JOIN singer_in_concert "
           "ON singer.Singer_ID = singer_in_concert.Singer_ID GROUP BY Name")
    assert rewrite_query(sql, db.schema(), "Concerts per singer").sql.endswith("GROUP BY Name, singer.Singer_ID")


@pytest.mark.parametrize("sql", [
    # A category, not an entity's name.
    f"SELECT T1.Country, count(*) FROM singer AS T1 {JOIN_SIC} GROUP BY T1.Country",
    # Already grouped by the key.
    f"SELECT T1.Name, count(*) FROM singer AS T1 {JOIN_SIC} GROUP BY T1.Singer_ID",
    # No join: the table's own rows are grouped.
    "SELECT Name, count(*) FROM singer GROUP BY Name",
    # The table is not joined on its key (the grouping's table has no single-column key here).
    "SELECT T2.concert_ID, count(*) FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID "
    "GROUP BY T2.concert_ID",
    # Names of two tables.
    "SELECT T1.Name, T3.concert_Name, count(*) FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = "
    "T2.Singer_ID JOIN concert AS T3 ON T2.concert_ID = T3.concert_ID GROUP BY T1.Name, T3.concert_Name",
])
def test_other_groupings_are_kept(db, sql: str) -> None:
    assert not rewrite_query(sql, db.schema(), "How many per group?").changed


_TABLES = {
    "singer": ("Name", "Age", "Country"),
    "stadium": ("Name", "Location", "Capacity"),
    "concert": ("concert_Name", "Theme", "Year"),
}
_LINKS = {  # a second table reachable from each, with its join condition
    "singer": ("singer_in_concert", "T1.Singer_ID = T2.Singer_ID"),
    "stadium": ("concert", "T1.Stadium_ID = T2.Stadium_ID"),
    "concert": ("singer_in_concert", "T1.concert_ID = T2.concert_ID"),
}


@st.composite
def join_queries(draw: st.DrawFn) -> str:
    table = draw(st.sampled_from(sorted(_TABLES)))
    other, on = _LINKS[table]
    cols = draw(st.lists(st.sampled_from(_TABLES[table]), min_size=1, max_size=3, unique=True))
    select = ", ".join(f"T1.{c}" for c in cols)
    if draw(st.booleans()):
        select += ", count(*)"
    sql = f"SELECT {select} FROM {table} AS T1 JOIN {other} AS T2 ON {on}"
    if draw(st.booleans()):
        sql += f" WHERE T1.{draw(st.sampled_from(_TABLES[table]))} IS NOT NULL"
    if "count" in select or draw(st.booleans()):
        sql += " GROUP BY " + ", ".join(f"T1.{c}" for c in cols)
    if draw(st.booleans()):
        sql += f" ORDER BY T1.{cols[0]} DESC LIMIT {draw(st.integers(1, 5))}"
    return sql


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=join_queries(), question=st.sampled_from(["List them", "Which ones are in concerts?", "Oldest first"]))
def test_every_rewrite_runs_and_keeps_the_output_columns(db, sql: str, question: str) -> None:
    rewrite = rewrite_query(sql, db.schema(), question)
    before = db.execute(sql)
    after = db.execute(rewrite.sql)  # raises if the rewrite broke the query
    assert len(after.columns) == len(before.columns)
    parse_one(rewrite.sql)
    if "count(*)" in sql.lower():
        assert "JOIN" in rewrite.sql  # a counting query keeps its join


# --- texts compared with the column that holds them (relink_values, asking the database) ----------------------

@pytest.mark.parametrize(("sql", "expected", "rows"), [
    # No singer is named 'France'; the country column holds it: the answer had no rows and now has them.
    ("SELECT Name FROM singer WHERE Name = 'France' ORDER BY Age",
     "SELECT Name FROM singer WHERE Country = 'France' ORDER BY Age", 4),
    # A count of nothing is still a wrong answer: 0 becomes the count asked for. The text may come first.
    ("SELECT count(*) FROM singer WHERE 'France' = Song_Name", "SELECT COUNT(*) FROM singer WHERE 'France' = Country",
     4),
    # Qualified by an alias, in a join; quoted names stay quoted.
    ('SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID '
     'WHERE T1."Name" = \'United States\'',
     'SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID '
     'WHERE T1."Country" = \'United States\'', 2),
    # Inside a subquery, against that subquery's own table.
    ("SELECT Name FROM stadium WHERE Stadium_ID IN (SELECT Stadium_ID FROM concert WHERE Theme = 'Week 1')",
     "SELECT Name FROM stadium WHERE Stadium_ID IN (SELECT Stadium_ID FROM concert WHERE concert_Name = 'Week 1')",
     2),
])
def test_a_text_is_compared_with_the_column_that_holds_it(db, sql: str, expected: str, rows: int) -> None:
    relinked = relink_values(sql, db.schema(), value_probe(db))
    assert relinked.sql == expected
    assert len(relinked.changes) == 1 and "which holds it" in relinked.changes[0]
    result = db.execute(relinked.sql).rows
    assert (result[0][0] if sql.startswith("SELECT count") else len(result)) == rows


@pytest.mark.parametrize("sql", [
    "SELECT Name FROM singer WHERE Country = 'France'",  # the column holds it
    "SELECT Name FROM singer WHERE Country = 'Atlantis'",  # no column holds it
    "SELECT Name FROM singer WHERE Country LIKE 'Franc%'",  # only equality is read
    "SELECT Name FROM singer WHERE Age = 52",  # numbers are left alone
    "SELECT Name FROM singer WHERE upper(Country) = 'FRANCE'",  # not a bare column
    "SELECT Name AS Country FROM singer ORDER BY Country = 'x'",  # an output alias, not a column
])
def test_other_comparisons_are_left_alone(db, sql: str) -> None:
    assert not relink_values(sql, db.schema(), value_probe(db)).changed


def test_a_text_held_by_two_other_columns_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "people.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, city TEXT, birthplace TEXT)")
        con.executemany("INSERT INTO person VALUES (?, ?, ?, ?)",
                        [(1, "Ann", "Paris", "Lyon"), (2, "Bob", "Lyon", "Paris"), (3, "Cy", "Rome", "Rome")])
    database = Database.open(path)
    try:
        holds = value_probe(database)
        assert not relink_values("SELECT name FROM person WHERE name = 'Paris'", database.schema(), holds).changed
        one = relink_values("SELECT name FROM person WHERE name = 'Lyon' AND city = 'Rome'", database.schema(), holds)
        assert one.sql == "SELECT name FROM person WHERE name = 'Lyon' AND city = 'Rome'"
        moved = relink_values("SELECT id FROM person WHERE city = 'Ann'", database.schema(), holds)
        assert moved.sql == "SELECT id FROM person WHERE name = 'Ann'"  # one other column holds it
    finally:
        database.close()


def test_a_database_that_cannot_tell_changes_nothing(db) -> None:
    asked: list[tuple[str, str, str]] = []

    def unsure(table: str, column: str, value: str) -> None:
        asked.append((table, column, value))
        return None

    assert not relink_values("SELECT Name FROM singer WHERE Name = 'France'", db.schema(), unsure).changed
    assert asked == [("singer", "Name", "France")]  # nothing is probed further once the first answer is unsure


def test_probes_stop_at_their_budget(db) -> None:
    assert value_probe(db)("singer", "Country", "France") is True
    spent = value_probe(db, budget_s=0.0)
    assert spent("singer", "Country", "France") is None  # no time left: cannot tell, and nothing is asked
    assert not relink_values("SELECT Name FROM singer WHERE Name = 'France'", db.schema(), spent).changed


def test_a_column_that_cannot_be_told_stops_the_relink(db) -> None:
    answers = {("singer", "Name", "France"): False, ("singer", "Country", "France"): True}
    holds = lambda t, c, v: answers.get((t, c, v))  # noqa: E731 - every other column: cannot tell
    assert not relink_values("SELECT Name FROM singer WHERE Name = 'France'", db.schema(), holds).changed
    answers.update({("singer", c, "France"): False for c in ("Song_Name", "Song_release_year", "Is_male")})
    assert relink_values("SELECT Name FROM singer WHERE Name = 'France'", db.schema(), holds).changed


# --- "both" read as an intersection -------------------------------------------------------------------------

STADIUM_CONCERT = "FROM stadium AS T1 JOIN concert AS T2 ON T1.Stadium_ID = T2.Stadium_ID"


@pytest.mark.parametrize("where", ["T2.Year IN ('2014', '2015')", "(T2.Year = '2014' OR T2.Year = '2015')",
                                   "(T2.Year = '2014' OR '2015' = T2.Year)"])
def test_both_values_of_a_joined_table_ask_for_an_intersection(db, where: str) -> None:
    sql = f"SELECT T1.Name, T1.Location {STADIUM_CONCERT} WHERE T1.Capacity > 0 AND {where}"
    question = "Which stadiums had concerts in both 2014 and 2015?"
    rewrite = rewrite_query(sql, db.schema(), question)
    assert rewrite.changes == ["kept what has both '2014' and '2015' (INTERSECT), not either"]
    assert rewrite.sql == (f"SELECT T1.Name, T1.Location {STADIUM_CONCERT} WHERE T1.Capacity > 0 AND T2.Year = '2014' "
                           f"INTERSECT SELECT T1.Name, T1.Location {STADIUM_CONCERT} WHERE T1.Capacity > 0 "
                           "AND T2.Year = '2015'")
    either = {r[0] for r in db.execute(sql).rows}
    both = {r[0] for r in db.execute(rewrite.sql).rows}
    in_2014 = {r[0] for r in db.execute(f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014'").rows}
    in_2015 = {r[0] for r in db.execute(f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2015'").rows}
    assert both == in_2014 & in_2015 and both < either


@pytest.mark.parametrize(("question", "sql"), [
    # No "both" in the question: either is meant.
    ("Which stadiums had concerts in 2014 or 2015?", f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year IN ('2014', '2015')"),
    # A value the question does not say.
    ("Which stadiums had concerts in both years?", f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year IN ('2014', '2015')"),
    # The filter is on the table selected from: "the capacities of both A and B" lists two rows.
    ("What are the capacities of both Stark's Park and Glebe Park?",
     "SELECT Capacity FROM stadium WHERE Name IN ('Stark''s Park', 'Glebe Park')"),
    ("What are the capacities of both Stark's Park and Glebe Park?",
     f"SELECT T1.Capacity {STADIUM_CONCERT} WHERE T1.Name IN ('Stark''s Park', 'Glebe Park')"),
    # Three values, an aggregate, a grouping, an ordering or a set operation already: left alone.
    ("Stadiums with concerts in both 2013, 2014 and 2015",
     f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year IN ('2013', '2014', '2015')"),
    ("How many concerts in both 2014 and 2015?", f"SELECT count(*) {STADIUM_CONCERT} WHERE T2.Year IN ('2014', '2015')"),
    ("Stadiums in both 2014 and 2015", f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year IN ('2014', '2015') GROUP BY T1.Name"),
    ("Stadiums in both 2014 and 2015",
     f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year IN ('2014', '2015') ORDER BY T1.Name"),
    ("Stadiums in both 2014 and 2015", f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014' INTERSECT "
                                       f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2015'"),
    # Two different columns.
    ("Stadiums in both 2014 and Week 1", f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014' OR T2.Theme = 'Week 1'"),
])
def test_other_readings_of_both_are_left_alone(db, question: str, sql: str) -> None:
    rewrite = rewrite_query(sql, db.schema(), question)
    assert not any("INTERSECT" in c for c in rewrite.changes)
    assert rewrite.sql.count("INTERSECT") == sql.count("INTERSECT")


def test_a_needless_join_is_dropped_on_each_side_of_the_intersection(db) -> None:
    sql = (f"SELECT T1.Name {STADIUM_CONCERT} JOIN singer_in_concert AS T3 ON T2.concert_ID = T3.concert_ID "
           "WHERE T2.Year IN ('2014', '2015')")
    rewrite = rewrite_query(sql, db.schema(), "Which stadiums had concerts in both 2014 and 2015?")
    assert rewrite.changes == ["kept what has both '2014' and '2015' (INTERSECT), not either"] + [
        "dropped the join of singer_in_concert (the question needs none of its columns)"] * 2
    assert rewrite.sql == (f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014' INTERSECT "
                           f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2015'")


def test_both_values_asked_of_one_column_at_once_read_as_an_intersection(db) -> None:
    # "c = a AND c = b" keeps no row: the model wrote "both" literally; it is rewritten for an empty answer too.
    sql = f"SELECT T1.Name {STADIUM_CONCERT} WHERE T1.Capacity > 0 AND T2.Year = '2014' AND T2.Year = '2015'"
    assert db.execute(sql).rows == ()
    rewrite = rewrite_query(sql, db.schema(), "Which stadiums had concerts in both 2014 and 2015?",
                            only_set_operations=True)
    assert rewrite.changes == ["kept what has both '2014' and '2015' (INTERSECT), not either"]
    in_2014 = {r[0] for r in db.execute(f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014'").rows}
    in_2015 = {r[0] for r in db.execute(f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2015'").rows}
    assert {r[0] for r in db.execute(rewrite.sql).rows} == in_2014 & in_2015 != set()
    # Without "both" in the question, "and" may list either: left alone.
    assert not rewrite_query(sql, db.schema(), "Stadiums with concerts in 2014 and 2015").changed


def test_both_is_read_only_in_english(db) -> None:
    sql = f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year IN ('2014', '2015')"
    assert not rewrite_query(sql, db.schema(), "Stadiums with concerts in both 2014 and 2015",
                             drop_joins=False).changed


# --- "a but not b" read as a difference -----------------------------------------------------------------------

BUT_NOT = "Which stadiums had concerts in 2014 but not in 2015?"


@pytest.mark.parametrize("excluded", ["T2.Year <> '2015'", "T2.Year != '2015'", "NOT T2.Year = '2015'",
                                      "T2.Year NOT IN ('2015')", "'2015' <> T2.Year"])
def test_a_value_kept_and_another_excluded_on_one_column_read_as_a_difference(db, excluded: str) -> None:
    # As written, "<> '2015'" adds nothing to "= '2014'": the stadiums that also had a 2015 concert stay.
    sql = f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014' AND {excluded}"
    rewrite = rewrite_query(sql, db.schema(), BUT_NOT)
    assert rewrite.changes == ["kept what has '2014' EXCEPT what has '2015'"]
    plural = rewrite_query(sql.replace("'2014'", "'Week'"), db.schema(), "Stadiums with Weeks but not 2015")
    assert plural.changes == ["kept what has 'Week' EXCEPT what has '2015'"]  # a plural says its value
    assert rewrite.sql == (f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014' EXCEPT "
                           f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2015'")
    in_2014 = {r[0] for r in db.execute(f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014'").rows}
    in_2015 = {r[0] for r in db.execute(f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2015'").rows}
    assert {r[0] for r in db.execute(sql).rows} == in_2014
    assert {r[0] for r in db.execute(rewrite.sql).rows} == in_2014 - in_2015 != in_2014


@pytest.mark.parametrize(("question", "sql"), [
    # A value the question does not say.
    ("Which stadiums had concerts in 2014 and none later?",
     f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014' AND T2.Year <> '2015'"),
    # Two columns: each condition says something.
    ("Stadiums with concerts in 2014 but not Week 1",
     f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014' AND T2.Theme <> 'Week 1'"),
    # A value the question holds only inside a word ("t" of "stadiums"): not said.
    ("Which stadiums had concerts in 2014 but not in 2015?",
     f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014' AND T2.Theme <> 'Week 1' AND T2.Theme = 't' "
     "AND T2.Theme <> 's'"),
    # One value both kept and excluded, a count, a grouping, an ordering: left alone.
    (BUT_NOT, f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014' AND T2.Year <> '2014'"),
    (BUT_NOT, f"SELECT count(*) {STADIUM_CONCERT} WHERE T2.Year = '2014' AND T2.Year <> '2015'"),
    (BUT_NOT, f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014' AND T2.Year <> '2015' GROUP BY T1.Name"),
    (BUT_NOT, f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014' AND T2.Year <> '2015' ORDER BY T1.Name"),
    # Excluding two values at once is another reading.
    (BUT_NOT, f"SELECT T1.Name {STADIUM_CONCERT} WHERE T2.Year = '2014' AND T2.Year NOT IN ('2015', '2016')"),
])
def test_other_readings_of_but_not_are_left_alone(db, question: str, sql: str) -> None:
    rewrite = rewrite_query(sql, db.schema(), question)
    assert "EXCEPT" not in rewrite.sql and not any("EXCEPT" in c for c in rewrite.changes)


def test_only_set_operations_reads_but_not_and_keeps_every_join(db) -> None:
    question = "Which singers are from France but not the Netherlands?"
    sql = f"SELECT T1.Name FROM singer AS T1 {JOIN_SIC} WHERE T1.Country = 'France' AND T1.Country <> 'Netherlands'"
    read = rewrite_query(sql, db.schema(), question, only_set_operations=True)
    assert read.changes == ["kept what has 'France' EXCEPT what has 'Netherlands'"]
    assert read.sql.count("JOIN singer_in_concert") == 2
    # The same needless join with nothing to read as a set operation: dropped, unless only those are read.
    plain = f"SELECT T1.Name FROM singer AS T1 {JOIN_SIC} WHERE T1.Country = 'France'"
    dropped = rewrite_query(plain, db.schema(), question)
    assert dropped.sql == "SELECT T1.Name FROM singer AS T1 WHERE T1.Country = 'France'"
    assert not rewrite_query(plain, db.schema(), question, only_set_operations=True).changed


# --- a key shown where the question asks for no ids: the name of the row it refers to ----------------------

def test_a_key_shown_where_no_id_is_asked_is_followed_by_the_name_of_its_row(db) -> None:
    sql = f"SELECT T1.Name, T2.concert_ID FROM singer AS T1 {JOIN_SIC}"
    rewrite = name_keys(sql, db.schema(), "Which shows had what artists?")
    assert rewrite.sql == (f"SELECT T1.Name, T2.concert_ID, concert.concert_Name AS concert_Name FROM singer AS T1 "
                           f"{JOIN_SIC} LEFT JOIN concert ON concert.concert_ID = T2.concert_ID")
    assert rewrite.changes == ["named the rows the keys T2.concert_ID (concert_Name of concert) refer to "
                               "(the question asks for no ids)"]
    before, after = db.execute(sql).rows, db.execute(rewrite.sql).rows
    assert [row[:2] for row in after] == list(before)  # the same rows, in the same order, each with its name
    names = dict(db.execute("SELECT concert_ID, concert_Name FROM concert").rows)
    assert all(name == names[key] for _, key, name in after)


def test_a_key_to_its_own_table_names_the_row_and_keeps_rows_without_one(tmp_path: Path) -> None:
    from sqlweave.db.demo import demo_database_path

    with Database.open(demo_database_path()) as shop:
        sql = "SELECT e.manager_id, e.first_name, e.last_name FROM employees e"
        rewrite = name_keys(sql, shop.schema(), "Who is the manager of each employee?")
        assert rewrite.sql == (
            "SELECT e.manager_id, manager.first_name AS manager_first_name, manager.last_name AS manager_last_name, "
            "e.first_name, e.last_name FROM employees AS e LEFT JOIN employees AS manager ON "
            "manager.employee_id = e.manager_id")
        rows = shop.execute(rewrite.sql).rows
        assert len(rows) == len(shop.execute(sql).rows)
        assert (None, None, None) in {row[:3] for row in rows}  # the store manager has none: kept, not dropped


def test_names_need_quoting_where_an_engine_reserves_them(tmp_path: Path) -> None:
    path = tmp_path / "orders.sqlite"
    with sqlite3.connect(path) as con:
        con.executescript("""
            CREATE TABLE "user" (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE "order" (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES "user"(id), total REAL);
            INSERT INTO "user" VALUES (1, 'Ada'), (2, 'Grace');
            INSERT INTO "order" VALUES (10, 1, 5.0), (11, 2, 7.5), (12, 1, 1.0);
        """)
    with Database.open(path) as shop:
        rewrite = name_keys('SELECT total, user_id FROM "order" WHERE total > 2', shop.schema(),
                                "Who placed the orders over 2?")
        assert rewrite.sql == ('SELECT "order".total, "order".user_id, "user".name AS user_name FROM "order" '
                               'LEFT JOIN "user" ON "user".id = "order".user_id WHERE "order".total > 2')
        assert shop.execute(rewrite.sql).rows == ((5.0, 1, "Ada"), (7.5, 2, "Grace"))


@pytest.mark.parametrize(("question", "sql"), [
    # The question asks for ids, in any words.
    ("Which show ids had what artists?", f"SELECT T1.Name, T2.concert_ID FROM singer AS T1 {JOIN_SIC}"),
    ("List the concert ID of each appearance", "SELECT concert_ID FROM singer_in_concert"),
    ("Quels identifiants de concert ?", "SELECT concert_ID FROM singer_in_concert"),
    # A key that labels groups, or an aggregate: the count is what is asked.
    ("How many singers did each show have?", "SELECT concert_ID, count(*) FROM singer_in_concert GROUP BY concert_ID"),
    ("Highest show", "SELECT max(concert_ID) FROM singer_in_concert"),
    # The key of the selected row itself, and a column that is no key.
    ("Which singers are there?", "SELECT Singer_ID, Name FROM singer"),
    ("Which stadiums?", "SELECT Name, Capacity FROM stadium"),
    # Positional ordering, subqueries, stars, set operations: left alone.
    ("Shows of each appearance", "SELECT concert_ID, Singer_ID FROM singer_in_concert ORDER BY 2"),
    ("Shows of the oldest",
     "SELECT concert_ID FROM singer_in_concert WHERE Singer_ID IN (SELECT Singer_ID FROM singer)"),
    ("Everything", "SELECT * FROM singer_in_concert"),
    ("Shows", "SELECT concert_ID FROM singer_in_concert UNION SELECT concert_ID FROM concert"),
])
def test_other_keys_are_left_alone(db, question: str, sql: str) -> None:
    rewrite = name_keys(sql, db.schema(), question)
    assert not rewrite.changed and rewrite.sql == sql


def test_only_the_keys_of_a_table_with_names_are_named() -> None:
    from sqlweave.db.demo import demo_database_path

    with Database.open(demo_database_path()) as shop:  # orders has no name or title column
        sql = "SELECT order_id, product_id, quantity FROM order_items"
        rewrite = name_keys(sql, shop.schema(), "What was bought in each order?")
        assert rewrite.sql == ("SELECT order_items.order_id, order_items.product_id, product.name AS product_name, "
                               "order_items.quantity FROM order_items LEFT JOIN products AS product ON "
                               "product.product_id = order_items.product_id")
