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

    .venv/bin/python benchmarks/votes/vote_views.py .eval-runs/diverse-200 --out benchmarks/results/vote-views-200.json

``greedy x2`` counts each greedy answer (the answer before voting, each view's) twice, ``e x2`` every candidate of
the few-shot view; ``by views`` lets the result reached from the most prompt forms win (then the largest group).

Subsets are named by what joins the answer before voting: ``s4`` its 4 samples, ``c1`` the compact view's greedy
answer and ``c1+k`` with k of its samples, ``m1`` and ``m1+k`` the same for the M-Schema view, ``e1`` and ``e1+k``
for the few-shot view of ``+examples``, ``q1`` the greedy answer of the view chosen by the question
(``--vote question_examples=4``):

    .venv/bin/python benchmarks/votes/vote_views.py .eval-runs/ex-best-200 --subsets examples \
        --out benchmarks/results/vote-examples-200.json

Each subset is also replayed with ``best``'s weighing (a group scores 2 ln(its size) plus the reviewer's
log-probability of the question under its query), in a run that reviewed every group: the score of a group's
result is read from the run's own vote, whose candidates every subset's are a part of.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import save, traces
from benchmarks.votes.vote_oracle import STAGE, answer_before, candidate_right, rebuilt_groups, replay_parser, spider_db, vote_state


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


#: The subsets ``--subsets examples`` replays: the few-shot view (``e``) of ``+examples`` beside the samples.
EXAMPLE_SUBSETS: dict[str, tuple[bool, int, dict[str, tuple[int, int]]]] = {
    "answer alone": (True, 0, {}),
    "s4 (best)": (True, 4, {}),
    "s4 + e1": (True, 4, {"e": (1, 0)}),
    "s4 + e1+1": (True, 4, {"e": (1, 1)}),
    "s4 + e1+2 (+examples)": (True, 4, {"e": (1, 2)}),
    "s4 + e1+4 (a run with --vote view_samples=4)": (True, 4, {"e": (1, 4)}),
    "s4 + e1+2 + q1 (a run with --vote question_examples=4)": (True, 4, {"e": (1, 2), "q": (1, 0)}),
    "s2 + e1+2": (True, 2, {"e": (1, 2)}),
    "answer + e1+2": (True, 0, {"e": (1, 2)}),
    "e1 (examples greedy instead)": (False, 0, {"e": (1, 0)}),
    "e1+2 (examples alone)": (False, 0, {"e": (1, 2)}),
    "s4 + e1+2, greedy x2": (True, 4, {"e": (1, 2)}),
    "s4 + e1+2, e x2": (True, 4, {"e": (1, 2)}),
    "s4 + e1+2, by views": (True, 4, {"e": (1, 2)}),
}
SUBSET_SETS = {"views": SUBSETS, "examples": EXAMPLE_SUBSETS}
#: ``best``'s weight of a group's size against the question's log-probability (:data:`sqlweave.presets.VOTE_SUPPORT`).
SUPPORT = 2.0


def view_of(call: dict[str, Any]) -> str:
    """Which prompt a vote's call used, from what its user message shows: ``e`` (few-shot examples), ``s`` (the
    generation prompt's CREATE TABLE statements), ``m`` (M-Schema) or ``c`` (compact)."""
    user = call["messages"][-1]["content"]
    return ("e" if "Examples from other databases:" in user else "s" if "CREATE TABLE" in user
            else "m" if "# Table:" in user else "c")


