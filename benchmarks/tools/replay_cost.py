"""What a run replayed from another run really costs per question: the base run's seconds plus the calls it added.

    .venv/bin/python benchmarks/tools/replay_cost.py benchmarks/checkpoints/rw-best-972 .eval-runs/ex-best-200 \
        --out benchmarks/results/examples-cost-200.json

A run made with ``sqlweave eval --replay BASE`` takes the calls BASE recorded from its traces. When BASE was
itself answered from the response cache by traces that kept no per-call cost (``rw-best-972``: its results keep
each question's first cost, its traces only each call's cache lookup time), those calls count as nearly free in
the new run's seconds, so its median and mean leave out everything the base pipeline paid. This script charges
each question of RUN with BASE's seconds for that question (``cost_seconds``: cached answers at what they first
cost) plus the first cost of every call of RUN that BASE did not make for the same question (matched by messages
and number of answers, as a replay matches them). Valid when RUN makes every call BASE made and more, as
``best+examples`` does over ``best``. Prints a table and writes JSON.

When BASE was itself a replay, ``--base-cost FILE`` (this script's JSON for BASE) charges each question with what
that file found BASE really cost instead of BASE's own results, so costs chain over replays of replays:

    .venv/bin/python benchmarks/tools/replay_cost.py benchmarks/checkpoints/ex-best-200 \
        benchmarks/checkpoints/ex4-best-200 --base-cost benchmarks/results/examples-cost-200.json \
        --out benchmarks/results/examples4-cost-200.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import save, scored, traces

from sqlweave.llm.recorded import call_key  # noqa: E402


def calls_by_question(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Every model call of each question of a run, in order."""
    return {t["id"]: [c for s in t["trace"] for c in s.get("calls") or []] for t in traces(folder)}


def key(call: dict[str, Any]) -> str:
    return call_key(call["messages"], len(call["outputs"]))


def replay_cost(base: Path, run: Path, base_cost: dict[str, float] | None = None) -> dict[str, Any]:
    """Per question: BASE's seconds (from ``base_cost`` when given), the seconds of the calls RUN added, and their
    sum; with medians and means."""
    base_results, run_results = scored(base), scored(run)
    base_calls, run_calls = calls_by_question(base), calls_by_question(run)
    rows = []
    for qid, result in run_results.items():
        if qid not in base_results or qid not in run_calls or (base_cost is not None and qid not in base_cost):
            continue
        made = Counter(key(c) for c in base_calls.get(qid, []))
        added = []
        for call in run_calls[qid]:
            k = key(call)
            if made[k] > 0:
                made[k] -= 1  # a call the base run made: its cost is in the base run's seconds
            else:
                added.append(float(call.get("cost_seconds") or call.get("seconds") or 0.0))
        if base_cost is not None:
            base_s = base_cost[qid]
        else:
            base_s = float(base_results[qid].get("cost_seconds") or base_results[qid]["seconds"])
        rows.append({"id": qid, "base_seconds": base_s, "added_calls": len(added), "added_seconds": sum(added),
                     "seconds": base_s + sum(added), "recorded_seconds": float(result.get("cost_seconds") or 0.0)})

    def column(name: str) -> dict[str, float]:
        values = [r[name] for r in rows]
        return {"median": round(statistics.median(values), 2), "mean": round(statistics.mean(values), 2)}

    return {"base": str(base), "run": str(run), "base_cost": base_cost is not None, "questions": len(rows),
            "added_calls_per_question": round(sum(r["added_calls"] for r in rows) / max(len(rows), 1), 2),
            **{name: column(name) for name in ("base_seconds", "added_seconds", "seconds", "recorded_seconds")},
            "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path, help="the run that was replayed (a folder with results and traces)")
    parser.add_argument("run", type=Path, help="the run made with --replay BASE")
    parser.add_argument("--base-cost", type=Path, help="this script's JSON for BASE, when BASE was a replay too")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    if not args.run.exists() or not args.base.exists():
        sys.exit(f"no run folder at {args.run if not args.run.exists() else args.base}")
    base_cost = None
    if args.base_cost:
        base_cost = {r["id"]: float(r["seconds"]) for r in json.loads(args.base_cost.read_text())["rows"]}
    figures = replay_cost(args.base, args.run, base_cost)
    if not figures["questions"]:
        sys.exit("no question of the run is in the base run")
    print(f"{figures['questions']} questions; {figures['added_calls_per_question']} calls per question added to "
          f"{args.base.name}'s")
    print("| seconds per question | median | mean |\n|---|---|---|")
    source = f"as {args.base_cost.name} costs it" if args.base_cost else "its own results"
    for name, label in (("base_seconds", f"{args.base.name} ({source})"),
                        ("added_seconds", "the calls added"), ("seconds", f"{args.run.name}: both"),
                        ("recorded_seconds", f"{args.run.name} as its results record them")):
        print(f"| {label} | {figures[name]['median']:.2f} | {figures[name]['mean']:.2f} |")
    if args.out:
        save(args.out, figures)


if __name__ == "__main__":
    main()
