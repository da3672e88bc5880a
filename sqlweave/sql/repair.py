"""Repair schema-linking mistakes in a query without asking the model again.

Small models write the right query with the wrong names far more often than the wrong query: a column
qualified with the wrong table alias (``T1.name`` where ``name`` is in ``T2``), a near-miss spelling
(``dorm.name`` for ``dorm.dorm_name``, ``singers`` for ``singer``), an unqualified column that two joined
tables share, or a column of a table the query forgot to join. Each of these has one reading the schema
allows, which this module finds on the sqlglot syntax tree:

- an unknown table is renamed to the one existing table whose name is close enough; on SQLite, a table named
  with a schema SQLite does not have (``consumer_div.users``, as a PostgreSQL server names it) loses it;
- a qualified column its table lacks moves to the one table in the same scope that has it, or is renamed
  to the one close column of its table;
- an unqualified column that several tables in scope have is qualified with the first of them;
- a column no table in scope has, but another table has, brings that table in along the shortest
  foreign-key join path (networkx; when several tables have it, the one fewest hops away), or is renamed
  to the one close column in scope;
- a join condition naming a column its table lacks is replaced by the foreign key between the two tables.

Nothing is guessed when two readings are equally good: the query is left as it is and the model-based
correction stages take over.

>>> from sqlweave.schema import Schema, Table, Column, ForeignKey
>>> s = Schema("x", (Table("singer", (Column("singer_id", primary_key=True), Column("name"))),
...                  Table("concert", (Column("concert_id", primary_key=True), Column("singer_id"),
...                                    Column("concert_name")))),
...            (ForeignKey("concert", "singer_id", "singer", "singer_id"),))
>>> fixed = repair_schema_links("SELECT T2.name FROM singer AS T1 JOIN concert AS T2 "
...                             "ON T1.singer_id = T2.singer_id", s)
>>> fixed.sql, fixed.changes
('SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id', ['T2.name -> T1.name'])
>>> repair_schema_links("SELECT concert_name FROM singer WHERE name = 'Joe'", s).sql
"SELECT concert.concert_name FROM singer JOIN concert ON singer.singer_id = concert.singer_id WHERE name = 'Joe'"
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

from ..schema import Schema, Table
from ..errors import SqlweaveError
from .validate import parse_one

#: How close a name must be to count as a misspelling (difflib ratio), and how far ahead of the
#: runner-up the best match must be.
CLOSE = 0.75
MARGIN = 0.05


@dataclass(frozen=True)
class Repair:
    """The SQL after rule-based changes (``sql`` is the input unchanged when no rule applied) and what changed.

    Also the result of :func:`sqlweave.sql.rewrite.rewrite_query` (as ``Rewrite``)."""

    sql: str
    changes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)


def _closest(name: str, candidates: list[str]) -> str | None:
    """The one candidate close to ``name`` (case-insensitive, also ignoring ``_``), or None if none or a tie."""
    def norm(s: str) -> str:
        return s.lower().replace("_", "").replace(" ", "")

    scored = sorted(((difflib.SequenceMatcher(None, norm(name), norm(c)).ratio(), c) for c in candidates),
                    key=lambda x: -x[0])
    if not scored or scored[0][0] < CLOSE:
        return None
    if len(scored) > 1 and scored[0][0] - scored[1][0] < MARGIN:
        return None
    return scored[0][1]


def _tables_in_scope(scope: Scope, schema: Schema) -> dict[str, Table]:
    """Alias (or table name) -> schema table, in FROM/JOIN order, for the scope's base tables."""
    out: dict[str, Table] = {}
    for alias, (node, source) in scope.selected_sources.items():
        if isinstance(source, exp.Table) and schema.has_table(source.name):
            out[alias] = schema.table(source.name)
    return out


def _select_aliases(scope: Scope) -> set[str]:
    sel = scope.expression
    if not isinstance(sel, exp.Select):
        return set()
    return {e.alias.lower() for e in sel.expressions if isinstance(e, exp.Alias) and e.alias}


def _fix_tables(tree: exp.Expression, schema: Schema, changes: list[str], dialect: str) -> None:
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        name = table.name
        if not name or name.lower() in ctes:
            continue
        best = name if schema.has_table(name) else _closest(name, list(schema.table_names))
        if best is None:
            continue
        written = ".".join(p for p in (table.catalog, table.db, name) if p)
        if (dialect == "sqlite" and table.db and not table.catalog and table.db.lower() not in ("main", "temp")):
            table.set("db", None)  # consumer_div.users, as a PostgreSQL server names it, where SQLite has users
        if best != name:
            table.set("this", exp.to_identifier(best))
        now = ".".join(p for p in (table.catalog, table.db, table.name) if p)
        if now != written:
            changes.append(f"table {written} -> {now}")


