"""EX against model calls for voting only below a confidence floor (the ``vote-if-unsure`` stage).

A run of ``default+vote-if-unsure`` records, for every question, the answer's calibrated confidence before voting
and what voting did. Voting is deterministic per question (fixed seeds), so the run made at one floor also tells
what every lower floor does: below floor ``t`` a question takes the voted answer, otherwise ``default``'s. This
prints EX, generations per question (the greedy answer, corrections and every sampled candidate) and seconds per
question for each floor, and writes them as JSON.

    .venv/bin/python benchmarks/votes/vote_curve.py .eval-runs/adaptive-200 --base .eval-runs/rewrite-abl/after-200 \
        --floors 0.3,0.4,0.5,0.6 --out benchmarks/results/vote-curve-200.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md

STAGE = "vote_if_unsure"


def read(folder: Path) -> list[dict]:
    """One record per question: match, cost, and the vote stage's confidence, samples, seconds and outcome."""
    traces = {}
    for line in (folder / "traces.jsonl").open():
        entry = json.loads(line)
        traces[entry["id"]] = next((e for e in entry["trace"] if e["stage"] == STAGE), None)
    rows = []
    for line in (folder / "results.jsonl").open():
        r = json.loads(line)
        vote = traces.get(r["id"])
        if vote is None:
            continue  # the question failed before the vote stage: no confidence recorded
        notes = vote.get("notes") or {}
        voted = not notes.get("skipped")
        samples = len(notes.get("votes") or []) - 1 if voted else 0
        vote_s = float(vote.get("seconds") or 0.0)
        cost = float(r.get("cost_seconds") or r.get("seconds") or 0.0)
        rows.append({"id": r["id"], "match": bool(r["match"]), "confidence": notes.get("confidence"),
                     "voted": voted, "samples": samples, "calls": r.get("model_calls") or 0,
                     "seconds": cost, "vote_seconds": vote_s})
    return rows


def at_floor(rows: list[dict], base: dict[str, bool], floor: float) -> dict:
    """Figures when questions below ``floor`` take the voted answer and the others ``default``'s."""
    right, generations, added, voted = 0, 0.0, [], 0
    for r in rows:
        below = r["voted"] and r["confidence"] is not None and r["confidence"] < floor
        voted += below
        right += r["match"] if below else base[r["id"]]
        generations += (r["calls"] - (1 if r["voted"] else 0)) + (r["samples"] if below else 0)
        added.append(r["vote_seconds"] if below else 0.0)
    n = len(rows)
    spent = [a for a in added if a]
    return {"floor": floor, "n": n, "voted_pct": round(100 * voted / n, 1), "ex": round(100 * right / n, 1),
            "generations_per_q": round(generations / n, 2), "added_mean_s": round(statistics.mean(added), 2),
            "added_median_s": round(statistics.median(added), 2),
            "vote_median_s": round(statistics.median(spent), 2) if spent else 0.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path, help="a run folder of default+vote-if-unsure")
    ap.add_argument("--base", type=Path, required=True,
                    help="a run of default on the same questions (the answers before voting)")
    ap.add_argument("--floors", default="0.3,0.4,0.5,0.6")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    rows = read(args.run)
    base = {json.loads(line)["id"]: bool(json.loads(line)["match"]) for line in (args.base / "results.jsonl").open()}
    rows = [r for r in rows if r["id"] in base]
    if not rows:
        print("no questions in common between the run and --base", file=sys.stderr)
        return 1
    floors = sorted({0.0, *(float(f) for f in args.floors.split(","))})
    table = [at_floor(rows, base, f) for f in floors]
    print("| vote below confidence | n | questions voted % | EX | generations / q | added s / q: median | mean | "
          "s per vote (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for t in table:
        label = "never (`default`)" if t["floor"] == 0.0 else f"{t['floor']:.2f}"
        print(f"| {label} | {t['n']} | {t['voted_pct']} | {t['ex']} | {t['generations_per_q']} | "
              f"{t['added_median_s']} | {t['added_mean_s']} | {t['vote_median_s']} |")
    if args.out:
        args.out.write_text(json.dumps({"run": str(args.run), "base": str(args.base), "floors": table}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
