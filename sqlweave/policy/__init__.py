"""What a caller may see of a database: hidden tables and columns, and row filters, enforced on the SQL's AST.

An access policy is a YAML file of its own, or the ``policy:`` section of a database's knowledge file
(:mod:`sqlweave.knowledge`)::

    hidden_tables: [audit_log]                    # never shown, never read
    hidden_columns: [users.password_hash, users.ssn]
    row_filters:                                  # the rows of a table a query may see
      orders: tenant_id = :tenant                 # :tenant is bound per request
      invoices: "tenant_id = :tenant AND NOT archived"

What it does, once attached to a :class:`~sqlweave.db.Database` (``sqlweave.connect(db, policy="p.yaml")``):

- **Nothing hidden is shown.** The schema is reduced once, where it is read: hidden tables and columns are gone
  from it (and so from every prompt, the cell-value index, the agent's tools, suggested questions and the schema
  the doors show), and a row-filtered table keeps no sample rows, sample values, statistics or row count (they
  would come from every tenant's rows). Domain knowledge that mentions a hidden name is left out of prompts.
- **Nothing hidden is read.** Every query a user or the model writes is checked on its sqlglot AST before it
  runs (:meth:`AccessPolicy.check`): a hidden table, a table the schema does not show (system catalogs
  included), or a hidden column anywhere (projection, filter, join, subquery, CTE, function argument, ORDER BY,
  GROUP BY, HAVING, window) refuses the query with :class:`~sqlweave.errors.AccessDeniedError`, whose message
  names neither. Then (:meth:`AccessPolicy.rewrite`) every reference to a table with hidden columns or a row
  filter is replaced by a subquery that selects only its visible columns and only the rows its filter allows,
  the parameters bound as literals quoted by sqlglot. So ``SELECT *`` expands to visible columns, and no join,
  subquery, set operation or CTE can see another tenant's rows: the database itself never gets the chance.
- **Parameters are bound per request**: ``engine.ask(question, params={"tenant": "acme"})``, or
  ``engine.bind({"tenant": "acme"})`` for an :class:`~sqlweave.engine.Engine` (and its conversations) that
  always asks for that tenant. A door that knows who is asking (the HTTP server, per API key) binds them the
  same way: ``Engine(catalog.database(name).bind(params), llm, pipeline)``. A query that reads a filtered table
  while its parameter is unbound is refused with :class:`~sqlweave.errors.PolicyError`: the policy fails closed.

Names compare case-insensitively. A view or a partition over a protected table is a table of its own: hide or
filter it as well. On PostgreSQL, also connect with a role that can only read what the policy shows.

>>> policy = AccessPolicy.from_yaml('''
... hidden_tables: [audit_log]
... hidden_columns: [users.password_hash]
... row_filters: {orders: "tenant_id = :tenant"}
... ''')
>>> sorted(policy.parameters)
['tenant']
>>> from sqlweave.schema import Column, Schema, Table
>>> schema = Schema("shop", (Table("users", (Column("id"), Column("name"))),
...                          Table("orders", (Column("id"), Column("user_id"), Column("amount")))))
>>> policy.enforce("SELECT * FROM users", schema, "sqlite", {})
'SELECT * FROM (SELECT _policy.id, _policy.name FROM users AS _policy) AS users'
>>> policy.enforce("SELECT SUM(amount) FROM orders", schema, "sqlite", {"tenant": "acme"})
"SELECT SUM(amount) FROM (SELECT _policy.id, _policy.user_id, _policy.amount FROM orders AS _policy WHERE _policy.tenant_id = 'acme') AS orders"
>>> try:
...     policy.enforce("SELECT id FROM users ORDER BY password_hash", schema, "sqlite", {})
... except AccessDeniedError as err:
...     print(err.message)
the query reads a column that this database does not show
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..errors import AccessDeniedError, PolicyError, SqlweaveError
from ..sql.names import split_column
from .scope import COLUMN_DENIED, TABLE_DENIED, check_columns, ctes_in_scope

if TYPE_CHECKING:
    from ..schema import Schema
    from ..knowledge import Knowledge

#: The alias of the table inside a policy subquery (so a filter's column never resolves to an outer query).
INNER_ALIAS = "_policy"
#: Keys of a policy mapping.
POLICY_KEYS = ("hidden_tables", "hidden_columns", "row_filters")
#: What a refusal says: the same words whatever was hidden, so a message never names it (the table's and the
#: column's: :mod:`sqlweave.policy.scope`).
FUNCTION_DENIED = "the query calls a function that reads the database's catalog, settings or files"
UNCHECKABLE = "the query could not be checked against this database's access policy"

#: Functions refused under a policy: they read the catalog, other tables by name, settings or statistics.
_DENIED_PREFIXES = (
    "pg_", "has_", "to_reg", "table_to_xml", "schema_to_xml", "database_to_xml", "query_to_xml", "cursor_to_xml",
    "duckdb_", "pragma_", "sqlite_", "col_description", "obj_description", "shobj_description",
    "current_setting", "information_schema", "getvariable", "json_execute", "query",
)
#: Table functions allowed in FROM under a policy (they only turn values into rows).
_TABLE_FUNCTIONS = frozenset({
    "unnest", "generate_series", "explodinggenerateseries", "generateseries", "range", "json_each", "json_tree",
    "jsonb_each", "jsonb_each_text", "json_each_text", "json_array_elements", "jsonb_array_elements",
    "json_array_elements_text", "jsonb_array_elements_text", "explode", "values",
})
#: Schema qualifiers that name the database's own default schema.
_DEFAULT_SCHEMAS = frozenset({"main", "public"})
_PARAM_VALUE_TYPES = (str, int, float, bool, type(None))
@dataclass(frozen=True)
class RowFilter:
    """The condition a table's rows must meet (SQL, ``:name`` parameters bound per request).

    >>> sorted(RowFilter("orders", "tenant_id = :tenant AND region = :region").parameters)
    ['region', 'tenant']
    """

    table: str
    condition: str
    _parsed: dict[str, exp.Expression] = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.table, str) or not self.table.strip():
            raise PolicyError("a row filter needs a table name")
        if not isinstance(self.condition, str) or not self.condition.strip():
            raise PolicyError(f"the row filter of table {self.table!r} is empty",
                              hint="Write a condition such as: tenant_id = :tenant")
        self.expression(None)  # parses, or raises PolicyError now

    @property
    def parameters(self) -> frozenset[str]:
        return frozenset(p.name for p in self.expression(None).find_all(exp.Placeholder) if p.name)

    def expression(self, dialect: str | None) -> exp.Expression:
        """The condition parsed for ``dialect`` (a fresh copy each call)."""
        key = dialect or ""
        tree = self._parsed.get(key)
        if tree is None:
            tree = _parse_condition(self.condition, dialect, self.table)
            self._parsed[key] = tree
        return tree.copy()

    def bound(self, dialect: str | None, params: Mapping[str, Any]) -> exp.Expression:
        """The condition with every ``:name`` replaced by the literal of ``params[name]``."""
        tree = self.expression(dialect)
        for ph in list(tree.find_all(exp.Placeholder)):
            if not ph.name or ph.name not in params:
                raise PolicyError(
                    f"the row filter of table {self.table!r} needs the parameter {ph.name or '?'!r}, which is not "
                    f"bound for this request",
                    hint="Bind it: engine.ask(question, params={...}), engine.bind({...}) or --param NAME=VALUE.")
            ph.replace(_literal(params[ph.name], ph.name))
        return tree


def _parse_condition(text: str, dialect: str | None, table: str) -> exp.Expression:
    try:
        tree = sqlglot.parse_one(f"SELECT 1 WHERE {text}", read=dialect)
    except (SqlglotError, ValueError, RecursionError) as err:
        raise PolicyError(f"the row filter of table {table!r} is not a SQL condition: "
                          f"{str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
    where = tree.args.get("where") if isinstance(tree, exp.Select) else None
    if where is None or tree.args.get("from_") is not None or len(tree.expressions) != 1 \
            or any(tree.args.get(k) for k in ("group", "having", "order", "limit", "joins", "with_")):
        raise PolicyError(f"the row filter of table {table!r} must be one condition, such as tenant_id = :tenant")
    from ..sql.classify import ensure_read_only

    try:
        ensure_read_only(f"SELECT 1 WHERE {text}", dialect)
    except SqlweaveError as err:
        raise PolicyError(f"the row filter of table {table!r} is not a read-only condition: {err.message}") from None
    return where.this


def _literal(value: Any, name: str) -> exp.Expression:
    """A bound parameter as a SQL literal (strings quoted by sqlglot for the dialect)."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PolicyError(f"the parameter {name!r} must be a finite number")
        return exp.Literal.number(repr(value))
    if isinstance(value, str):
        if "\x00" in value:
            raise PolicyError(f"the parameter {name!r} holds a NUL character")
        return exp.Literal.string(value)
    raise PolicyError(f"the parameter {name!r} must be a string, a number, a boolean or None, "
                      f"not {type(value).__name__}")


