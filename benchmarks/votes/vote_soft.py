"""Support from near groups: a vote's choice with partial credit between result groups (soft MBR-exec; no model).

``best`` settles a vote by ``2 ln(size) + log p(question | query)``: a group's support is its own size, and a
candidate whose result differs from another's by one row lends it nothing. Minimum Bayes risk decoding over
execution results (MBR-exec, Shi et al. 2022) with a graded similarity instead of equality gives each group
``size + beta * sum(size_h * sim(g, h))`` over the other groups ``h``, with three similarities:

- ``rows``: Jaccard of the two results' rows (as multisets, the first 50 rows each);
- ``cells``: Jaccard of their values, whatever row or column holds them (a result with an extra column or another
  column order still shares its values);
- ``ast``: Jaccard of the two queries' tables, columns, literals and node kinds (sqlglot).

Read on the two tuning grounds only (the 200-question dev sample and Spider training questions), as
:mod:`vote_learn` does; ``--held-out`` scores the other dev questions too.

    .venv/bin/python benchmarks/votes/vote_soft.py .eval-runs/features-train.jsonl .eval-runs/features-det-972.jsonl \
        --out benchmarks/results/vote-soft.json
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.votes.vote_learn import grounds_parser, read_grounds  # noqa: E402
from benchmarks.common import save

BETAS = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0)
SUPPORT = 2.0  # best's weight of ln(size)

Group = dict[str, Any]


def jaccard(a: Counter[Any], b: Counter[Any]) -> float:
    union = sum((a | b).values())
    return sum((a & b).values()) / union if union else 1.0


def rows(g: Group) -> Counter[Any]:
    return Counter(tuple(r) for r in g["rows"])


def cells(g: Group) -> Counter[Any]:
    return Counter(c for r in g["rows"] for c in r)


_parts: dict[str, Counter[str]] = {}


def query_parts(sql: str) -> Counter[str]:
    """The tables, columns, literals and node kinds of a query, counted (empty when sqlglot cannot read it)."""
    if sql not in _parts:
        import sqlglot
        from sqlglot import exp

        parts: Counter[str] = Counter()
        try:
            for node in sqlglot.parse_one(sql, read="sqlite").walk():
                if isinstance(node, exp.Column):
                    parts["column " + node.name.lower()] += 1
                elif isinstance(node, exp.Table):
                    parts["table " + node.name.lower()] += 1
                elif isinstance(node, exp.Literal):
                    parts["literal " + str(node.this).lower()] += 1
                elif not isinstance(node, (exp.Identifier, exp.TableAlias)):
                    parts[type(node).__name__] += 1
        except Exception:  # noqa: BLE001 - an unreadable query shares nothing
            pass
        _parts[sql] = parts
    return _parts[sql]


SIMILARITIES: dict[str, Callable[[Group, Group], float]] = {
    "rows": lambda g, h: jaccard(rows(g), rows(h)),
    "cells": lambda g, h: jaccard(cells(g), cells(h)),
    "ast": lambda g, h: jaccard(query_parts(g["sqls"][0] or ""), query_parts(h["sqls"][0] or "")),
}


def choose(q: dict[str, Any], similarity: str, beta: float) -> Group:
    """The group the soft weighing picks among the reviewed groups of a vote (a tie keeps the stage's order)."""
    shown = [g for g in q["groups"] if g["logp"] is not None] or q["groups"][:1]

    def score(i: int) -> tuple[float, int]:
        g = shown[i]
        near = sum(h["size"] * SIMILARITIES[similarity](g, h) for h in q["groups"] if h is not g) if beta else 0.0
        return SUPPORT * math.log(g["size"] + beta * near) + g["logp"] if len(shown) > 1 else 0.0, -i

    return shown[max(range(len(shown)), key=score)]


def main() -> None:
    args = grounds_parser(__doc__).parse_args()
    from rich.console import Console
    from rich.table import Table

    grounds = read_grounds(args)
    base = {g: [choose(q, "rows", 0.0)["right"] for q in qs] for g, qs in grounds.items()}
    out: list[dict[str, Any]] = []
    for similarity in SIMILARITIES:
        for beta in BETAS:
            if beta == 0.0 and out:
                continue  # beta 0 is best's weighing, whatever the similarity
            row: dict[str, Any] = {"similarity": similarity if beta else "none (best)", "beta": beta}
            for g, qs in grounds.items():
                got = [choose(q, similarity, beta)["right"] for q in qs]
                row[g] = {"right": sum(got), "fixed": sum(a and not b for a, b in zip(got, base[g])),
                          "broken": sum(b and not a for a, b in zip(got, base[g]))}
            out.append(row)
    table = Table(title="votes answered right (fixed / broken against best's weighing) "
                        f"({', '.join(f'{g}: {len(qs)} votes' for g, qs in grounds.items())})")
    table.add_column("similarity")
    table.add_column("beta", justify="right")
    for g in grounds:
        table.add_column(g, justify="right")
    for r in out:
        table.add_row(r["similarity"], str(r["beta"]),
                      *(f"{r[g]['right']} (+{r[g]['fixed']} / -{r[g]['broken']})" for g in grounds))
    Console(width=160).print(table)
    save(args.out, {"votes": {g: len(qs) for g, qs in grounds.items()},
                    "oracle": {g: sum(any(x["right"] for x in q["groups"]) for q in qs) for g, qs in grounds.items()},
                    "rows": out})


if __name__ == "__main__":
    main()
