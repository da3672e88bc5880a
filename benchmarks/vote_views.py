"""Which candidates should a vote hear? Majority votes replayed over subsets of a run's candidates (no model).

A run of a pipeline whose ``vote_if_unsure`` stage asks the question again in other schema views
(``best+diverse``: the vote's 4 samples, then for each view a greedy answer and its samples, one call each) keeps
every candidate's text in its traces. This replays the vote on each voted question with a chosen subset of those
candidates, exactly as the stage treats them (SQL extracted and checked, names repaired by rule, the ``rewrite``
stage's rules applied, grouped by result, the largest group winning and a tie keeping the earliest), and scores
the winner against Spider's gold result. Close votes are settled by group size here, not by reviewer reranking,
so every configuration is compared on the same footing. The "perfect choice" column is the share right if a
perfect selector chose among the subset. Generations per question count the answer as one (its rare corrections
are left out) and each voted question's extra candidates.

    .venv/bin/python benchmarks/vote_views.py .eval-runs/diverse-200 --out benchmarks/results/vote-views-200.json

``greedy x2`` counts each greedy answer (the answer before voting, each view's) twice; ``by views`` lets the
result reached from the most prompt forms win (then the largest group).

Subsets are named by what joins the answer before voting: ``s4`` its 4 samples, ``c1`` the compact view's greedy
answer and ``c1+k`` with k of its samples, ``m1`` and ``m1+k`` the same for the M-Schema view.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vote_oracle import STAGE, answer_before, replay_parser, save, spider_db, traces, vote_state  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: Subsets replayed: name -> (keep the answer before voting, samples of the generation prompt, and for each view
#: (``c``: compact, ``m``: M-Schema) its greedy answer (0 or 1) and how many of its samples).
SUBSETS: dict[str, tuple[bool, int, dict[str, tuple[int, int]]]] = {
    "answer alone": (True, 0, {}),
    "s2": (True, 2, {}),
    "s4 (best)": (True, 4, {}),
    "s4 + c1": (True, 4, {"c": (1, 0)}),
    "s4 + c1+2": (True, 4, {"c": (1, 2)}),
    "s4 + c1+4": (True, 4, {"c": (1, 4)}),
    "s4 + m1": (True, 4, {"m": (1, 0)}),
    "s4 + m1+2": (True, 4, {"m": (1, 2)}),
    "s4 + m1+4": (True, 4, {"m": (1, 4)}),
    "s4 + c1 + m1": (True, 4, {"c": (1, 0), "m": (1, 0)}),
    "s4 + c1+2 + m1+2": (True, 4, {"c": (1, 2), "m": (1, 2)}),
    "s4 + c1+4 + m1+4": (True, 4, {"c": (1, 4), "m": (1, 4)}),
    "s2 + c1+1 + m1+1": (True, 2, {"c": (1, 1), "m": (1, 1)}),
    "answer + c1 + m1": (True, 0, {"c": (1, 0), "m": (1, 0)}),
    "answer + c1+2 + m1+2": (True, 0, {"c": (1, 2), "m": (1, 2)}),
    "s4 + c1+4, greedy x2": (True, 4, {"c": (1, 4)}),
    "s4 + c1+4 + m1+4, greedy x2": (True, 4, {"c": (1, 4), "m": (1, 4)}),
    "s4 + c1+4 + m1+4, by views": (True, 4, {"c": (1, 4), "m": (1, 4)}),
    "s4 + c1+2 + m1+2, by views": (True, 4, {"c": (1, 2), "m": (1, 2)}),
    "s4 + c1 + m1, by views": (True, 4, {"c": (1, 0), "m": (1, 0)}),
    "c1 (compact greedy instead)": (False, 0, {"c": (1, 0)}),
    "m1 (M-Schema greedy instead)": (False, 0, {"m": (1, 0)}),
    "c1+4 (compact alone)": (False, 0, {"c": (1, 4)}),
    "m1+4 (M-Schema alone)": (False, 0, {"m": (1, 4)}),
}


def view_of(call: dict[str, Any]) -> str:
    """Which prompt a vote's call used, from the schema its user message shows: ``s`` (the generation prompt's
    CREATE TABLE statements), ``m`` (M-Schema) or ``c`` (compact)."""
    user = call["messages"][-1]["content"]
    return "s" if "CREATE TABLE" in user else "m" if "# Table:" in user else "c"


def replay(folder: Path, spider: Path, floor: float | None = None) -> dict[str, Any]:
    from sqlweave.eval.runner import GoldCache, execution_match
    from sqlweave.sql.quiet import reading_untrusted_text
    from sqlweave.stages.candidate import attempt, vote_groups

    results = {r["id"]: r for r in map(json.loads, (folder / "results.jsonl").open(encoding="utf-8"))}
    dbs: dict[str, Any] = {}
    gold_cache = GoldCache()
    right = {name: 0 for name in SUBSETS}
    oracle = {name: 0 for name in SUBSETS}
    voted = 0
    for entry in traces(folder):
        r = results.get(entry["id"])
        vote = next((s for s in entry["trace"] if s["stage"] == STAGE), None)
        if r is None or vote is None or not vote.get("calls"):
            for name in SUBSETS:
                right[name] += bool(r and r["match"])
                oracle[name] += bool(r and r["match"])
            continue
        db = spider_db(dbs, spider, r["db_id"])
        by_view: dict[str, list[list[str]]] = {}
        for call in vote["calls"]:
            by_view.setdefault(view_of(call), []).append(list(call.get("outputs", [])))
        with reading_untrusted_text():
            state, prepared = vote_state(r, db)
            verdicts: dict[int, bool] = {}

            def correct(a: Any) -> bool:
                if id(a) not in verdicts:
                    verdicts[id(a)] = a.kind in ("ok", "empty") and bool(execution_match(db, r["gold"], a.sql, gold_cache)[0])
                return verdicts[id(a)]

            first = attempt(state, answer_before(entry, vote) or "")
            if floor is not None and vote["notes"].get("confidence", 0.0) >= floor:  # not voted at this floor
                for name in SUBSETS:
                    right[name] += correct(first) if first.sql else False
                    oracle[name] += correct(first) if first.sql else False
                continue
            voted += 1
            samples = [prepared(t) for t in (by_view.get("s") or [[]])[0]]
            # each view: its greedy answer, then its samples (one call each)
            views = {v: [[prepared(t) for t in call] for call in calls] for v, calls in by_view.items() if v != "s"}
            for name, (keep_answer, k_s, wanted) in SUBSETS.items():
                weight = 2 if name.endswith("greedy x2") else 1  # greedy answers counted twice
                cands = ([first] * weight if keep_answer else []) + samples[:k_s]
                tags = ["s"] * len(cands)
                for v, (greedy, k) in wanted.items():
                    calls = views.get(v, [])
                    cands += [a for call in calls[:greedy] for a in call] * weight
                    cands += [a for call in calls[1:1 + k] for a in call]
                    tags += [v] * (len(cands) - len(tags))
                groups = vote_groups(cands)
                if not cands:
                    continue
                if name.endswith("by views"):  # the result the most prompt forms reach, then the largest
                    groups.sort(key=lambda g: (-len({tags[i] for i in g}), -len(g), g[0]))
                chosen = cands[groups[0][0]] if groups else cands[0]
                right[name] += correct(chosen) if chosen.sql else False
                oracle[name] += any(correct(c) for c in cands if c.sql)
    n = len(results)
    return {"run": folder.name, "questions": n, "floor": floor, "voted": voted,
            "subsets": {name: {"ex": round(100 * right[name] / n, 1), "oracle_ex": round(100 * oracle[name] / n, 1),
                               "right": right[name], "generations_per_vote": generations(name),
                               "generations_per_question": round(1 + voted * generations(name) / n, 2)}
                        for name in SUBSETS}}


def generations(name: str) -> int:
    """The model generations a vote over subset ``name`` costs beyond the answer before voting."""
    _, k_s, wanted = SUBSETS[name]
    return k_s + sum(greedy + k for greedy, k in wanted.values())


def main() -> None:
    ap = replay_parser(__doc__)
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    row = replay(args.run, args.spider, args.floor)
    table = Table(title=f"{row['run']}: majority vote over subsets of the candidates ({row['voted']} questions voted "
                        f"of {row['questions']})")
    for col in ("candidates beside the answer", "generations / vote", "generations / q", "right", "EX",
                "EX with a perfect choice"):
        table.add_column(col, justify="left" if col.startswith("cand") else "right")
    for name, r in row["subsets"].items():
        table.add_row(name, str(r["generations_per_vote"]), f"{r['generations_per_question']:.2f}", str(r["right"]),
                      f"{r['ex']:.1f}", f"{r['oracle_ex']:.1f}")
    Console(width=160).print(table)
    save(args.out, row)


if __name__ == "__main__":
    main()
