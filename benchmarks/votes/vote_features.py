"""Every result group of every reviewed vote of a run, with what a selector could know of it (no model).

A run of ``default`` or ``best`` keeps, for each voted question, the sampled answers and the reviewer's score of
one query of each result group. This rebuilds the groups exactly as the vote stage did (:func:`vote_candidates`,
:func:`vote_groups`), scores each against Spider's gold result, and writes one JSON line per voted question: its
groups in the stage's order, each with its size, the reviewer's log-probability of the question, whether it holds
the answer before voting, its queries and how many tables the first reads, and its result's shape and rows (at
most 50). A selection rule can then be
tried on these lines in seconds, and fitted on a tuning ground without ever reading a held-out verdict.

    .venv/bin/python benchmarks/votes/vote_features.py .eval-runs/rp-best-972 --out .eval-runs/features-dev-972.jsonl

The output is written as it goes and a rerun into the same file resumes after the last question it holds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import SPIDER, scored, traces, parser  # noqa: E402
from benchmarks.votes.vote_oracle import STAGE, rebuilt_groups, spider_db, tables_read, vote_candidates

#: Rows of a group's result kept for comparing results between groups.
KEEP_ROWS = 50


def group_lines(entry: dict[str, Any], r: dict[str, Any], db: Any, gold_cache: Any) -> dict[str, Any] | None:
    """The voted question of ``entry`` as one line: its groups and what is known of each, or ``None`` when the
    replay does not rebuild the stage's groups (a probe timed out, ...)."""
    from sqlweave.eval.runner import execution_match

    vote = next(s for s in entry["trace"] if s["stage"] == STAGE)
    logp = (vote["notes"].get("selector") or {}).get("logp") or []
    cands = vote_candidates(entry, vote, r, db)
    groups = rebuilt_groups(vote, cands)
    if groups is None:
        return None
    out = []
    for i, g in enumerate(groups):
        first = cands[g[0]]
        result = first.result
        assert result is not None
        out.append({
            "size": len(g), "greedy": 0 in g, "logp": logp[i] if i < len(logp) else None,
            "right": bool(first.sql) and bool(execution_match(db, r["gold"], first.sql, gold_cache)[0]),
            "sqls": [cands[j].sql for j in g], "tables": tables_read(first.sql), "columns": len(result.columns),
            "row_count": len(result.rows),
            "truncated": result.truncated, "rows": [list(map(repr, row)) for row in result.rows[:KEEP_ROWS]],
        })
    return {"id": r["id"], "db_id": r["db_id"], "question": r["question"], "hardness": r["hardness"],
            "match": bool(r["match"]), "candidates": len(cands),
            "failed": sum(c.kind not in ("ok", "empty") for c in cands), "groups": out}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("run", type=Path)
    ap.add_argument("--spider", type=Path, default=SPIDER)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    from rich.progress import track

    from sqlweave.eval.runner import GoldCache
    from sqlweave.sql.quiet import reading_untrusted_text

    results = scored(args.run)
    done = {json.loads(line)["id"] for line in args.out.open(encoding="utf-8")} if args.out.exists() else set()
    dbs: dict[str, Any] = {}
    gold_cache = GoldCache()
    left_out = 0
    with args.out.open("a", encoding="utf-8") as fh:
        for entry in track(list(traces(args.run)), description="groups"):
            r = results.get(entry["id"])
            vote = next((s for s in entry["trace"] if s["stage"] == STAGE and s.get("calls")), None)
            if r is None or vote is None or r["id"] in done:
                continue
            with reading_untrusted_text():
                line = group_lines(entry, r, spider_db(dbs, args.spider, r["db_id"]), gold_cache)
            if line is None:
                left_out += 1
                continue
            fh.write(json.dumps(line) + "\n")
            fh.flush()
    print(f"{args.out}: {len(done)} questions held before, {left_out} left out (groups not rebuilt)")


if __name__ == "__main__":
    main()
