"""Rule fixtures: one file per SQL rule in ``fixtures/rules/<rule>.sql``, cases of input and expected output.

A file is a list of cases separated by blank lines. A case is ``-- key: value`` header lines, then the input
SQL on one line, then the expected output on the next. Headers stay in force for the following cases of the
same file until set again:

- ``-- dialect: postgres``: the engine the SQL is for (``sqlite``, ``postgres``, ``duckdb``, ``mysql``);
- ``-- entry: to_dialect``: what is called (the keys of :data:`ENTRIES`);
- ``-- schema: shop``: a schema of :data:`SCHEMAS`, for the rules that read one;
- ``-- question: ...``: the question, for the rewrites that read it;
- ``-- holds: table.column=value, ...``: what the database holds, for ``relink_values``.

The tests only compare. After a deliberate change, regenerate the expected lines and read the diff:

    .venv/bin/python -m tests.sql.rule_fixtures --update
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from sqlweave.schema import Column, ForeignKey, Schema, Table
from sqlweave.sql.name_keys import name_keys
from sqlweave.sql.rewrite import relink_values, rewrite_query
from sqlweave.sql.transpile import for_schema, subqueries_as_sets, to_dialect

FIXTURES = Path(__file__).parent / "fixtures" / "rules"


def _schema(dialect: str = "sqlite") -> dict[str, Schema]:
    shop = Schema("shop", (
        Table("event", (Column("id", "INTEGER", primary_key=True), Column("name", "VARCHAR"),
                        Column("city", "VARCHAR"), Column("happened", "DATE"), Column("day", "TEXT"),
                        Column("year", "INTEGER"), Column("ok", "BOOLEAN"), Column("hp", "TEXT"),
                        Column("doc", "JSON"), Column("price", "REAL"))),
        Table("Customer", (Column("Id", "INTEGER", primary_key=True), Column("city", "TEXT"),
                           Column("Name", "TEXT"))),
    ), dialect=dialect)
    music = Schema("music", (
        Table("singer", (Column("singer_id", "INTEGER", primary_key=True), Column("name", "TEXT"),
                         Column("net_worth", "REAL"), Column("country", "TEXT"))),
        Table("song", (Column("song_id", "INTEGER", primary_key=True), Column("singer_id", "INTEGER"),
                       Column("title", "TEXT"), Column("year", "INTEGER"))),
        Table("employees", (Column("id", "INTEGER", primary_key=True), Column("first_name", "TEXT"),
                            Column("last_name", "TEXT"), Column("manager_id", "INTEGER"),
                            Column("dept", "TEXT"))),
        Table("country", (Column("code", "TEXT", primary_key=True), Column("name", "TEXT"),
                          Column("region", "TEXT"), Column("continent", "TEXT"))),
    ), (ForeignKey("song", "singer_id", "singer", "singer_id"),
        ForeignKey("employees", "manager_id", "employees", "id")), dialect=dialect)
    return {"shop": shop, "music": music}


#: Fixture schemas by name (each built for the case's dialect).
SCHEMAS = tuple(_schema())


@dataclass
class Case:
    """One case of a rule file: where it is, its headers, its input and what it is expected to give."""

    file: Path
    line: int
    headers: dict[str, str]
    sql: str
    expected: str | None = None
    extra: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.file.stem}:{self.line}"


def _holds(spec: str) -> Callable[[str, str, str], bool]:
    stored = set()
    for item in filter(None, (s.strip() for s in spec.split(","))):
        where, value = item.split("=", 1)
        table, column = where.split(".")
        stored.add((table.lower(), column.lower(), value))
    return lambda t, c, v: (t.lower(), c.lower(), v) in stored


def _to_dialect(case: Case) -> str:
    schema = _schema(case.headers["dialect"])[case.headers["schema"]] if "schema" in case.headers else None
    return to_dialect(case.sql, case.headers["dialect"], schema=schema)


def _for_schema(case: Case) -> str:
    dialect = case.headers["dialect"]
    return for_schema(case.sql, _schema(dialect)[case.headers.get("schema", "shop")], dialect)


def _rewrite(case: Case) -> str:
    dialect = case.headers["dialect"]
    r = rewrite_query(case.sql, _schema(dialect)[case.headers.get("schema", "music")], case.headers["question"],
                      dialect)
    return r.sql


def _name_keys(case: Case) -> str:
    dialect = case.headers["dialect"]
    return name_keys(case.sql, _schema(dialect)[case.headers.get("schema", "music")], case.headers["question"],
                     dialect).sql


def _relink(case: Case) -> str:
    dialect = case.headers["dialect"]
    return relink_values(case.sql, _schema(dialect)[case.headers.get("schema", "music")],
                         _holds(case.headers.get("holds", "")), dialect).sql


#: What a case's ``-- entry:`` header calls, with the case: its output.
ENTRIES: dict[str, Callable[[Case], str]] = {
    "to_dialect": _to_dialect,
    "for_schema": _for_schema,
    "subqueries_as_sets": lambda case: subqueries_as_sets(case.sql, case.headers["dialect"]),
    "rewrite_query": _rewrite,
    "name_keys": _name_keys,
    "relink_values": _relink,
}


def read_cases(path: Path) -> list[Case]:
    """The cases of one rule file, headers carried over from the case before."""
    headers: dict[str, str] = {}
    cases: list[Case] = []
    block: list[tuple[int, str]] = []
    lines = path.read_text(encoding="utf-8").splitlines() + [""]
    for number, text in enumerate(lines, 1):
        if text.strip():
            block.append((number, text))
            continue
        if not block:
            continue
        body = []
        for n, line in block:
            if line.startswith("-- ") and ":" in line and not body:
                key, _, value = line[3:].partition(":")
                headers[key.strip()] = value.strip()
            else:
                body.append((n, line))
        if body:
            cases.append(Case(path, body[0][0], dict(headers), body[0][1],
                              body[1][1] if len(body) > 1 else None, [b for _, b in body[2:]]))
        block = []
    return cases


def output(case: Case) -> str:
    """What the code gives today for ``case`` (one line)."""
    out = ENTRIES[case.headers.get("entry", "to_dialect")](case)
    return " ".join(out.splitlines())


def write_cases(path: Path, cases: list[Case]) -> None:
    """``path`` again, each case's expected line set to what the code gives today."""
    out: list[str] = []
    written: dict[str, str] = {}
    for case in cases:
        changed = {k: v for k, v in case.headers.items() if written.get(k) != v}
        out += [f"-- {k}: {v}" for k, v in changed.items()]
        written.update(case.headers)
        out += [case.sql, output(case), ""]
    path.write_text("\n".join(out), encoding="utf-8")


def all_cases() -> list[Case]:
    return [c for p in sorted(FIXTURES.glob("*.sql")) for c in read_cases(p)]


if __name__ == "__main__":
    if "--update" not in sys.argv[1:]:
        sys.exit("usage: python -m tests.sql.rule_fixtures --update   (rewrites the expected lines)")
    for p in sorted(FIXTURES.glob("*.sql")):
        write_cases(p, read_cases(p))
        print(f"{p.relative_to(Path.cwd()) if p.is_relative_to(Path.cwd()) else p}: {len(read_cases(p))} cases")
