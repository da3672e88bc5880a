"""A trained choice between a vote's groups, against ``best``'s hand-set weighing (no model).

``best`` settles a vote by ``2 ln(size) + log p(question | query)``, weights chosen by hand on the 200-question
sample. This fits the weights of more traits of each group instead (a conditional logit, fitted as a logistic
regression on the differences between a right and a wrong group of one vote), on one tuning ground, and scores the
fitted choice on the other. Traits: the group's size (log, and as a share of the candidates), the reviewer's score
(raw, and below the best group's), whether it holds the answer before voting, how many more tables its query reads
than the fewest, whether its result's width is not the commonest, its row count (log, and whether one row), and
whether its query has DISTINCT, GROUP BY, LIMIT, a set operation or a nested SELECT.

Input: the group lines of :mod:`vote_features` (one file per ground); the dev file is split into the 200-question
tuning sample and the rest, and only the first is read here unless ``--held-out`` is given.

    .venv/bin/python benchmarks/votes/vote_learn.py .eval-runs/features-train.jsonl .eval-runs/features-dev-972.jsonl \
        --out benchmarks/results/vote-learn.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import save, SAMPLES  # noqa: E402

SAMPLE = SAMPLES / "spider-dev-200.json"

TRAITS = ("ln size", "logp", "logp below best", "holds the answer", "tables beyond fewest", "odd width", "ln rows",
          "one row", "DISTINCT", "GROUP BY", "LIMIT", "set operation", "nested", "share")
#: Trait sets fitted: best's two, best's and the two priors measured by hand, then everything.
SETS = {"size + logp (best's)": TRAITS[:2], "+ answer, tables": TRAITS[:2] + TRAITS[3:5],
        "+ result shape": TRAITS[:8], "+ query shape": TRAITS[:2] + TRAITS[8:13], "all": TRAITS}
REGULARISATION = (0.01, 0.1, 1.0)


def has(sql: str, pattern: str) -> float:
    return 1.0 if re.search(pattern, sql, re.I) else 0.0


def traits(q: dict[str, Any]) -> tuple[list[dict[str, Any]], list[list[float]]]:
    """The reviewed groups of a voted question (those the selector could choose) and each one's traits."""
    groups = [g for g in q["groups"] if g["logp"] is not None] or q["groups"][:1]
    logps = [g["logp"] if g["logp"] is not None else 0.0 for g in groups]
    tables = [g["tables"] for g in groups]
    widths: Counter[int] = Counter()
    for g in q["groups"]:
        widths[g["columns"]] += g["size"]
    common = widths.most_common(1)[0][0]
    rows = []
    for g, lp, t in zip(groups, logps, tables):
        sql = g["sqls"][0] or ""
        rows.append([math.log(g["size"]), lp, lp - max(logps), float(g["greedy"]), t - min(tables),
                     float(g["columns"] != common), math.log(1 + g["row_count"]), float(g["row_count"] == 1),
                     has(sql, r"\bDISTINCT\b"), has(sql, r"\bGROUP BY\b"), has(sql, r"\bLIMIT\b"),
                     has(sql, r"\b(INTERSECT|EXCEPT|UNION)\b"), float(len(re.findall(r"\bSELECT\b", sql, re.I)) > 1),
                     g["size"] / q["candidates"]])
    return groups, rows


def pairs(questions: list[dict[str, Any]], cols: list[int]) -> tuple[list[list[float]], list[int]]:
    """Differences of traits between a right and a wrong group of one vote, both ways round."""
    x: list[list[float]] = []
    y: list[int] = []
    for q in questions:
        groups, rows = traits(q)
        for g, a in zip(groups, rows):
            for h, b in zip(groups, rows):
                if g["right"] and not h["right"]:
                    d = [a[c] - b[c] for c in cols]
                    x += [d, [-v for v in d]]
                    y += [1, 0]
    return x, y


def right(questions: list[dict[str, Any]], cols: list[int], weights: list[float]) -> int:
    """Votes whose highest-scoring group is right (a tie keeps the stage's order)."""
    n = 0
    for q in questions:
        groups, rows = traits(q)
        scores = [sum(w * r[c] for w, c in zip(weights, cols)) for r in rows]
        n += groups[max(range(len(groups)), key=lambda i: (scores[i], -i))]["right"]
    return n


def grounds_parser(doc: str | None) -> argparse.ArgumentParser:
    """The arguments of a script that reads the group lines of two tuning grounds (and the held-out dev questions
    only when asked)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("train", type=Path, help="group lines of the training ground (vote_features.py)")
    ap.add_argument("dev", type=Path, help="group lines of a dev run (vote_features.py)")
    ap.add_argument("--held-out", action="store_true", help="also score the dev questions outside the sample")
    ap.add_argument("--out", type=Path, required=True)
    return ap


def read_grounds(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """The voted questions of each ground: the training questions, the 200-question dev sample and, with
    ``--held-out``, the other dev questions."""
    def read(path: Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in path.open(encoding="utf-8")]

    sample = set(json.loads(SAMPLE.read_text())["ids"])
    dev = read(args.dev)
    grounds = {"training": read(args.train), "dev 200": [q for q in dev if q["id"] in sample]}
    if args.held_out:
        grounds["dev 772"] = [q for q in dev if q["id"] not in sample]
    return grounds


def main() -> None:
    args = grounds_parser(__doc__).parse_args()
    from rich.console import Console
    from rich.table import Table
    from sklearn.linear_model import LogisticRegression

    grounds = read_grounds(args)
    best = [1.0 * (t == "logp") + 2.0 * (t == "ln size") for t in TRAITS]
    rows: list[dict[str, Any]] = [{"traits": "best (2 ln size + logp, by hand)", "C": None, **{
        f"{g}": right(qs, list(range(len(TRAITS))), best) for g, qs in grounds.items()}}]
    for name, chosen in SETS.items():
        cols = [TRAITS.index(t) for t in chosen]
        for c in REGULARISATION:
            row: dict[str, Any] = {"traits": name, "C": c}
            for fit_on in ("training", "dev 200"):  # fitted on one tuning ground, scored on every other
                x, y = pairs(grounds[fit_on], cols)
                weights = list(LogisticRegression(C=c, fit_intercept=False, max_iter=2000).fit(x, y).coef_[0])
                for g, qs in grounds.items():
                    if g != fit_on:
                        row[f"{g} (fitted on {fit_on})"] = right(qs, cols, weights)
            rows.append(row)
    table = Table(title="voted questions answered right by each choice "
                        f"({', '.join(f'{g}: {len(qs)} votes' for g, qs in grounds.items())})")
    keys = list(dict.fromkeys(k for r in rows for k in r))
    for k in keys:
        table.add_column(k, justify="left" if k == "traits" else "right")
    for r in rows:
        table.add_row(*("" if r.get(k) is None else str(r[k]) for k in keys))
    Console(width=200).print(table)
    save(args.out, {"votes": {g: len(qs) for g, qs in grounds.items()},
                    "oracle": {g: sum(any(x["right"] for x in q["groups"]) for q in qs) for g, qs in grounds.items()},
                    "rows": rows})


if __name__ == "__main__":
    main()
