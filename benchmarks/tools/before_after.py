"""Two sets of runs of the same presets, before and after a change, compared question by question.

    .venv/bin/python benchmarks/tools/before_after.py .eval-runs/arch-before .eval-runs/arch-after \
        --presets zero-shot,default,ensemble --out benchmarks/results/architecture-step.json

Each folder holds one run per preset (what ``sqlweave eval ablate --out FOLDER`` writes). Only questions both runs
finished count (a run still in progress compares on what it has). Prints a Markdown table: EX, executable and
model calls per question before and after, and how many predictions are the identical SQL text.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import write_json  # noqa: E402


def _load(path: Path) -> dict[str, dict]:
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line cut short by an interruption
        out[row["id"]] = row
    return out


def compare(before: Path, after: Path, preset: str) -> dict[str, float] | None:
    a, b = _load(before / preset / "results.jsonl"), _load(after / preset / "results.jsonl")
    common = sorted(set(a) & set(b))
    if not common:
        return None
    n = len(common)

    def pct(d: dict[str, dict], key: str) -> float:
        return round(100 * sum(bool(d[i][key]) for i in common) / n, 1)

    def calls(d: dict[str, dict]) -> float:
        return round(sum(d[i]["model_calls"] for i in common) / n, 2)

    return {"questions": n, "ex_before": pct(a, "match"), "ex_after": pct(b, "match"),
            "executable_before": pct(a, "executable"), "executable_after": pct(b, "executable"),
            "calls_before": calls(a), "calls_after": calls(b),
            "same_sql": sum(a[i]["prediction"] == b[i]["prediction"] for i in common),
            "same_verdict": sum(a[i]["match"] == b[i]["match"] for i in common)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--presets", default="zero-shot,default,ensemble")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = {p: r for p in args.presets.split(",") if (r := compare(args.before, args.after, p.strip()))}
    print("| preset | questions | EX before | EX after | executable before | executable after | calls before "
          "| calls after | same SQL |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p, r in results.items():
        print(f"| {p} | {r['questions']} | {r['ex_before']:.1f} | {r['ex_after']:.1f} | {r['executable_before']:.1f} "
              f"| {r['executable_after']:.1f} | {r['calls_before']:.2f} | {r['calls_after']:.2f} "
              f"| {r['same_sql']}/{r['questions']} |")
    if args.out:
        write_json(args.out, results)


if __name__ == "__main__":
    main()
