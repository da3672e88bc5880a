"""benchmarks/votes/vote_curve.py: a run of vote-if-unsure read back at lower floors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "votes" / "vote_curve.py"


def load():
    spec = importlib.util.spec_from_file_location("vote_curve", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_run(folder: Path, rows: list[dict], votes: dict[str, dict | None]) -> Path:
    folder.mkdir()
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "traces.jsonl").write_text("".join(
        json.dumps({"id": r["id"], "trace": [] if votes[r["id"]] is None else
                    [{"stage": "vote_if_unsure", "seconds": votes[r["id"]].pop("s", 0.0), "notes": votes[r["id"]]}]})
        + "\n" for r in rows))
    return folder


def test_each_floor_takes_the_voted_answer_only_below_it(tmp_path: Path, capsys) -> None:
    rows = [{"id": "a", "match": True, "model_calls": 2}, {"id": "b", "match": True, "model_calls": 2},
            {"id": "c", "match": False, "model_calls": 1}, {"id": "d", "match": False, "model_calls": 1}]
    votes = {"a": {"confidence": 0.2, "votes": ["ok"] * 5, "s": 10.0},   # voted: fixed
             "b": {"confidence": 0.55, "votes": ["ok"] * 5, "s": 20.0},  # voted: fixed, only below 0.6
             "c": {"confidence": 0.9, "skipped": True},
             "d": None}                                                  # failed before the stage: left out
    run = write_run(tmp_path / "run", rows, votes)
    base = write_run(tmp_path / "base", [{"id": i, "match": False} for i in "abcd"], dict.fromkeys("abcd"))
    out = tmp_path / "curve.json"
    assert load().main([str(run), "--base", str(base), "--floors", "0.5,0.6", "--out", str(out)]) == 0
    floors = {f["floor"]: f for f in json.loads(out.read_text())["floors"]}
    assert [floors[t]["ex"] for t in (0.0, 0.5, 0.6)] == [0.0, 33.3, 66.7]
    assert [floors[t]["generations_per_q"] for t in (0.0, 0.5, 0.6)] == [1.0, 2.33, 3.67]
    assert floors[0.6]["added_mean_s"] == 10.0 and floors[0.6]["vote_median_s"] == 15.0
    assert "never (`default`)" in capsys.readouterr().out