@dataclass(frozen=True)
class AccessPolicy:
    """Hidden tables, hidden ``(table, column)`` pairs and row filters of one database.

    Build one with :meth:`load` (a YAML file), :meth:`from_yaml` or :meth:`from_mapping`; attach it with
    ``sqlweave.connect(target, policy=...)`` or ``Database.open(target, policy=...)``.
    """

    hidden_tables: frozenset[str] = frozenset()
    hidden_columns: frozenset[tuple[str, str]] = frozenset()
    row_filters: tuple[RowFilter, ...] = ()
    source: Path | None = None
    _knowledge: dict[int, tuple[Any, Any]] = field(default_factory=dict, compare=False, repr=False, hash=False)
    _lock: Any = field(default_factory=threading.Lock, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_tables", frozenset(t.lower() for t in self.hidden_tables))
        object.__setattr__(self, "hidden_columns",
                           frozenset((t.lower(), c.lower()) for t, c in self.hidden_columns))
        seen: dict[str, RowFilter] = {}
        for f in self.row_filters:
            key = f.table.lower()
            seen[key] = RowFilter(f.table, f"({seen[key].condition}) AND ({f.condition})") if key in seen else f
        object.__setattr__(self, "row_filters", tuple(seen.values()))
        if self.source is not None:
            object.__setattr__(self, "source", Path(self.source))
        cols: dict[str, set[str]] = {}
        for t, c in self.hidden_columns:
            cols.setdefault(t, set()).add(c)
        object.__setattr__(self, "_cols", {t: frozenset(c) for t, c in cols.items()})
        object.__setattr__(self, "_filters", {f.table.lower(): f for f in self.row_filters})

    # --- loading ---------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path) -> "AccessPolicy":
        """Read a policy file: YAML with the keys above, or a knowledge file with a ``policy:`` section."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise PolicyError(f"no access policy file at {str(path)!r}") from None
        except (OSError, UnicodeDecodeError) as err:
            raise PolicyError(f"cannot read the access policy file {str(path)!r}: {err}") from None
        return cls.from_yaml(text, source=path)

    @classmethod
    def from_yaml(cls, text: str, source: str | Path | None = None) -> "AccessPolicy":
        """Parse a policy's YAML text (a knowledge file's ``policy:`` section is read too)."""
        import yaml

        name = repr(str(source)) if source is not None else "(text)"
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise PolicyError(f"the access policy {name} is not valid YAML: {str(err).splitlines()[0]}") from None
        if isinstance(data, dict) and "policy" in data and not set(data) & set(POLICY_KEYS):
            data = data["policy"]
        return cls.from_mapping(data, source=source)

    @classmethod
    def from_mapping(cls, data: Any, source: str | Path | None = None) -> "AccessPolicy":
        """From ``{"hidden_tables": [...], "hidden_columns": ["t.c", ...], "row_filters": {table: condition}}``.

        >>> AccessPolicy.from_mapping({"hidden_columns": ["users.password_hash"]}).hidden_columns
        frozenset({('users', 'password_hash')})
        """
        name = repr(str(source)) if source is not None else "(policy)"
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise PolicyError(f"the access policy {name} must be a mapping with keys {', '.join(POLICY_KEYS)}")
        unknown = [str(k) for k in data if k not in POLICY_KEYS]
        if unknown:
            raise PolicyError(f"the access policy {name} has unknown keys: {', '.join(unknown)}",
                              hint=f"Use: {', '.join(POLICY_KEYS)}.")
        tables = _names(data.get("hidden_tables"), "hidden_tables", name)
        columns = []
        for ref in _names(data.get("hidden_columns"), "hidden_columns", name):
            column = split_column(ref)
            if column is None:
                raise PolicyError(f"the access policy {name}: hidden column {ref!r} is not table.column")
            columns.append(column)
        filters_raw = data.get("row_filters") or {}
        if not isinstance(filters_raw, Mapping):
            raise PolicyError(f"the access policy {name}: row_filters must map table names to conditions")
        filters = []
        for table, cond in filters_raw.items():
            if not isinstance(table, str) or not isinstance(cond, str):
                raise PolicyError(f"the access policy {name}: a row filter must be `table: condition` text")
            try:
                filters.append(RowFilter(table, cond))
            except PolicyError as err:
                raise PolicyError(f"the access policy {name}: {err.message}", hint=err.hint) from None
        return cls(frozenset(tables), frozenset(columns), tuple(filters),
                   Path(source) if source is not None else None)

    def merged(self, other: "AccessPolicy | None") -> "AccessPolicy":
        """Both policies at once: everything either hides is hidden; rows must pass both filters."""
        if other is None:
            return self
        return AccessPolicy(self.hidden_tables | other.hidden_tables, self.hidden_columns | other.hidden_columns,
                            self.row_filters + other.row_filters, self.source or other.source)

    # --- facts -----------------------------------------------------------------------------------

    @property
    def parameters(self) -> frozenset[str]:
        """Names of every parameter the row filters use."""
        return frozenset(p for f in self.row_filters for p in f.parameters)

    def hides_table(self, table: str) -> bool:
        return table.lower() in self.hidden_tables

    def hidden_columns_of(self, table: str) -> frozenset[str]:
        """Lower-cased names of ``table``'s hidden columns."""
        return self._cols.get(table.lower(), frozenset())  # type: ignore[attr-defined]

    def row_filter(self, table: str) -> RowFilter | None:
        return self._filters.get(table.lower())  # type: ignore[attr-defined]

    def restricts(self, table: str) -> bool:
        """Whether references to ``table`` are rewritten (it has hidden columns or a row filter)."""
        low = table.lower()
        return low in self._cols or low in self._filters  # type: ignore[attr-defined]

    def hidden_names(self) -> frozenset[str]:
        """Every hidden table and column name, lower-cased."""
        return self.hidden_tables | {c for _, c in self.hidden_columns}

    def mentions_hidden(self, text: str) -> bool:
        """Whether ``text`` names a hidden table or column (as a word, any case)."""
        low = text.lower()
        return any(re.search(rf"(?<![\w$]){re.escape(n)}(?![\w$])", low) for n in self.hidden_names())

    def missing_parameters(self, params: Mapping[str, Any] | None) -> frozenset[str]:
        return self.parameters - set(params or {})

    def check_params(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """``params`` as a plain dict, each value checked to be a scalar a literal can hold."""
        out = dict(params or {})
        for k, v in out.items():
            if not isinstance(k, str) or not isinstance(v, _PARAM_VALUE_TYPES):
                raise PolicyError(f"the parameter {k!r} must be a string, a number, a boolean or None")
            _literal(v, k)
        return out

    # --- the schema and the knowledge ------------------------------------------------------------

    def validate(self, columns: Mapping[str, Iterable[str]]) -> None:
        """Raise :class:`PolicyError` if the policy names a table or column the database does not have
        (``columns``: every table's column names), or a row filter names a column its table does not have:
        a misspelt name would otherwise protect nothing."""
        tables = {t.lower(): {c.lower() for c in cols} for t, cols in columns.items()}
        for t in sorted(self.hidden_tables):
            if t not in tables:
                raise PolicyError(f"the access policy hides table {t!r}, which the database does not have")
        for t, c in sorted(self.hidden_columns):
            if t in self.hidden_tables:
                continue
            if t not in tables or c not in tables[t]:
                raise PolicyError(f"the access policy hides column {t}.{c}, which the database does not have")
        for f in self.row_filters:
            t = f.table.lower()
            if t in self.hidden_tables:
                continue
            if t not in tables:
                raise PolicyError(f"the access policy filters table {f.table!r}, which the database does not have")
            for col in _filter_columns(f.expression(None)):
                if col.name.lower() not in tables[t]:
                    raise PolicyError(f"the row filter of table {f.table!r} names column {col.name!r}, which the "
                                      f"table does not have")

    def filter_schema(self, schema: "Schema") -> "Schema":
        """``schema`` without hidden tables and columns; filtered tables keep no rows, samples, stats or count."""
        from ..schema import ColumnStats

        keep: dict[str, Iterable[str] | None] = {
            t.name: [c.name for c in t.columns if c.name.lower() not in self.hidden_columns_of(t.name)]
            for t in schema.tables if not self.hides_table(t.name)}
        reduced = schema.subset(keep)
        tables = []
        for t in reduced.tables:
            if self.row_filter(t.name) is not None:
                t = replace(t, row_count=None, sample_rows=(),
                            columns=tuple(replace(c, samples=(), stats=ColumnStats()) for c in t.columns))
            tables.append(t)
        return replace(reduced, tables=tuple(tables))

    def filter_knowledge(self, knowledge: "Knowledge | None") -> "Knowledge | None":
        """``knowledge`` without what names a hidden table or column: descriptions, terms, joins, sample
        pairs and notes that mention one are left out, so prompts never show them."""
        if knowledge is None or not self.hidden_names():
            return knowledge
        with self._lock:
            hit = self._knowledge.get(id(knowledge))
            if hit is not None and hit[0] is knowledge:
                return hit[1]
        tables = tuple(
            replace(t, description="" if self.mentions_hidden(t.description) else t.description,
                    columns={c: d for c, d in t.columns.items()
                             if c.lower() not in self.hidden_columns_of(t.name) and not self.mentions_hidden(d)})
            for t in knowledge.tables if not self.hides_table(t.name))
        terms = tuple(t for t in knowledge.terms
                      if not self.mentions_hidden(" ".join((t.name, t.definition, t.sql or ""))))
        joins = tuple(j for j in knowledge.joins if not self.mentions_hidden(str(j)))
        examples = tuple(e for e in knowledge.examples if not self.mentions_hidden(f"{e.question} {e.sql}"))
        notes = tuple(n for n in knowledge.notes if not self.mentions_hidden(n))
        filtered = replace(knowledge, tables=tables, terms=terms, joins=joins, examples=examples, notes=notes)
        with self._lock:
            self._knowledge[id(knowledge)] = (knowledge, filtered)
        return filtered

    # --- enforcement -----------------------------------------------------------------------------

    def enforce(self, sql: str, schema: "Schema", dialect: str | None, params: Mapping[str, Any] | None = None) -> str:
        """The SQL to run for ``sql`` under this policy: checked (:meth:`check`), then rewritten (:meth:`rewrite`).

        ``schema`` is the reduced schema (what :meth:`filter_schema` returns). SQL that reads no protected
        table comes back unchanged. Raises :class:`AccessDeniedError`, :class:`PolicyError` (an unbound
        parameter), or the classifier's errors for SQL that is not one read.
        """
        from ..sql.classify import ensure_read_only

        tree = ensure_read_only(sql, dialect)
        try:
            self.check(tree, schema, dialect)
        except AccessDeniedError as err:
            err.details["sql"] = sql
            raise
        if not any(self.restricts(t.name) for t in _named_tables(tree)):
            return sql
        rewritten = self.rewrite(tree, schema, dialect, params)
        try:
            out = rewritten.sql(dialect=dialect, comments=False)
        except (SqlglotError, ValueError, RecursionError) as err:
            raise AccessDeniedError(UNCHECKABLE, sql=sql) from err
        ensure_read_only(out, dialect)
        return out

    def check(self, sql: str | exp.Expression, schema: "Schema", dialect: str | None = None) -> None:
        """Refuse ``sql`` if it reads a hidden table or column, or any table ``schema`` does not show.

        Raises :class:`AccessDeniedError` (the message never names what is hidden)."""
        tree = _parse(sql, dialect) if isinstance(sql, str) else sql
        text = sql if isinstance(sql, str) else None
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        for cte in ctes:
            if self.hides_table(cte) or self.restricts(cte):
                raise AccessDeniedError(TABLE_DENIED, hint="Name WITH queries differently from the tables.",
                                        sql=text)
        own = {schema.name.lower()} | _DEFAULT_SCHEMAS
        referenced: list[str] = []
        for table in tree.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier):
                fn = table.this
                fname = (fn.name if isinstance(fn, exp.Anonymous) else fn.key if isinstance(fn, exp.Func) else "")
                if str(fname).lower() not in _TABLE_FUNCTIONS:
                    raise AccessDeniedError(TABLE_DENIED, sql=text)
                continue
            name = table.name.lower()
            if self.hides_table(name):
                raise AccessDeniedError(TABLE_DENIED, sql=text)
            for part in ("db", "catalog"):
                qualifier = table.args.get(part)
                if qualifier is not None and qualifier.name.lower() not in own:
                    raise AccessDeniedError(TABLE_DENIED, sql=text)
            if name in ctes and not table.args.get("db") and name in ctes_in_scope(table):
                continue  # a WITH query's own name, where that WITH query is defined
            if not schema.has_table(name):
                raise AccessDeniedError(TABLE_DENIED, sql=text)
            referenced.append(name)
        for node in tree.find_all(exp.Func, exp.Cast):
            if isinstance(node, exp.Cast):
                to = node.args.get("to")
                if to is not None and to.sql().lower().lstrip('"').startswith("reg"):
                    raise AccessDeniedError(FUNCTION_DENIED, sql=text)
                continue
            fname = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if fname.startswith(_DENIED_PREFIXES):
                raise AccessDeniedError(FUNCTION_DENIED, sql=text)
        hidden = {c for t in referenced for c in self.hidden_columns_of(t)}
        if hidden:
            check_columns(tree, hidden, self, schema, text)

    def rewrite(self, tree: exp.Expression, schema: "Schema", dialect: str | None,
                params: Mapping[str, Any] | None = None) -> exp.Expression:
        """A copy of ``tree`` in which every reference to a table with hidden columns or a row filter reads
        ``(SELECT <visible columns> FROM t AS _policy WHERE <filter, parameters bound>) AS <its alias>``.

        Call :meth:`check` first: this does not refuse anything itself, except an unbound parameter
        (:class:`PolicyError`)."""
        params = self.check_params(params)
        out = tree.copy()
        for table in list(out.find_all(exp.Table)):
            if not isinstance(table.this, exp.Identifier) or not self.restricts(table.name):
                continue
            if table.meta.get("sqlweave_policy"):
                continue
            table.replace(self._subquery(table, schema, dialect, params))
        return out

    def _subquery(self, table: exp.Table, schema: "Schema", dialect: str | None,
                  params: Mapping[str, Any]) -> exp.Expression:
        visible = schema.table(table.name).columns if schema.has_table(table.name) else ()
        inner = table.copy()
        alias = table.args.get("alias")
        pivots = inner.args.get("pivots")
        inner.set("alias", exp.TableAlias(this=exp.to_identifier(INNER_ALIAS)))
        inner.set("pivots", None)
        inner.meta["sqlweave_policy"] = True
        columns = [exp.column(c.name, table=INNER_ALIAS, quoted=_needs_quotes(c.name)) for c in visible]
        select = exp.Select(expressions=columns or [exp.Null()]).from_(inner, copy=False)
        f = self.row_filter(table.name)
        if f is not None:
            cond = f.bound(dialect, params)
            for col in _filter_columns(cond):
                col.set("table", exp.to_identifier(INNER_ALIAS))
                col.set("db", None)
                col.set("catalog", None)
            select = select.where(cond, copy=False)
        if not visible:  # a table whose every column is hidden: no rows either
            select = select.where(exp.false(), copy=False)
        sub = exp.Subquery(this=select)
        sub.set("alias", alias.copy() if alias is not None else exp.TableAlias(this=table.this.copy()))
        if pivots:
            sub.set("pivots", pivots)
        return sub

    def guard_internal(self, sql: str, dialect: str | None) -> None:
        """Refuse sqlweave's own bookkeeping queries (introspection, the value index) that would read a hidden
        table or column or a row-filtered table: those run without a request's parameters, and what they read
        reaches prompts and indexes. Raises :class:`AccessDeniedError`."""
        try:
            trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
        except (SqlglotError, ValueError, RecursionError):
            raise AccessDeniedError(UNCHECKABLE) from None
        for tree in trees:
            names = [t.name for t in tree.find_all(exp.Table) if isinstance(t.this, exp.Identifier)]
            if any(self.hides_table(n) or self.row_filter(n) is not None for n in names):
                raise AccessDeniedError(TABLE_DENIED)
            hidden = {c for n in names for c in self.hidden_columns_of(n)}
            if any(i.name.lower() in hidden for i in tree.find_all(exp.Identifier)):
                raise AccessDeniedError(COLUMN_DENIED)
            if hidden and any(isinstance(s.parent, (exp.Select, exp.Column)) for s in tree.find_all(exp.Star)):
                raise AccessDeniedError(COLUMN_DENIED)  # SELECT * would read the hidden columns


# --- helpers ------------------------------------------------------------------------------------------


def _names(value: Any, key: str, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
        raise PolicyError(f"the access policy {name}: {key} must be a list of names")
    return [v.strip() for v in value]


def _needs_quotes(name: str) -> bool:
    return not re.fullmatch(r"[a-z_][a-z0-9_]*", name)


def _parse(sql: str, dialect: str | None) -> exp.Expression:
    from ..sql.validate import parse_one

    return parse_one(sql, dialect)


def _named_tables(tree: exp.Expression) -> list[exp.Table]:
    return [t for t in tree.find_all(exp.Table) if isinstance(t.this, exp.Identifier)]


def _filter_columns(cond: exp.Expression) -> list[exp.Column]:
    """Columns of a filter condition that belong to its table (not those of a subquery inside it)."""
    out = []
    for col in cond.find_all(exp.Column):
        if isinstance(col.this, exp.Star):
            continue
        if col.find_ancestor(exp.Select) is not None and col.find_ancestor(exp.Select) is not cond.find_ancestor(exp.Select):
            continue
        out.append(col)
    return out