def _join_path(schema: Schema, have: list[str], targets: list[Table]) -> tuple[Table, list[Any]] | None:
    """The one target closest (fewest foreign-key hops) to the tables in ``have``, and the hops to it.

    None when no target is reachable or two are equally close (no single reading)."""
    import networkx as nx

    g = schema.table_graph()
    found: list[tuple[int, Table, list[str]]] = []
    for target in targets:
        best: list[str] | None = None
        for t in have:
            try:
                path = nx.shortest_path(g, t, target.name)
            except (nx.NetworkXNoPath, nx.NodeNotFound):
                continue
            if best is None or len(path) < len(best):
                best = path
        if best is not None:
            found.append((len(best), target, best))
    found.sort(key=lambda x: x[0])
    if not found or (len(found) > 1 and found[0][0] == found[1][0]):
        return None
    _, target, path = found[0]
    return target, [g.edges[u, v]["fk"] for u, v in zip(path, path[1:])]


def _bring_in(scope: Scope, schema: Schema, tables: dict[str, Table], targets: list[Table],
              changes: list[str]) -> str | None:
    """Join the closest of ``targets`` into a plain SELECT scope along the shortest foreign-key path.

    Returns the alias the target is known by (``tables`` is updated with every table joined), or None."""
    sel = scope.expression
    if not isinstance(sel, exp.Select) or not tables or not isinstance(sel.args.get("from_") or sel.args.get("from"), exp.From):
        return None
    found = _join_path(schema, [t.name for t in tables.values()], targets)
    if found is None:
        return None
    target, hops = found
    alias_of = {t.name.lower(): alias for alias, t in tables.items()}
    for fk in hops:
        # Walk from the side already present to the new one.
        if fk.table.lower() in alias_of and fk.ref_table.lower() not in alias_of:
            new, new_col, old, old_col = fk.ref_table, fk.ref_column, fk.table, fk.column
        elif fk.ref_table.lower() in alias_of and fk.table.lower() not in alias_of:
            new, new_col, old, old_col = fk.table, fk.column, fk.ref_table, fk.ref_column
        else:
            continue
        table = schema.table(new)
        if table.name.lower() in {a.lower() for a in tables}:
            return None  # the name is taken by an alias: joining it again would be ambiguous
        cond = exp.EQ(this=exp.column(old_col, alias_of[old.lower()]), expression=exp.column(new_col, table.name))
        sel.join(exp.to_table(table.name), on=cond, copy=False)
        alias_of[table.name.lower()] = table.name
        tables[table.name] = table
        changes.append(f"join {table.name} on {cond.sql()}")
    return alias_of.get(target.name.lower())


def _self_join(col: exp.Column, alias: str) -> bool:
    """Would qualifying ``col`` with ``alias`` turn ``a.x = b.x`` into the useless ``a.x = a.x``?"""
    parent = col.parent
    if not isinstance(parent, exp.EQ):
        return False
    other = parent.expression if parent.this is col else parent.this
    return (isinstance(other, exp.Column) and other.name.lower() == col.name.lower()
            and other.table.lower() == alias.lower())


def _fix_join_conditions(scope: Scope, schema: Schema, tables: dict[str, Table], changes: list[str]) -> None:
    """``JOIN b ON a.x = b.y`` naming a column its table lacks: use the foreign key between a and b instead."""
    sel = scope.expression
    if not isinstance(sel, exp.Select):
        return
    lower = {a.lower(): a for a in tables}
    for join in sel.args.get("joins") or []:
        on = join.args.get("on")
        if not isinstance(on, exp.EQ) or not all(isinstance(x, exp.Column) and x.table for x in (on.this, on.expression)):
            continue
        left, right = (lower.get(x.table.lower()) for x in (on.this, on.expression))
        if left is None or right is None or left == right:
            continue
        sides = (left, right)
        cols = [tables[a].has_column(x.name) for a, x in zip(sides, (on.this, on.expression))]
        if all(cols):
            continue
        a, b = (tables[x] for x in sides)
        fks = [fk for fk in schema.foreign_keys
               if {fk.table.lower(), fk.ref_table.lower()} == {a.name.lower(), b.name.lower()}]
        if len(fks) != 1 or a.name.lower() == b.name.lower():
            continue
        fk = fks[0]
        alias_of = {a.name.lower(): sides[0], b.name.lower(): sides[1]}
        cond = exp.EQ(this=exp.column(fk.column, alias_of[fk.table.lower()]),
                      expression=exp.column(fk.ref_column, alias_of[fk.ref_table.lower()]))
        changes.append(f"join condition {on.sql()} -> {cond.sql()}")
        join.set("on", cond)


