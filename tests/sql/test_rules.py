"""The rule registries: each rule named once, run only on its dialects, reported when it fires, with fixtures."""

from __future__ import annotations

import sqlglot

from sqlweave.schema import Column, Schema, Table
from sqlweave.sql.rewrite import REWRITES, apply_rewrites
from sqlweave.sql.rules import PHASES, Context, Rule, apply
from sqlweave.sql.rules.into_sqlite import INTO_SQLITE
from sqlweave.sql.transpile import to_dialect, to_dialect_fired
from sqlweave.sql.validate import parse_one
from tests.sql.rule_fixtures import FIXTURES, _schema, read_cases

#: Rules whose cases sit in another rule's fixture file.
_SHARED_FILE = {"table_case": "fix_case"}


def test_every_rule_has_one_name_and_a_fixture_file() -> None:
    names = [r.name for rules in PHASES.values() for r in rules] + [r.name for r in REWRITES]
    assert len(names) == len(set(names))
    files = {p.stem for p in FIXTURES.glob("*.sql")}
    assert {_SHARED_FILE.get(n, n) for n in names} <= files
    assert "into_sqlite" in files and len(INTO_SQLITE) == len({n for n, _ in INTO_SQLITE}) == 14


def test_a_rule_runs_only_on_its_dialects() -> None:
    seen: list[str] = []

    def mark(tree, ctx):
        seen.append(ctx.dialect)
        return tree

    rule = Rule("mark", "test", frozenset({"duckdb"}), mark)
    for dialect in ("postgres", "duckdb", "mysql"):
        _, fired = apply(sqlglot.parse_one("SELECT 1"), (rule,), Context(dialect))
        assert fired == (["mark"] if dialect == "duckdb" else [])
    assert seen == ["duckdb"]


def test_a_rule_that_needs_the_schema_does_not_run_without_one() -> None:
    schema_rules = PHASES["schema"]
    assert all("schema" in r.needs for r in schema_rules)
    tree = sqlglot.parse_one("SELECT id FROM t WHERE ok = 1", read="postgres")
    assert apply(tree, schema_rules, Context("postgres"))[1] == []
    s = Schema("x", (Table("t", (Column("id", "INTEGER"), Column("ok", "BOOLEAN"))),), dialect="postgres")
    assert apply(tree, schema_rules, Context("postgres", s))[1] == ["boolean_numbers"]


def test_the_rule_of_each_file_fires_on_its_cases_and_is_reported() -> None:
    """Every to_dialect case that changes its input reports some rule; each file's own rule is reported at least
    once (the foreign-source file reports the dialect the SQL was read as)."""
    for path in sorted(FIXTURES.glob("*.sql")):
        cases = [c for c in read_cases(path) if c.headers.get("entry", "to_dialect") == "to_dialect"]
        reported: set[str] = set()
        for case in cases:
            dialect = case.headers["dialect"]
            schema = _schema(dialect)[case.headers["schema"]] if "schema" in case.headers else None
            out, fired = to_dialect_fired(case.sql, dialect, schema=schema)
            assert out == to_dialect(case.sql, dialect, schema=schema)
            if out != case.sql:
                assert fired, f"{case.id}: changed with no rule reported"
            reported |= set(fired)
        if cases and path.stem not in ("foreign_sources", "into_sqlite"):
            assert path.stem in reported, f"{path.stem} never reported on its own cases"
        if path.stem == "into_sqlite":
            assert len(reported) >= 12
        if path.stem == "foreign_sources":
            assert {"read as sqlite", "read as tsql"} <= reported


def test_rewrites_report_the_rules_that_fired() -> None:
    from tests.sql.rule_fixtures import _schema as schemas

    s = schemas()["music"]
    tree = parse_one("SELECT T1.name, count(*) FROM singer AS T1 JOIN song AS T2 ON T1.singer_id = T2.singer_id "
                     "GROUP BY T1.name", "sqlite")
    _, changes, fired = apply_rewrites(tree, s, "How many songs has each singer?")
    assert fired == ["group_by_key"] and len(changes) == 1
