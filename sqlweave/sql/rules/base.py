"""What every SQL rule is: a named function with its phase and dialects, and the runner that applies a phase.

A rule changes a parsed query so that the target engine answers it as SQLite would (or reads what a model wrote
for another engine). Each is one small function ``fn(tree, ctx)`` that returns the tree it changed (the same
tree, or a new root) or ``None`` when it changed nothing; the :class:`Rule` beside it says its name, its phase,
the dialects it applies to and what it needs besides the tree. Each phase is a tuple of rules, in the order they
run (:data:`sqlweave.sql.rules.PHASES`); :func:`apply` runs one over a tree parsed once and returns which fired.
Per-dialect behaviour lives in the rules' ``dialects`` and in tables beside them, never in ``if dialect == ...``.

>>> import sqlglot
>>> def upper_limit(tree, ctx):
...     return None
>>> tree, fired = apply(sqlglot.parse_one("SELECT 1"), (Rule("noop", "example", frozenset({"postgres"}),
...                     upper_limit),), Context("postgres"))
>>> fired
[]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

if TYPE_CHECKING:
    from ...schema import Schema


@dataclass(frozen=True)
class Context:
    """What a rule reads besides the tree: the target dialect, the schema (rules that need one), the SQL as
    written (rules that look at its tokens)."""

    dialect: str
    schema: "Schema | None" = None
    sql: str = ""


#: A rule's function: the changed tree (the same one, or a new root), or None when nothing changed.
RuleFn = Callable[[exp.Expression, Context], "exp.Expression | None"]


#: In a rule's ``dialects``: every dialect.
ANY = "*"


@dataclass(frozen=True)
class Rule:
    """One named rule: its phase, the dialects it applies to, what it needs (``schema``, ``sql``) and its
    function."""

    name: str
    phase: str
    dialects: frozenset[str]
    fn: RuleFn = field(repr=False)
    needs: tuple[str, ...] = ()

    def applies(self, ctx: Context) -> bool:
        return (ctx.dialect in self.dialects or ANY in self.dialects) and ("schema" not in self.needs or ctx.schema is not None)


def apply(tree: exp.Expression, rules: Sequence[Rule], ctx: Context) -> tuple[exp.Expression, list[str]]:
    """``tree`` with each rule of ``rules`` that applies to ``ctx`` run in turn, and the names of those that
    changed it."""
    fired: list[str] = []
    for rule in rules:
        if not rule.applies(ctx):
            continue
        out = rule.fn(tree, ctx)
        if out is not None:
            tree = out
            fired.append(rule.name)
    return tree, fired


#: A node rule: the node in another form, or None when it does not apply to that node.
NodeFn = Callable[[exp.Expression, Context], "exp.Expression | None"]


def node_rules(named: Sequence[tuple[str, NodeFn]], ctx: Context,
               fired: list[str]) -> Callable[[exp.Expression], exp.Expression]:
    """One function for sqlglot's ``transform``: each node goes to the first of ``named`` that rewrites it (its
    name is added to ``fired`` once), else stays."""

    def each(node: exp.Expression) -> exp.Expression:
        for name, fn in named:
            out = fn(node, ctx)
            if out is not None:  # handled: the first rule that takes the node has it (the node itself: kept)
                if out is not node and name not in fired:
                    fired.append(name)
                return out
        return node

    return each


def parse(sql: str, dialect: str) -> exp.Expression | None:
    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except (SqlglotError, ValueError, RecursionError):
        return None
    # sqlglot 30 types parse() with its Expr base; every node it parses is a concrete Expression.
    return cast(exp.Expression, trees[0]) if len(trees) == 1 else None


def own(node: exp.Expression) -> list[exp.Expression]:
    """``node`` and what it holds, without nested queries and window functions."""
    nested = (exp.Select, exp.Subquery, exp.Window)
    return [cast(exp.Expression, n) for n in node.walk(prune=lambda n: n is not node and isinstance(n, nested))]


def is_now(arg: exp.Expression | None) -> bool:
    return isinstance(arg, exp.Literal) and arg.is_string and arg.name.strip().lower() == "now"


def rewritten(tree: exp.Expression, fn: "Callable[[exp.Expression], exp.Expression]",
               passes: int = 4) -> exp.Expression:
    """``tree`` with ``fn`` applied to every node, again until nothing changes (at most ``passes`` times): sqlglot's
    ``transform`` does not visit what ``fn`` put in place, so a rewritten node's own arguments wait for the next
    pass (``date(DATE_TRUNC(...), '-1 year')``, ``CAST(strftime('%Y', 'now') AS INTEGER)``)."""
    for _ in range(passes):
        done, tree = tree, tree.transform(fn)
        if tree == done:
            break
    return tree


def call(name: str, *args: exp.Expression) -> exp.Expression:
    return cast(exp.Expression, exp.func(name, *args))


def unparen(node: exp.Expression | None) -> exp.Expression | None:
    """``node`` without the parentheses around it."""
    while isinstance(node, exp.Paren):
        node = cast(exp.Expression, node.this)
    return node

