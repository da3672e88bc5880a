"""How far could a better choice between voted candidates go? The oracle of a run's votes (no model).

A run of a pipeline whose last stage is ``vote_if_unsure`` (``default``, ``best``) keeps in its traces the sampled
answers of every vote. For each voted question this scores every candidate (the answer before voting and each
sample, each made a candidate as the vote stage makes it: SQL extracted and run, names repaired and the
``rewrite`` rules applied by :func:`vote_state`, then compared with the gold result): if any candidate is right, a
perfect selector would have answered it. Questions answered without a vote keep their answer. The "oracle" column
is then the ceiling of any selection method over that candidate pool.

    .venv/bin/python benchmarks/votes/vote_oracle.py benchmarks/checkpoints/best-200 benchmarks/checkpoints/best-972 \
        --out benchmarks/results/vote-oracle.json

``--common`` compares runs on the questions all of them answered (runs stopped part of the way).

``--adds OTHER`` (repeatable) asks what another run would bring to each run's votes (a second model, another
prompt): of the questions the run gets wrong, those where ``OTHER``'s answer is right, or any candidate of its own
vote is, and of these those where no candidate of the run was right (a vote with ``OTHER``'s candidates among its
own could only then gain them). It also replays each vote with ``OTHER``'s greedy answer (its answer before its
own vote) as one more candidate, as a greedy view of ``OTHER``'s pipeline would add it: where it joins a group of
the vote, that group is one larger and the choice is replayed exactly (``logp + 2 ln(size)``, the reviewer's
recorded scores); where it makes a group of its own, the reviewer never scored it, so the answers it could fix or
break are counted.

Run folders hold ``results.jsonl`` and ``traces.jsonl`` or ``traces.jsonl.gz`` (``sqlweave eval --out``, or a
checkpoint under ``benchmarks/checkpoints``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import RESULTS, SPIDER, has_traces, parser, save, scored, traces  # noqa: E402
STAGE = "vote_if_unsure"
#: The names a vote stage takes in a trace: ``vote_if_unsure`` in ``default`` and ``best``, ``vote`` in ``+vote``.
VOTE_STAGES = (STAGE, "vote")



def spider_db(dbs: dict[str, Any], spider: Path, db_id: str) -> Any:
    """Spider's database ``db_id``, opened once per replay (``dbs`` keeps them)."""
    if db_id not in dbs:
        from sqlweave.database import Database

        dbs[db_id] = Database.open(spider / "database" / db_id / f"{db_id}.sqlite", timeout_s=10)
    return dbs[db_id]


def answer_before(entry: dict[str, Any], vote: dict[str, Any]) -> str | None:
    """The SQL the pipeline held when the vote stage began: the last stage before it that wrote some."""
    stages = entry["trace"]
    return next((s.get("sql") for s in reversed(stages[:stages.index(vote)]) if s.get("sql")), None)


def vote_state(r: dict[str, Any], db: Any) -> tuple[Any, Callable[[str], Any]]:
    """A pipeline state for the question of result ``r`` on ``db``, and how the vote stage turns one of its
    sampled texts into a candidate there: SQL extracted and run, names repaired by rule, the ``rewrite`` stage's
    rules applied (with one value probe for the question, as the stage shares one)."""
    from sqlweave.llm.fake import FakeLLM
    from sqlweave.pipeline import State
    from sqlweave.stages.candidate import attempt
    from sqlweave.stages.repair import repair_attempt
    from sqlweave.stages.rewrite import rewrite_attempt, value_probe

    state = State(r["question"], db, FakeLLM(), db.schema(), db.schema())
    holds = value_probe(db)

    def candidate(text: str) -> Any:
        return rewrite_attempt(state, repair_attempt(state, attempt(state, text))[0], holds)[0]

    return state, candidate


def vote_candidates(entry: dict[str, Any], vote: dict[str, Any], r: dict[str, Any], db: Any) -> list[Any]:
    """The candidates of a vote as the stage had them: the answer before voting, then every sampled text made a
    candidate by :func:`vote_state`."""
    from sqlweave.stages.candidate import attempt

    state, candidate = vote_state(r, db)
    return [attempt(state, answer_before(entry, vote) or "")] + [candidate(text) for text in vote_texts(vote)]


def vote_texts(vote: dict[str, Any]) -> list[str]:
    """Every text a vote's calls answered, in order: candidate ``i + 1`` of :func:`vote_candidates` is text ``i``."""
    return [text for call in vote["calls"] for text in call.get("outputs", [])]



