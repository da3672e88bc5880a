"""Tabulate evaluation run folders side by side: the ablation tables of BENCHMARKS.md.

    .venv/bin/python benchmarks/tools/summarize_runs.py .eval-runs/zero-shot-1.5b .eval-runs/repair-1.5b \
        --out benchmarks/results/ablation-200.json [--by-joins] [--common] [--against .eval-runs/repair-1.5b]

The first run is the baseline: every other run gets right->wrong and wrong->right counts against it
(questions both runs answered); ``--against RUN`` adds the same two counts against a second reference, such
as the answer a correction stage was handed. Cost columns are per question: model calls, prompt and completion tokens,
and seconds with cached model answers counted at what they first cost (runs that share a response cache
stay comparable). ``--common`` restricts every run to the questions all runs answered (for partial runs).
``--by-joins`` adds EX by the number of tables the gold query reads (1, 2, 3, 4+).
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import asdict
from pathlib import Path

import sqlglot
from sqlglot import exp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import write_json, parser  # noqa: E402
from sqlweave.eval.runner import QuestionResult, cost, load_results, summarize

LEVELS = ["easy", "medium", "hard", "extra"]


def gold_tables(sql: str) -> int:
    """How many distinct tables the gold query reads (subqueries included)."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except (sqlglot.errors.SqlglotError, ValueError):
        return 1
    return max(1, len({t.name.lower() for t in tree.find_all(exp.Table) if t.name}))


def join_bucket(sql: str) -> str:
    n = gold_tables(sql)
    return "4+" if n >= 4 else str(n)


def flips(results: list[QuestionResult], base: dict[str, QuestionResult]) -> tuple[int, int]:
    """(right -> wrong, wrong -> right) from ``base`` to ``results``, over the questions both answered."""
    both = [(base[r.id], r) for r in results if r.id in base]
    return sum(b.match and not r.match for b, r in both), sum(r.match and not b.match for b, r in both)


def row(name: str, meta: dict, results: list[QuestionResult], base: dict[str, QuestionResult] | None,
        against: dict[str, QuestionResult] | None = None) -> dict:
    s = summarize(results)
    out = {"run": name, "pipeline": meta.get("pipeline"), "model": meta.get("model"), **asdict(s),
           "mean_cost_seconds": statistics.mean(cost(r) for r in results) if results else 0.0}
    if base is not None:
        out["right_to_wrong"], out["wrong_to_right"] = flips(results, base)
    if against is not None:
        out["right_to_wrong_against"], out["wrong_to_right_against"] = flips(results, against)
    by_joins: dict[str, list[bool]] = {}
    for r in results:
        by_joins.setdefault(join_bucket(r.gold), []).append(r.match)
    out["by_joins"] = {k: (len(v), 100.0 * sum(v) / len(v)) for k, v in sorted(by_joins.items())}
    return out


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--by-joins", action="store_true", help="also print EX by number of tables in the gold query")
    ap.add_argument("--common", action="store_true", help="only the questions every run answered")
    ap.add_argument("--against", type=Path, help="a second reference run for right->wrong / wrong->right counts")
    args = ap.parse_args()
    loaded = [(run, json.loads((run / "run.json").read_text()), load_results(run)) for run in args.runs]
    if args.common:
        ids = set.intersection(*({r.id for r in res} for _, _, res in loaded))
        loaded = [(run, meta, [r for r in res if r.id in ids]) for run, meta, res in loaded]
    base = {r.id: r for r in loaded[0][2]}
    against = {r.id: r for r in load_results(args.against)} if args.against else None
    rows = [row(run.name, meta, res, None if i == 0 else base, against) for i, (run, meta, res) in enumerate(loaded)]

    vs = f" vs {args.against.name}" if args.against else ""
    head = ["run", "n", "EX", *LEVELS, "exec %", "right->wrong", "wrong->right",
            *([f"right->wrong{vs}", f"wrong->right{vs}"] if against else []), "calls / q", "prompt tok / q",
            "output tok / q", "median s / q", "mean s / q"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        lv = [f"{r['by_level'][k][1]:.1f}" if k in r["by_level"] else "-" for k in LEVELS]
        counts = [str(r.get(k, "-")) for k in ("right_to_wrong", "wrong_to_right")]
        if against:
            counts += [str(r.get(k, "-")) for k in ("right_to_wrong_against", "wrong_to_right_against")]
        print("| " + " | ".join([r["run"], str(r["n"]), f"{r['ex']:.1f}", *lv, f"{r['executable']:.1f}", *counts,
                                 f"{r['mean_model_calls']:.2f}", f"{r['mean_prompt_tokens']:,.0f}",
                                 f"{r['mean_completion_tokens']:,.0f}", f"{r['median_cost_seconds']:.2f}",
                                 f"{r['mean_cost_seconds']:.2f}"]) + " |")
    if args.by_joins:
        buckets = ["1", "2", "3", "4+"]
        print()
        print("| run | " + " | ".join(f"{b} table{'s' if b != '1' else ''}" for b in buckets) + " |")
        print("|" + "---|" * (len(buckets) + 1))
        for r in rows:
            cells = [f"{r['by_joins'][b][1]:.1f} ({r['by_joins'][b][0]})" if b in r["by_joins"] else "-"
                     for b in buckets]
            print(f"| {r['run']} | " + " | ".join(cells) + " |")
    if args.out:
        write_json(args.out, rows)


if __name__ == "__main__":
    main()
