"""How a vote's sampled answers open, and how often each kind is right (no model).

A sampled answer of the embedded model either opens with its query (a ```sql block, or the bare statement) or
with prose reasoning ("Let's walk through the question and the database..."), which is longer and sometimes
reaches the token limit before any query. For each run, this counts the sampled and the greedy answers of every
vote by their opening, how many hold a query, how many are right (made a candidate as the vote stage makes it and
compared with the gold result, as :mod:`vote_oracle` does), their output tokens (a call of several samples
shares its count out by length), and the questions whose only right readings came from prose-first samples. It
is the measurement behind the vote setting that held samples to a code block (measured, then removed).

    .venv/bin/python benchmarks/votes/vote_openings.py benchmarks/checkpoints/ex-best-200 \\
        --out benchmarks/results/vote-openings-200.json
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import SPIDER, save, scored, traces, parser
from benchmarks.votes.vote_oracle import STAGE, candidate_right, spider_db, vote_state

KINDS = ("greedy, query first", "greedy, prose first", "sampled, query first", "sampled, prose first")


def opening(text: str) -> str:
    """``"query"`` when ``text`` opens with a code fence or a statement, else ``"prose"``."""
    head = text.lstrip()
    return "query" if head.startswith("```") or head[:6].upper() == "SELECT" or head[:4].upper() == "WITH" else "prose"


def openings(folder: Path, spider: Path) -> dict[str, Any]:
    """The counts of one run (see the module docstring)."""
    from sqlweave.eval.runner import GoldCache
    from sqlweave.sql.quiet import reading_untrusted_text

    results = scored(folder)
    dbs: dict[str, Any] = {}
    gold = GoldCache()
    counts: Counter[tuple[str, str]] = Counter()
    only_prose = {"right": 0, "missed": 0}
    for entry in traces(folder):
        r = results.get(entry["id"])
        vote = next((s for s in entry["trace"] if s["stage"] == STAGE and s.get("calls")), None)
        if r is None or vote is None:
            continue
        db = spider_db(dbs, spider, r["db_id"])
        _, candidate = vote_state(r, db)
        right_by: Counter[str] = Counter()
        with reading_untrusted_text():
            for call in vote["calls"]:
                options = call.get("options") or {}
                if "continuation" in options or "choices" in options:  # the reviewer's scores, not answers
                    continue
                drawn = "sampled" if options.get("temperature") else "greedy"
                outputs = call.get("outputs", [])
                chars = sum(len(t) for t in outputs) or 1
                for text in outputs:
                    # a call of several samples reports their tokens together: shared out by length
                    tokens = call.get("completion_tokens", 0) * len(text) / chars
                    kind = f"{drawn}, {opening(text)} first"
                    c = candidate(text)
                    right = candidate_right(db, r["gold"], c, gold)
                    counts[kind, "answers"] += 1
                    counts[kind, "with a query"] += c.sql is not None
                    counts[kind, "right"] += right
                    counts[kind, "tokens"] += tokens
                    right_by[kind] += right
        if right_by["sampled, prose first"] and not sum(v for k, v in right_by.items() if k != "sampled, prose first"):
            only_prose["right" if r["match"] else "missed"] += 1
    rows = []
    for kind in KINDS:
        n = counts[kind, "answers"]
        rows.append({"kind": kind, "answers": n, "with_a_query": counts[kind, "with a query"],
                     "right": counts[kind, "right"], "right_pct": round(100 * counts[kind, "right"] / n, 1) if n else None,
                     "mean_output_tokens": round(counts[kind, "tokens"] / n, 1) if n else None})
    return {"run": folder.name, "kinds": rows, "only_prose_right": only_prose}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--spider", type=Path, default=SPIDER)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    runs = [openings(folder, args.spider) for folder in args.runs]
    table = Table(title="A vote's answers by how they open")
    for col in ("run", "answers", "n", "with a query", "right", "right %", "output tokens (mean)"):
        table.add_column(col, justify="left" if col in ("run", "answers") else "right")
    for run in runs:
        for row in run["kinds"]:
            table.add_row(run["run"], row["kind"], str(row["answers"]), str(row["with_a_query"]), str(row["right"]),
                          "-" if row["right_pct"] is None else f"{row['right_pct']:.1f}",
                          "-" if row["mean_output_tokens"] is None else f"{row['mean_output_tokens']:.1f}")
    Console().print(table)
    for run in runs:
        Console().print(f"{run['run']}: questions whose only right readings were prose-first samples: "
                        f"{run['only_prose_right']['right']} answered right, {run['only_prose_right']['missed']} missed")
    save(args.out, {"runs": runs})


if __name__ == "__main__":
    main()