def replay(folder: Path, spider: Path, floor: float | None = None,
           subsets: dict[str, tuple[bool, int, dict[str, tuple[int, int]]]] = SUBSETS) -> dict[str, Any]:
    from sqlweave.eval.runner import GoldCache
    from sqlweave.sql.quiet import reading_untrusted_text
    from sqlweave.stages.candidate import attempt, vote_groups

    results = {r["id"]: r for r in map(json.loads, (folder / "results.jsonl").open(encoding="utf-8"))}
    dbs: dict[str, Any] = {}
    gold_cache = GoldCache()
    right = {name: 0 for name in subsets}
    oracle = {name: 0 for name in subsets}
    weighed = {name: 0 for name in subsets}
    voted = 0
    for entry in traces(folder):
        r = results.get(entry["id"])
        vote = next((s for s in entry["trace"] if s["stage"] == STAGE), None)
        if r is None or vote is None or not vote.get("calls"):
            for counts in (right, oracle, weighed):
                for name in subsets:
                    counts[name] += bool(r and r["match"])
            continue
        db = spider_db(dbs, spider, r["db_id"])
        by_view: dict[str, list[list[str]]] = {}
        for call in vote["calls"]:
            if call.get("outputs"):  # a reviewer's scoring call writes nothing
                view = view_of(call)
                options = call.get("options")  # older traces kept none: their few-shot calls stay one view
                if view == "e" and by_view.get("e") and options and "seed" not in options:
                    view = "q"  # a second greedy few-shot call: the view chosen by the question
                by_view.setdefault(view, []).append(list(call["outputs"]))
        with reading_untrusted_text():
            state, prepared = vote_state(r, db)
            verdicts: dict[int, bool] = {}

            def correct(a: Any) -> bool:
                if id(a) not in verdicts:
                    verdicts[id(a)] = candidate_right(db, r["gold"], a, gold_cache)
                return verdicts[id(a)]

            first = attempt(state, answer_before(entry, vote) or "")
            if floor is not None and vote["notes"].get("confidence", 0.0) >= floor:  # not voted at this floor
                for counts in (right, oracle, weighed):
                    for name in subsets:
                        counts[name] += correct(first) if first.sql else False
                continue
            voted += 1
            samples = [prepared(t) for t in (by_view.get("s") or [[]])[0]]
            # each view: its greedy answer, then its samples (one call each)
            views = {v: [[prepared(t) for t in call] for call in calls] for v, calls in by_view.items() if v != "s"}
            score = result_scores(vote, [first] + samples + [a for v in views.values() for call in v for a in call])
            for name, (keep_answer, k_s, wanted) in subsets.items():
                weight = 2 if name.endswith("greedy x2") else 1  # greedy answers counted twice
                cands = ([first] * weight if keep_answer else []) + samples[:k_s]
                tags = ["s"] * len(cands)
                for v, (greedy, k) in wanted.items():
                    calls = views.get(v, [])
                    twice = 2 if name.endswith(f"{v} x2") else 1  # every candidate of this view counted twice
                    cands += [a for call in calls[:greedy] for a in call] * weight * twice
                    cands += [a for call in calls[1:1 + k] for a in call] * twice
                    tags += [v] * (len(cands) - len(tags))
                groups = vote_groups(cands)
                if not cands:
                    continue
                if name.endswith("by views"):  # the result the most prompt forms reach, then the largest
                    groups.sort(key=lambda g: (-len({tags[i] for i in g}), -len(g), g[0]))
                chosen = cands[groups[0][0]] if groups else cands[0]
                right[name] += correct(chosen) if chosen.sql else False
                oracle[name] += any(correct(c) for c in cands if c.sql)
                if score is not None and groups:  # best's weighing, each group's score read from the run's vote
                    pick = max(groups, key=lambda g: (SUPPORT * math.log(len(g)) + score.get(cands[g[0]].rows_key(), -1e9),
                                                      -g[0]))
                    weighed[name] += correct(cands[pick[0]])
                else:
                    weighed[name] += correct(chosen) if chosen.sql else False
    n = len(results)
    return {"run": folder.name, "questions": n, "floor": floor, "voted": voted,
            "subsets": {name: {"ex": round(100 * right[name] / n, 1), "oracle_ex": round(100 * oracle[name] / n, 1),
                               "right": right[name], "weighed_right": weighed[name],
                               "weighed_ex": round(100 * weighed[name] / n, 1),
                               "generations_per_vote": generations(subsets[name]),
                               "generations_per_question": round(1 + voted * generations(subsets[name]) / n, 2)}
                        for name in subsets}}


def result_scores(vote: dict[str, Any], candidates: list[Any]) -> dict[Any, float] | None:
    """The reviewer's score of each result of a vote that reviewed every group (``candidates`` rebuilt in the
    stage's order), by the result's rows; ``None`` when the run did not review every group or its groups are not
    rebuilt."""
    groups = rebuilt_groups(vote, candidates)
    logp = (vote["notes"].get("selector") or {}).get("logp") or []
    if groups is None or len(logp) != len(groups):
        return None
    return {candidates[g[0]].rows_key(): lp for g, lp in zip(groups, logp)}


def generations(subset: tuple[bool, int, dict[str, tuple[int, int]]]) -> int:
    """The model generations a vote over ``subset`` costs beyond the answer before voting."""
    _, k_s, wanted = subset
    return k_s + sum(greedy + k for greedy, k in wanted.values())


def main() -> None:
    ap = replay_parser(__doc__)
    ap.add_argument("--subsets", choices=sorted(SUBSET_SETS), default="views",
                    help="which candidates to replay: the schema views of +diverse, or the examples of +examples")
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    row = replay(args.run, args.spider, args.floor, SUBSET_SETS[args.subsets])
    table = Table(title=f"{row['run']}: majority vote over subsets of the candidates ({row['voted']} questions voted "
                        f"of {row['questions']})")
    for col in ("candidates beside the answer", "generations / vote", "generations / q", "right", "EX",
                "EX with a perfect choice", "right, weighed", "EX, weighed"):
        table.add_column(col, justify="left" if col.startswith("cand") else "right")
    for name, r in row["subsets"].items():
        table.add_row(name, str(r["generations_per_vote"]), f"{r['generations_per_question']:.2f}", str(r["right"]),
                      f"{r['ex']:.1f}", f"{r['oracle_ex']:.1f}", str(r["weighed_right"]), f"{r['weighed_ex']:.1f}")
    Console(width=160).print(table)
    save(args.out, row)


if __name__ == "__main__":
    main()
