"""benchmarks/tools/replay_cost.py: a replayed run charged with its base run's seconds plus the calls it added."""

from __future__ import annotations

import json
from pathlib import Path

from tests.eval.test_vote_replays import load


def _run(folder: Path, rows: dict[str, float], calls: dict[str, list[tuple[str, float]]]) -> Path:
    folder.mkdir()
    (folder / "results.jsonl").write_text("".join(json.dumps({"id": i, "seconds": 0.01, "cost_seconds": s}) + "\n"
                                                  for i, s in rows.items()))
    (folder / "traces.jsonl").write_text("".join(json.dumps({"id": i, "trace": [{"stage": "vote", "calls": [
        {"messages": [{"role": "user", "content": m}], "outputs": ["SELECT 1"], "seconds": 0.0003, "cached": c < 0.01,
         "cost_seconds": c} for m, c in cs]}]}) + "\n" for i, cs in calls.items()))
    return folder


def test_a_replayed_run_is_charged_its_base_seconds_and_the_calls_it_added(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", {"q1": 10.0, "q2": 4.0},
                {"q1": [("greedy", 6.0), ("samples", 4.0)], "q2": [("greedy", 4.0)]})
    # the replay answered the base calls at the lookup's cost; q1 added two calls, q2 none; q3 is not in the base
    run = _run(tmp_path / "run", {"q1": 5.0, "q2": 0.0, "q3": 7.0},
               {"q1": [("greedy", 0.0003), ("samples", 0.0003), ("few-shot", 3.0), ("few-shot 2", 2.0)],
                "q2": [("greedy", 0.0003)], "q3": [("greedy", 7.0)]})
    figures = load("replay_cost").replay_cost(base, run)
    rows = {r["id"]: r for r in figures["rows"]}
    assert set(rows) == {"q1", "q2"} and figures["questions"] == 2
    assert (rows["q1"]["added_calls"], rows["q1"]["added_seconds"], rows["q1"]["seconds"]) == (2, 5.0, 15.0)
    assert (rows["q2"]["added_calls"], rows["q2"]["seconds"]) == (0, 4.0)
    assert figures["seconds"] == {"median": 9.5, "mean": 9.5} and figures["recorded_seconds"]["median"] == 2.5
    assert figures["added_calls_per_question"] == 1.0


def test_a_replay_of_a_replay_is_charged_what_its_base_really_cost(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", {"q1": 1.0}, {"q1": [("greedy", 0.0003), ("few-shot", 3.0)]})
    run = _run(tmp_path / "run", {"q1": 0.5}, {"q1": [("greedy", 0.0003), ("few-shot", 0.0003), ("more", 2.0)]})
    # the base's own results say 1 s; what an earlier replay_cost found it cost (12 s) is charged instead
    figures = load("replay_cost").replay_cost(base, run, {"q1": 12.0})
    [row] = figures["rows"]
    assert (row["base_seconds"], row["added_calls"], row["seconds"]) == (12.0, 1, 14.0) and figures["base_cost"]
    assert load("replay_cost").replay_cost(base, run)["rows"][0]["seconds"] == 3.0
