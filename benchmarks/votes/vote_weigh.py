"""Group size against the question's likelihood: how should a vote weigh the two? (no model)

A run whose vote stage reviewed every result group (``select="review"`` with a large ``margin``) keeps, for each
voted question, the size of each group and the model's log-probability of the question given one query of each
group (reviewer reranking, :func:`sqlweave.stages.choose.review`). This replays the choice with the score
``alpha * ln(size) + logp`` for several ``alpha`` (0: the likeliest question wins whatever its support; large:
majority voting), rebuilding the groups exactly as the stage did to score each one against Spider's gold result.

    .venv/bin/python benchmarks/votes/vote_weigh.py .eval-runs/best-mall-200 --out benchmarks/results/vote-weigh-200.json

A second table adds, at support 2, a prior times a weight to every group's score (``PRIORS``): whether the
group holds the answer before voting, and how many more tables its query reads than the group reading the
fewest.

A third table counts every answer that opens with prose reasoning instead of its query (:func:`vote_openings.opening`;
all of them sampled in ``best``'s votes, and right about a quarter as often as the others) at a weight below 1 in
its group's size (``PROSE_WEIGHTS``; 1 replays the run), with answers fixed and broken against the run.

``--floor 0.6`` replays ``default`` from a ``best`` run (its votes are the same, on fewer questions);
``--skip-sample benchmarks/samples/spider-dev-200.json`` scores a 972-question run without the tuning sample (given
twice, without both samples).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.votes.vote_openings import opening  # noqa: E402
from benchmarks.common import save, traces  # noqa: E402
from benchmarks.votes.vote_oracle import (  # noqa: E402
    STAGE, answer_before, rebuilt_groups, replay_parser, spider_db, tables_read, vote_candidates, vote_texts,
)

ALPHAS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 1000.0)

#: What a group's score adds to ``alpha * ln(size)``, from the selector's notes: the reviewer score (the
#: question's log-probability under the query), and, in a run that also scored them (``coder``), the query's own
#: log-probability as the answer to the generation prompt, summed or per token.
MODES: dict[str, Any] = {
    "reviewer": lambda n, i: n["logp"][i],
    "coder": lambda n, i: n["coder"][i],
    "coder per token": lambda n, i: n["coder"][i] / max(1, n["coder_tokens"][i]),
    "reviewer + coder": lambda n, i: n["logp"][i] + n["coder"][i],
    "reviewer + coder / 2": lambda n, i: n["logp"][i] + n["coder"][i] / 2,
}


#: What else a group's score may add, at support 2 (``alpha``), times each of ``PRIOR_WEIGHTS``: whether the group
#: holds the answer before voting (the greedy one), and how many more tables its query reads than the group
#: reading the fewest (a needless join being the commonest wrong reading).
PRIORS: dict[str, Any] = {
    "holds the answer before voting": lambda g, gs: float(g["greedy"]),
    "tables beyond the fewest": lambda g, gs: float(g["tables"] - min(h["tables"] for h in gs)),
}
PRIOR_WEIGHTS = (-2.0, -1.0, -0.5, 0.5, 1.0, 2.0)
PRIOR_ALPHA = 2.0

#: The weights a prose-first answer is counted at in its group's size (third table), at support ``PRIOR_ALPHA``.
PROSE_WEIGHTS = (0.25, 0.5, 0.75, 1.0)


def group_traits(entry: dict[str, Any], r: dict[str, Any], db: Any, gold_cache: Any) -> list[dict[str, Any]] | None:
    """Each result group of the question's vote, in the stage's order (largest first): whether it is right,
    whether it holds the answer before voting, how many tables its query reads, and how many of its answers open
    with prose."""
    from sqlweave.eval.runner import execution_match

    vote = next(s for s in entry["trace"] if s["stage"] == STAGE)
    cands = vote_candidates(entry, vote, r, db)
    groups = rebuilt_groups(vote, cands)
    if groups is None:
        return None
    texts = [""] + vote_texts(vote)  # candidate 0 is the answer before voting
    return [{"right": bool(cands[g[0]].sql) and bool(execution_match(db, r["gold"], cands[g[0]].sql, gold_cache)[0]),
             "greedy": 0 in g, "tables": tables_read(cands[g[0]].sql),
             "prose": sum(i > 0 and opening(texts[i]) == "prose" for i in g)} for g in groups]


def weigh(folder: Path, spider: Path, floor: float | None = None, skip: frozenset[str] = frozenset(),
          coder: bool = False) -> dict[str, Any]:
    from sqlweave.eval.runner import GoldCache, execution_match
    from sqlweave.sql.quiet import reading_untrusted_text

    results = {r["id"]: r for r in map(json.loads, (folder / "results.jsonl").open(encoding="utf-8"))
               if r["id"] not in skip}
    dbs: dict[str, Any] = {}
    gold_cache = GoldCache()
    modes = {m: f for m, f in MODES.items() if m == "reviewer" or coder}
    right = {(m, a): 0 for m in modes for a in ALPHAS}
    primed = {(p, w): 0 for p in PRIORS for w in PRIOR_WEIGHTS}
    prose = {w: {"right": 0, "fixed": [], "broken": []} for w in PROSE_WEIGHTS}
    reviewed = unmatched = 0

    def credit(ok: bool) -> None:  # an answer no replayed weight can change counts alike for every weight
        for counts in (right, primed):
            for key in counts:
                counts[key] += ok
        for row in prose.values():
            row["right"] += ok

    for entry in traces(folder):
        r = results.get(entry["id"])
        vote = next((s for s in entry["trace"] if s["stage"] == STAGE), None)
        logp = ((vote or {}).get("notes", {}).get("selector") or {}).get("logp")
        if r is not None and vote is not None and floor is not None and vote["notes"].get("confidence", 0.0) >= floor:
            before = answer_before(entry, vote)  # not voted at this floor: the answer before voting stands
            db = spider_db(dbs, spider, r["db_id"])
            ok = bool(before) and bool(execution_match(db, r["gold"], before, gold_cache)[0])
            credit(ok)
            continue
        if r is None or not logp:
            credit(bool(r and r["match"]))
            continue
        with reading_untrusted_text():
            verdicts = group_traits(entry, r, spider_db(dbs, spider, r["db_id"]), gold_cache)
        if verdicts is None or len(verdicts) < len(logp):
            unmatched += 1
            credit(bool(r["match"]))
            continue
        reviewed += 1
        sizes, notes = vote["notes"]["groups"], vote["notes"]["selector"]
        for mode, score in modes.items():
            for a in ALPHAS:
                pick = max(range(len(logp)), key=lambda i: (a * math.log(sizes[i]) + score(notes, i), -i))
                right[mode, a] += verdicts[pick]["right"]
        shown = verdicts[:len(logp)]
        for (prior, w) in primed:
            bonus = [PRIORS[prior](g, shown) for g in shown]
            pick = max(range(len(logp)), key=lambda i: (PRIOR_ALPHA * math.log(sizes[i]) + logp[i] + w * bonus[i], -i))
            primed[prior, w] += shown[pick]["right"]
        for w, row in prose.items():
            weighted = [size - (1.0 - w) * g["prose"] for size, g in zip(sizes, shown)]
            pick = max(range(len(logp)), key=lambda i: (PRIOR_ALPHA * math.log(weighted[i]) + logp[i], -i))
            ok = shown[pick]["right"]
            row["right"] += ok
            if ok != bool(r["match"]):
                row["fixed" if ok else "broken"].append(r["id"])
    n = len(results)
    return {"run": folder.name, "questions": n, "floor": floor, "reviewed": reviewed, "left_out": unmatched,
            "run_ex": round(100 * sum(bool(r["match"]) for r in results.values()) / n, 1),
            "alphas": {str(a): {"right": right["reviewer", a], "ex": round(100 * right["reviewer", a] / n, 1)}
                       for a in ALPHAS},
            "priors": {p: {str(w): primed[p, w] for w in PRIOR_WEIGHTS} for p in PRIORS},
            "prose_weights": {str(w): row for w, row in prose.items()},
            **({"modes": {m: {str(a): right[m, a] for a in ALPHAS} for m in modes}} if coder else {})}


def main() -> None:
    ap = replay_parser(__doc__)
    ap.add_argument("--skip-sample", type=Path, action="append", default=[],
                    help="leave out the questions of this sample file (the tuning sample, to score the rest); "
                         "may be given more than once")
    ap.add_argument("--coder", action="store_true",
                    help="also weigh the queries' own likelihood (a run whose votes scored it: Coder-Reviewer)")
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    skip = frozenset(i for f in args.skip_sample for i in json.loads(f.read_text())["ids"])
    row = weigh(args.run, args.spider, args.floor, skip, args.coder)
    console = Console(width=160)
    console.print(f"{row['run']}: {row['questions']} questions, {row['reviewed']} votes reviewed, {row['left_out']} "
                  f"left out (groups not rebuilt); the run's EX {row['run_ex']}; a group scores "
                  "alpha * ln(its size) + log p(question | its query)")
    table = Table()
    for col in ("alpha", "right", "EX"):
        table.add_column(col, justify="right")
    for a, r in row["alphas"].items():
        table.add_row(a, str(r["right"]), f"{r['ex']:.1f}")
    console.print(table)
    priors = Table(title=f"answers right at support {PRIOR_ALPHA}, with a prior added times each weight")
    priors.add_column("prior")
    for w in PRIOR_WEIGHTS:
        priors.add_column(str(w), justify="right")
    for p, by_weight in row["priors"].items():
        priors.add_row(p, *(str(v) for v in by_weight.values()))
    console.print(priors)
    weights = Table(title=f"answers right at support {PRIOR_ALPHA}, a prose-first answer counted at each weight "
                          "in its group's size")
    for col in ("weight", "right", "EX", "right->wrong", "wrong->right"):
        weights.add_column(col, justify="right")
    for w, r in row["prose_weights"].items():
        weights.add_row(w, str(r["right"]), f"{100 * r['right'] / row['questions']:.1f}", str(len(r["broken"])),
                        str(len(r["fixed"])))
    console.print(weights)
    if "modes" in row:
        modes = Table(title="answers right, by what a group's score adds to alpha * ln(size)")
        modes.add_column("alpha", justify="right")
        for m in row["modes"]:
            modes.add_column(m, justify="right")
        for a in map(str, ALPHAS):
            modes.add_row(a, *(str(row["modes"][m][a]) for m in row["modes"]))
        console.print(modes)
    save(args.out, row)


if __name__ == "__main__":
    main()
