"""Which columns a query reads, resolved through its scopes the way SQL resolves names: the access policy's check
that no reference reaches a hidden column, and the WITH queries a table name can refer to.

>>> import sqlglot
>>> tree = sqlglot.parse_one("WITH a AS (SELECT 1) SELECT * FROM a")
>>> sorted(ctes_in_scope(next(tree.find_all(sqlglot.exp.Table))))
['a']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from ..errors import AccessDeniedError

if TYPE_CHECKING:
    from ..schema import Schema
    from . import AccessPolicy

#: What a refusal says: the same words whatever was hidden, so a message never names it.
TABLE_DENIED = "the query reads a table that this database does not show"
COLUMN_DENIED = "the query reads a column that this database does not show"


def ctes_in_scope(node: exp.Expression) -> set[str]:
    """Names of the WITH queries ``node`` can refer to: those of every enclosing WITH, and inside a WITH query's
    own body only the ones defined before it unless the WITH is RECURSIVE (without it, its own name there is
    taken for the table it names, as PostgreSQL does: read as a real table, it must pass every check)."""
    names: set[str] = set()
    child: Any = node
    parent: Any = node.parent
    cte: exp.Expression | None = None
    while parent is not None:
        if isinstance(child, exp.CTE):
            cte = child
        with_ = parent.args.get("with_") if isinstance(parent, exp.Expression) else None
        if isinstance(with_, exp.With):
            defined = list(with_.expressions)
            if child is with_ and cte is not None and cte in defined and not with_.args.get("recursive"):
                defined = defined[: defined.index(cte)]  # WITH RECURSIVE: each sees every one, itself too
            names |= {c.alias_or_name.lower() for c in defined}
        child, parent = parent, parent.parent
    return names


def check_columns(tree: exp.Expression, hidden: set[str], policy: "AccessPolicy", schema: "Schema",
                   text: str | None) -> None:
    """Refuse a reference to a hidden column: resolved through the query's scopes the way SQL resolves names
    (innermost first); anything named like a hidden column that does not resolve to something visible is
    refused too."""
    suspects: list[exp.Expression] = [i for i in tree.find_all(exp.Identifier) if i.name.lower() in hidden]
    suspects += [v for v in tree.find_all(exp.Var) if v.name.lower() in hidden]
    if not suspects:
        return
    from sqlglot.optimizer.scope import build_scope

    try:
        root = build_scope(tree)
        scopes = list(root.traverse()) if root is not None else []
    except Exception:  # noqa: BLE001 - the scope builder's limits: refuse rather than guess
        raise AccessDeniedError(COLUMN_DENIED, sql=text) from None
    by_expr = {id(s.expression): s for s in scopes}

    def scope_of(node: exp.Expression) -> Any:
        cur = node.parent
        while cur is not None:
            s = by_expr.get(id(cur))
            if s is not None:
                return s
            cur = cur.parent
        return None

    for ident in suspects:
        parent = ident.parent
        if isinstance(parent, exp.TableAlias) or (isinstance(parent, exp.Alias) and parent.args.get("alias") is ident):
            continue  # an alias being defined: names an output, reads nothing
        if isinstance(parent, exp.Table) and parent.this is ident:
            continue  # a table named like a hidden column: the table checks cover it
        if isinstance(parent, exp.Column) and parent.this is ident and not parent.args.get("db"):
            if _column_ok(parent, scope_of(parent), policy, schema):
                continue
        elif isinstance(parent, exp.Column) and parent.args.get("table") is ident and not parent.args.get("db"):
            if _is_source_alias(ident.name, scope_of(parent)):
                continue  # a table alias named like a hidden column
        raise AccessDeniedError(COLUMN_DENIED, sql=text)


def _is_source_alias(name: str, scope: Any) -> bool:
    low = name.lower()
    while scope is not None:
        if any(k.lower() == low for k in scope.sources):
            return True
        scope = scope.parent
    return False


def _outputs(source: Any) -> set[str]:
    """The explicit output names of a derived table's scope (a star adds nothing: it expands to visible columns)."""
    expr = source.expression
    while isinstance(expr, exp.SetOperation):
        expr = expr.this
    if isinstance(expr, exp.Select):
        return {s.alias_or_name.lower() for s in expr.expressions if s.alias_or_name and s.alias_or_name != "*"}
    return set()


def _is_order_alias(column: exp.Column, select: Any, name: str) -> bool:
    order = column.find_ancestor(exp.Order, exp.Select)
    return (isinstance(order, exp.Order) and order.parent is select and isinstance(select, exp.Select)
            and order.this is None and any(isinstance(s, exp.Alias) and s.alias.lower() == name
                                           for s in select.expressions)
            and any(o.this is column for o in order.expressions))


def _column_ok(column: exp.Column, scope: Any, policy: "AccessPolicy", schema: "Schema") -> bool:
    """Whether ``column`` (named like a hidden column) resolves to something visible."""
    from sqlglot.optimizer.scope import Scope

    name = column.name.lower()
    qualifier = column.table.lower() if column.table else None
    first = True
    while scope is not None:
        sources = {k.lower(): v for k, v in scope.sources.items()}
        if qualifier is not None:
            if qualifier in sources:
                src = sources[qualifier]
                if isinstance(src, exp.Table):
                    return name not in policy.hidden_columns_of(src.name) and schema.has_table(src.name) \
                        and schema.table(src.name).has_column(name)
                if isinstance(src, Scope):
                    return name in _outputs(src)
                return False
        else:
            if first and _is_order_alias(column, scope.expression, name):
                return True  # ORDER BY names an output alias before a table's column
            for src in sources.values():
                if isinstance(src, exp.Table) and name in policy.hidden_columns_of(src.name):
                    return False
            if first:
                select = scope.expression
                if isinstance(select, exp.Select) and any(
                        isinstance(s, exp.Alias) and s.alias.lower() == name for s in select.expressions):
                    return True
            for src in sources.values():
                if isinstance(src, exp.Table) and schema.has_table(src.name) and schema.table(src.name).has_column(name):
                    return True
                if isinstance(src, Scope) and name in _outputs(src):
                    return True
        first = False
        scope = scope.parent
    return False
