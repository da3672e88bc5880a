"""Where a question's seconds go, by phase, from an evaluation run's traces.

    .venv/bin/python benchmarks/speed/profile_phases.py .eval-runs/default-200 [.eval-runs/best-200 ...] \
        --out benchmarks/results/profile-phases.json

Each model call of a trace made since calls carry ``timings`` divides into evaluating its prompt (the tokens not
reused from an evaluated prefix) and writing its answer, as llama.cpp counted them. Prompts are grouped by kind:
the stage that asked and the prompt template whose instructions the call's system message begins with (a vote's
samples, its views, a review, a correction). Stage time outside model calls is the rest: executing candidates,
parsing, retrieval. Calls answered from the response cache, or recorded before timings existed, are counted at
what they first cost under "model (not split)". Per question: mean and median seconds of each phase, and its share
of the total.
"""

from __future__ import annotations

import argparse
import json
import sys
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md

from benchmarks.common import traces  # noqa: E402
from sqlweave.prompts import load

TEMPLATES = ("zero_shot", "zero_shot_conventions", "zero_shot_examples", "zero_shot_link_first", "few_shot",
             "review", "review_examples", "choose", "simplify", "generate_evidence", "explain", "agent",
             "dac_link", "dac_skeleton", "dac_fix_entities", "dac_fix_skeleton")


def template_of(system: str) -> str:
    """The template whose system part ``system`` begins with (the longest that matches), or ``other``."""
    best, length = "other", 0
    for name in TEMPLATES:
        try:
            head = load(name)[0].split("{", 1)[0].strip()[:80]
        except Exception:  # noqa: BLE001 - a template this checkout does not have
            continue
        if head and system.strip().startswith(head) and len(head) > length:
            best, length = name, len(head)
    return best


def phases(trace: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds of one question by phase."""
    out: dict[str, float] = defaultdict(float)
    for entry in trace:
        stage = entry["stage"]
        calls = entry.get("calls") or []
        called = 0.0
        for call in calls:
            seconds = float(call.get("seconds") or 0.0)
            called += seconds
            options = call.get("options") or {}
            sampled = "samples" if options.get("temperature") else "greedy"
            messages = call.get("messages") or []
            kind = template_of(messages[0]["content"]) if messages and messages[0]["role"] == "system" else "other"
            timings = call.get("timings")
            if call.get("cached") or not timings:
                out["model (not split)"] += float(call.get("cost_seconds") or seconds)
                continue
            out[f"prompt: {stage} / {kind}"] += float(timings["prompt_seconds"])
            out[f"answer: {stage} ({sampled})"] += float(timings["generate_seconds"])
            out["model overhead (sampling, detokenizing)"] += max(
                0.0, seconds - float(timings["prompt_seconds"]) - float(timings["generate_seconds"]))
        rest = max(0.0, float(entry.get("seconds") or 0.0) - called)
        database = float((entry.get("notes") or {}).get("elapsed_s") or 0.0) if stage == "execute" else 0.0
        if database:
            out["database: execute"] += min(database, rest)
            rest -= min(database, rest)
        out[f"other: {stage}"] += rest
    return out


def profile(folder: Path) -> dict[str, Any]:
    per_question = [phases(t["trace"]) for t in traces(folder)]
    names = sorted({k for q in per_question for k in q})
    totals = [sum(q.values()) for q in per_question]
    rows = []
    for name in names:
        values = [q.get(name, 0.0) for q in per_question]
        rows.append({"phase": name, "mean_s": statistics.mean(values), "median_s": statistics.median(values),
                     "share": sum(values) / max(1e-9, sum(totals))})
    rows.sort(key=lambda r: -r["mean_s"])
    return {"run": str(folder), "questions": len(per_question), "mean_s": statistics.mean(totals) if totals else 0.0,
            "median_s": statistics.median(totals) if totals else 0.0, "phases": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="sqlweave eval --out folders")
    parser.add_argument("--out", type=Path, help="write the profiles here as JSON")
    parser.add_argument("--min-share", type=float, default=0.005, help="leave out phases below this share")
    args = parser.parse_args()
    found = [profile(run) for run in args.runs]
    for p in found:
        print(f"\n{p['run']}: {p['questions']} questions, {p['mean_s']:.2f} s mean, {p['median_s']:.2f} s median")
        print(f"{'phase':<58} {'mean s':>8} {'median s':>9} {'share':>7}")
        for r in p["phases"]:
            if r["share"] >= args.min_share:
                print(f"{r['phase']:<58} {r['mean_s']:>8.2f} {r['median_s']:>9.2f} {r['share']:>6.1%}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
