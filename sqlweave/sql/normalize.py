"""AST normalisation for comparing SQL queries by structure (ASTReS, section 3).

The steps follow the paper (its Table 7), on the sqlglot AST:

1. **Unify identifiers**: every table, column and alias name is lower-cased.
2. **Resolve aliases**: a column qualified by a table alias is rewritten to the table's name
   (``T1.name`` -> ``singer.name``); a qualifier is dropped where it is unnecessary, i.e. the
   column's own SELECT reads from one source only; a column qualified by the alias of a derived
   table loses the qualifier. Nodes that create aliases are deleted: table aliases are dropped,
   and a projection alias (``COUNT(*) AS num``) is dropped after each reference to it in the same
   SELECT's ORDER BY / HAVING / GROUP BY / WHERE is replaced by a copy of the aliased expression.
3. **Mask values** (``mask_values``): every literal becomes one placeholder, ``?``.
4. **Mask identifiers** (``mask_identifiers``, for cross-domain comparison): every table and
   column becomes ``_`` (``*`` stays).

SQLite reads ``"Paris"`` as an identifier, and Spider's gold SQL uses double quotes for strings,
so a quoted name that stands where a value does (the right side of a comparison, a LIKE pattern,
an IN list) is read as a string value first; otherwise ``name = "Paris"`` and ``name = 'Paris'``
would normalise differently. The paper's in-domain step (sorting JOIN operands) is not done.

>>> normalized_sql("SELECT T1.Category, COUNT(*) AS Num FROM Products AS T1 JOIN Orders AS T2 "
...                "ON T1.id = T2.pid GROUP BY T1.Category ORDER BY Num ASC", mask_identifiers=False)
'SELECT products.category, COUNT(*) FROM products JOIN orders ON products.id = orders.pid GROUP BY products.category ORDER BY COUNT(*) ASC'
>>> normalized_sql("SELECT T1.Name FROM Singer AS T1 WHERE T1.Country = \\"France\\" AND T1.Age > 30")
'SELECT _ FROM _ WHERE _ = ? AND _ > ?'
>>> normalized_sql("SELECT name FROM singer WHERE age > 30", mask_values=False)
'SELECT _ FROM _ WHERE _ > 30'
>>> normalized_sql("SELECT FROM WHERE")
Traceback (most recent call last):
sqlweave.errors.SQLParseError: ...
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

from .validate import parse_one

MASK = "_"
"""What a masked table or column is called."""

_PLAIN_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
_VALUE_SIDE = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike)
_ALIAS_CLAUSES = ("where", "group", "having", "order")


def normalize_ast(sql: str | exp.Expression, dialect: str | None = "sqlite", *, mask_values: bool = True,
                  mask_identifiers: bool = True) -> exp.Expression:
    """The normalised AST of ``sql`` (a new tree; a given tree is copied, never changed).

    Raises :class:`~sqlweave.errors.SQLParseError` when ``sql`` is text that does not parse as one statement.

    >>> normalize_ast("SELECT s.Name FROM singer AS s WHERE s.age > 30", mask_identifiers=False).sql()
    'SELECT name FROM singer WHERE age > ?'
    """
    tree = parse_one(sql, dialect) if isinstance(sql, str) else sql.copy()
    quoted_values_to_strings(tree)
    _lower_identifiers(tree)
    _resolve_table_aliases(tree)
    _resolve_projection_aliases(tree)
    if mask_values:
        tree = tree.transform(_mask_value)
    if mask_identifiers:
        tree = tree.transform(_mask_identifier)
    return tree


def normalized_sql(sql: str | exp.Expression, dialect: str | None = "sqlite", *, mask_values: bool = True,
                   mask_identifiers: bool = True) -> str:
    """:func:`normalize_ast` rendered as SQL text in ``dialect`` (stable: normalising it again gives the same text).

    >>> normalized_sql("select count(*) from Pets as p where p.pet_age < 5 order by p.PetID")
    'SELECT COUNT(*) FROM _ WHERE _ < ? ORDER BY _'
    """
    tree = normalize_ast(sql, dialect, mask_values=mask_values, mask_identifiers=mask_identifiers)
    return tree.sql(dialect=dialect)


# --- steps -----------------------------------------------------------------------------------


def quoted_values_to_strings(tree: exp.Expression) -> exp.Expression:
    """Rewrite, in place, ``"France"`` where a value stands (``x = "France"``, ``LIKE "%a%"``, ``IN ("a", "b")``)
    to the string ``'France'``; returns ``tree``.

    >>> print(quoted_values_to_strings(parse_one('SELECT "Name" FROM singer WHERE country = "France"')).sql())
    SELECT "Name" FROM singer WHERE country = 'France'
    """
    for col in list(tree.find_all(exp.Column)):
        ident = col.this
        if col.table or not isinstance(ident, exp.Identifier) or not ident.quoted:
            continue
        parent = col.parent
        value_like = (isinstance(parent, _VALUE_SIDE) and parent.expression is col) or (
            isinstance(parent, exp.In) and col in parent.expressions)
        if value_like:
            col.replace(exp.Literal.string(ident.this))
    return tree


def _lower_identifiers(tree: exp.Expression) -> None:
    for ident in tree.find_all(exp.Identifier):
        name = str(ident.this).lower()
        ident.set("this", name)
        ident.set("quoted", not _PLAIN_NAME.match(name))


def _sources(scope: Scope) -> dict:
    try:
        return scope.selected_sources
    except SqlglotError:  # one name used twice (``FROM t JOIN t``): nothing to resolve here
        return {}


def _lookup(scope: Scope | None, qualifier: str) -> tuple[Scope, object] | None:
    """The scope (this one or an enclosing one, for correlated subqueries) whose FROM names ``qualifier``."""
    while scope is not None:
        sources = _sources(scope)
        if qualifier in sources:
            return scope, sources[qualifier][1]
        scope = scope.parent
    return None


def _resolve_table_aliases(tree: exp.Expression) -> None:
    try:
        scopes = traverse_scope(tree)
    except (SqlglotError, KeyError, ValueError, AttributeError):  # scope building failed: keep the qualifiers
        scopes = []
    for scope in scopes:
        single_source = len(_sources(scope)) == 1
        for col in scope.columns:
            qualifier = col.table
            if not qualifier:
                continue
            found = _lookup(scope, qualifier)
            if found is None:
                continue
            owner, source = found
            if isinstance(source, exp.Table) and not (owner is scope and single_source):
                col.set("table", exp.to_identifier(source.name))
            else:  # a derived table's alias, or a qualifier the column's own single-source SELECT does not need
                col.set("table", None)
    for table in tree.find_all(exp.Table):
        if table.args.get("alias") is not None:
            table.set("alias", None)
    for sub in tree.find_all(exp.Subquery):
        if sub.args.get("alias") is not None and isinstance(sub.parent, (exp.From, exp.Join)):
            sub.set("alias", None)


def _resolve_projection_aliases(tree: exp.Expression) -> None:
    for select in list(tree.find_all(exp.Select)):
        aliases = {a.alias: a.this for a in select.expressions if isinstance(a, exp.Alias) and a.alias}
        if aliases:
            for clause in _ALIAS_CLAUSES:
                node = select.args.get(clause)
                if node is None:
                    continue
                for col in list(node.find_all(exp.Column)):
                    if (not col.table and col.name in aliases and col.find_ancestor(exp.Select) is select
                            and col is not node):
                        col.replace(aliases[col.name].copy())
        for proj in list(select.expressions):
            if isinstance(proj, exp.Alias):
                proj.replace(proj.this)


def _mask_value(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Literal):
        return exp.Placeholder()
    return node


def _mask_identifier(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            return exp.Column(this=exp.Star())
        return exp.column(MASK)
    if isinstance(node, exp.Table):
        return exp.Table(this=exp.to_identifier(MASK))
    if isinstance(node, exp.TableAlias):  # a CTE's name
        return exp.TableAlias(this=exp.to_identifier(MASK))
    return node