def vote_of(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The vote stage of a trace line, if it sampled (``None`` for an answer that was not voted on)."""
    return next((s for s in entry["trace"] if s["stage"] in VOTE_STAGES and s.get("calls")), None)


def candidate_right(db: Any, gold: str, c: Any, gold_cache: Any) -> bool:
    """Whether candidate ``c`` (an :class:`~sqlweave.stages.candidate.Attempt`) ran and returns ``gold``'s result."""
    from sqlweave.eval.runner import execution_match

    return bool(c.sql and c.kind in ("ok", "empty") and execution_match(db, gold, c.sql, gold_cache)[0])


def rebuilt_groups(vote: dict[str, Any], candidates: list[Any]) -> list[list[int]] | None:
    """The result groups of a vote's ``candidates`` (as :func:`vote_candidates` rebuilds them), in the stage's
    order; ``None`` when they are not the groups the run noted (a probe timed out, ...), so the vote is left out."""
    from sqlweave.stages.candidate import vote_groups

    groups = vote_groups(candidates)
    return groups if [len(g) for g in groups] == vote["notes"].get("groups") else None


def tables_read(sql: str | None) -> int:
    """How many tables a query reads (each reference counted); a query sqlglot cannot read counts as none."""
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from sqlweave.errors import SqlweaveError
    from sqlweave.sql.validate import parse_one

    try:
        return len(list(parse_one(sql or "", "sqlite").find_all(exp.Table)))
    except (SqlglotError, SqlweaveError):
        return 0


def replay_parser(doc: str | None) -> argparse.ArgumentParser:
    """The arguments of a script that replays one run's votes: the run folder, Spider's data, the JSON to write,
    and the confidence below which a vote is replayed (``None``: wherever the run voted)."""
    ap = parser(doc)
    ap.add_argument("run", type=Path)
    ap.add_argument("--spider", type=Path, default=SPIDER)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--floor", type=float, default=None,
                    help="replay a vote only where the answer's confidence was below this (default: as the run did)")
    return ap




def oracle(folder: Path, spider: Path, only: set[str] | None = None) -> dict[str, Any]:
    """A run's EX and its EX with a perfect choice in every vote (on the questions in ``only``, if given)."""
    from sqlweave.eval.runner import GoldCache
    from sqlweave.sql.quiet import reading_untrusted_text

    results = {i: r for i, r in scored(folder).items() if only is None or i in only}
    dbs: dict[str, Any] = {}
    gold_cache = GoldCache()
    voted = voted_right = reachable = 0
    for entry in traces(folder):
        r = results.get(entry["id"])
        vote = vote_of(entry)
        if r is None or vote is None:
            continue
        voted += 1
        voted_right += bool(r["match"])
        if r["match"]:
            reachable += 1
            continue
        with reading_untrusted_text():
            reachable += held(entry, r, spider_db(dbs, spider, r["db_id"]), gold_cache)
    n = len(results)
    right = sum(bool(r["match"]) for r in results.values())
    return {"run": folder.name, "questions": n, "ex": round(100 * right / n, 1), "voted": voted,
            "voted_right": voted_right, "voted_any_candidate_right": reachable,
            "oracle_ex": round(100 * (right - voted_right + reachable) / n, 1),
            "wrong_without_a_vote": sum(not r["match"] for r in results.values()) - (voted - voted_right)}


def held(entry: dict[str, Any], r: dict[str, Any], db: Any, gold_cache: Any) -> bool:
    """Whether any candidate of the vote in ``entry`` (a trace line of result ``r``) is right; ``False`` without a
    vote."""
    vote = vote_of(entry)
    return vote is not None and any(candidate_right(db, r["gold"], c, gold_cache)
                                    for c in vote_candidates(entry, vote, r, db))


def adds(folder: Path, other: Path, spider: Path) -> dict[str, Any]:
    """What ``other``'s answers and vote candidates would add to ``folder``'s candidates (module docstring)."""
    from sqlweave.eval.runner import GoldCache
    from sqlweave.sql.quiet import reading_untrusted_text

    results, theirs = scored(folder), scored(other)
    wrong = {i for i, r in results.items() if not r["match"]}
    dbs: dict[str, Any] = {}
    gold_cache = GoldCache()

    def holding(run: Path, rows: dict[str, dict[str, Any]]) -> set[str]:
        """The wrong questions of ``folder`` with a right candidate in the votes of ``run``."""
        if not has_traces(run):
            return set()
        found = set()
        for entry in traces(run):
            r = rows.get(entry["id"])
            if entry["id"] in wrong and r is not None and "gold" in r:
                with reading_untrusted_text():
                    if held(entry, r, spider_db(dbs, spider, r["db_id"]), gold_cache):
                        found.add(entry["id"])
        return found

    answered = {i for i in wrong if (theirs.get(i) or {}).get("match")}
    other_right = answered | holding(other, theirs)
    new = sorted(other_right - holding(folder, results))
    return {"run": folder.name, "other": other.name, "questions": len(results),
            "other_ex": round(100 * sum(bool(t["match"]) for t in theirs.values()) / max(1, len(theirs)), 1),
            "wrong": len(wrong), "other_answer_right_there": len(answered),
            "other_any_candidate_right_there": len(other_right), "no_candidate_right_there": new}