def _fix_columns(tree: exp.Expression, schema: Schema, changes: list[str]) -> None:
    for scope in traverse_scope(tree):
        tables = _tables_in_scope(scope, schema)
        if not tables:
            continue
        _fix_join_conditions(scope, schema, tables, changes)
        aliases = _select_aliases(scope)
        for col in list(scope.columns):
            name, qual = col.name, col.table
            if not name or name == "*":
                continue
            lower = {a.lower(): a for a in tables}
            if qual:
                alias = lower.get(qual.lower())
                if alias is None:
                    # Qualified by a table name the query aliased (singer.name with FROM singer AS T1).
                    owners = [a for a, t in tables.items() if t.name.lower() == qual.lower()]
                    if len(owners) != 1:
                        continue
                    alias = owners[0]
                    col.set("table", exp.to_identifier(alias))
                    changes.append(f"{qual}.{name} -> {alias}.{name}")
                table = tables[alias]
                if table.has_column(name):
                    continue
                owners = [a for a, t in tables.items() if t.has_column(name)]
                if len(owners) == 1 and not _self_join(col, owners[0]):
                    col.set("table", exp.to_identifier(owners[0]))
                    changes.append(f"{qual}.{name} -> {owners[0]}.{name}")
                    continue
                if not owners and not _in_join_condition(col):
                    elsewhere = [t for t in schema.tables if t.has_column(name)]
                    joined = _bring_in(scope, schema, tables, elsewhere, changes) if elsewhere else None
                    if joined is not None:
                        col.set("table", exp.to_identifier(joined))
                        changes.append(f"{qual}.{name} -> {joined}.{name}")
                        continue
                best = _closest(name, list(table.column_names))
                if best is not None:
                    col.set("this", exp.to_identifier(best))
                    changes.append(f"{qual}.{name} -> {alias}.{best}")
                continue
            if name.lower() in aliases:
                continue
            owners = [a for a, t in tables.items() if t.has_column(name)]
            if len(owners) > 1:
                col.set("table", exp.to_identifier(owners[0]))
                changes.append(f"{name} -> {owners[0]}.{name}")
                continue
            if owners:
                continue
            elsewhere = [t for t in schema.tables if t.has_column(name)]
            joined = _bring_in(scope, schema, tables, elsewhere, changes) if elsewhere else None
            if joined is not None:
                col.set("table", exp.to_identifier(joined))
                continue
            in_scope = [(a, c) for a, t in tables.items() for c in t.column_names]
            best = _closest(name, [c for _, c in in_scope])
            if best is not None:
                owner = next(a for a, c in in_scope if c == best)
                col.set("this", exp.to_identifier(best))
                if len(tables) > 1:
                    col.set("table", exp.to_identifier(owner))
                changes.append(f"{name} -> {best}")


def _in_join_condition(col: exp.Column) -> bool:
    return col.find_ancestor(exp.Join) is not None


def repair_schema_links(sql: str, schema: Schema, dialect: str = "sqlite") -> Repair:
    """``sql`` with the table and column names it gets wrong mapped to the ones the schema has.

    Returns a :class:`Repair`; ``changes`` is empty (and ``sql`` unchanged) when no single reading
    was found or the SQL does not parse.
    """
    try:
        tree = parse_one(sql, dialect)
    except SqlweaveError:
        return Repair(sql)
    changes: list[str] = []
    try:
        _fix_tables(tree, schema, changes, dialect)
        # A joined table can make a column that was unique ambiguous: passes go on until nothing changes.
        for _ in range(3):
            before = len(changes)
            _fix_columns(tree, schema, changes)
            if len(changes) == before:
                break
        out = tree.sql(dialect=dialect)
    except (SqlglotError, SqlweaveError, RecursionError):
        # sqlglot's scope analysis rejects some valid trees, a schema lookup can fail, and a deeply nested
        # query can exhaust the stack: each means "no single reading". Anything else is a bug and is raised.
        return Repair(sql)
    return Repair(out, list(dict.fromkeys(changes))) if changes else Repair(sql)