def one_more(folder: Path, other: Path, spider: Path, support: float = 2.0) -> dict[str, Any]:
    """Each vote of ``folder`` replayed with ``other``'s greedy answer as one more candidate (module docstring)."""
    import math

    from sqlweave.eval.runner import GoldCache
    from sqlweave.sql.quiet import reading_untrusted_text
    from sqlweave.stages.candidate import vote_groups

    results, theirs = scored(folder), scored(other)
    greedy = {i: t.get("prediction") for i, t in theirs.items()}
    if has_traces(other):
        for entry in traces(other):
            vote = vote_of(entry)
            if vote is not None:
                greedy[entry["id"]] = answer_before(entry, vote)
    dbs: dict[str, Any] = {}
    gold_cache = GoldCache()
    counts = {"votes": 0, "not_rebuilt": 0, "no_working_answer": 0, "joined": 0, "fixed": [], "broken": [],
              "own_group": 0, "own_group_could_fix": [], "own_group_could_break": []}
    for entry in traces(folder):
        r, vote = results.get(entry["id"]), vote_of(entry)
        if r is None or vote is None or entry["id"] not in greedy:
            continue
        counts["votes"] += 1
        db = spider_db(dbs, spider, r["db_id"])
        with reading_untrusted_text():
            cands = vote_candidates(entry, vote, r, db)
            groups = rebuilt_groups(vote, cands)
            if groups is None:
                counts["not_rebuilt"] += 1
                continue
            extra = vote_state(r, db)[1](f"```sql\n{greedy[entry['id']] or ''}\n```")
            joined = next((g for g in vote_groups(cands + [extra]) if len(cands) in g), None)
            if joined is None:
                counts["no_working_answer"] += 1
                continue
            if len(joined) == 1:
                counts["own_group"] += 1
                right = candidate_right(db, r["gold"], extra, gold_cache)
                if right != bool(r["match"]):
                    counts["own_group_could_fix" if right else "own_group_could_break"].append(r["id"])
                continue
            counts["joined"] += 1
            logp = (vote["notes"].get("selector") or {}).get("logp")
            if not logp:  # one group before: it stays the only one
                continue
            sizes = [len(g) + (g[0] in joined) for g in groups]
            pick = max(range(len(logp)), key=lambda i: (support * math.log(sizes[i]) + logp[i], -i))
            right = candidate_right(db, r["gold"], cands[groups[pick][0]], gold_cache)
            if right != bool(r["match"]):
                counts["fixed" if right else "broken"].append(r["id"])
    return {"run": folder.name, "other": other.name, **counts}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--spider", type=Path, default=SPIDER)
    ap.add_argument("--out", type=Path, default=RESULTS / "vote-oracle.json")
    ap.add_argument("--common", action="store_true", help="only the questions every run answered (partial runs)")
    ap.add_argument("--adds", type=Path, action="append", default=[],
                    help="another run: what its answers would add to each run's candidates (repeatable)")
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    only = set.intersection(*(set(scored(f)) for f in args.runs)) if args.common else None
    rows = [oracle(folder, args.spider, only) for folder in args.runs]
    table = Table(title="EX, and EX with a perfect choice among each vote's candidates")
    for col in ("run", "questions", "EX", "voted", "right when voted", "any candidate right", "oracle EX",
                "wrong without a vote"):
        table.add_column(col, justify="left" if col == "run" else "right")
    for r in rows:
        table.add_row(r["run"], str(r["questions"]), f"{r['ex']:.1f}", str(r["voted"]), str(r["voted_right"]),
                      str(r["voted_any_candidate_right"]), f"{r['oracle_ex']:.1f}", str(r["wrong_without_a_vote"]))
    Console().print(table)
    added = [{**adds(folder, other, args.spider), "one_more": one_more(folder, other, args.spider)}
             for folder in args.runs for other in args.adds]
    for a in added:
        Console().print(f"{a['run']} with {a['other']} ({a['other_ex']}% EX): of {a['wrong']} wrong answers, "
                        f"{a['other_answer_right_there']} are answered right in {a['other']} and "
                        f"{a['other_any_candidate_right_there']} have a right answer or vote candidate there, "
                        f"{len(a['no_candidate_right_there'])} of them with no right candidate in {a['run']}'s vote "
                        f"({', '.join(a['no_candidate_right_there']) or 'none'})")
        m = a["one_more"]
        Console().print(f"  its greedy answer as one more candidate in {m['votes']} votes: joins a group in "
                        f"{m['joined']} (fixed {len(m['fixed'])}, broken {len(m['broken'])}), a group of its own in "
                        f"{m['own_group']} (could fix {len(m['own_group_could_fix'])}, could break "
                        f"{len(m['own_group_could_break'])}), no working answer in {m['no_working_answer']}")
    save(args.out, {"runs": rows, **({"adds": added} if added else {})})


if __name__ == "__main__":
    main()
