"""benchmarks/tools/calibrate.py --as-answered: the confidence a run's answers carried, measured without fitting."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.eval.test_vote_replays import OLDEST, YOUNGEST, load, spider

pytest.importorskip("sklearn")  # the AUC, as in the fitting mode (the embed extra brings scikit-learn)


def write(folder: Path, answers: list[tuple[str, str, bool, float]]) -> Path:
    folder.mkdir()
    rows = [{"id": i, "db_id": "concert_singer", "question": "Who is the oldest singer?", "gold": OLDEST,
             "prediction": sql, "match": right, "confidence": confidence} for i, sql, right, confidence in answers]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "traces.jsonl").write_text("".join(json.dumps({"id": r["id"], "trace": []}) + "\n" for r in rows))
    return folder


def test_the_confidence_shown_is_measured_as_it_was(tmp_path: Path, singer_db: Path, monkeypatch) -> None:
    train, held = tmp_path / "train.json", tmp_path / "held.json"
    train.write_text(json.dumps({"ids": ["t1", "t2"]}))
    held.write_text(json.dumps({"ids": ["h1", "h2"]}))
    # held out: a right answer said at 0.9, a wrong one at 0.3 (gaps 0.1 and 0.3); h3 is held out, not in the 120
    run = write(tmp_path / "run", [("t1", OLDEST, True, 0.8), ("t2", YOUNGEST, False, 0.6),
                                   ("h1", OLDEST, True, 0.9), ("h2", YOUNGEST, False, 0.3),
                                   ("h3", OLDEST, True, 0.7)])
    out = tmp_path / "conf.json"
    calibrate = load("calibrate")
    monkeypatch.setattr(sys, "argv", ["calibrate.py", str(run), "--data-dir", str(spider(tmp_path, singer_db)),
                                      "--train", str(train), "--heldout", str(held), "--as-answered",
                                      "--out", str(out)])
    calibrate.main()
    saved = json.loads(out.read_text())
    assert saved["date"] and "cores" in saved["machine"] and "--as-answered" in saved["command"]
    report = saved["report"]
    held_out, sample = report["held out (rest of the run)"], report["held-out 120-question sample"]
    assert held_out["questions"] == 3 and held_out["ex"] == pytest.approx(66.7)
    assert held_out["mean_confidence"] == pytest.approx(63.3) and held_out["auc"] == 1.0
    assert sample["ece"] == pytest.approx(20.0)  # (|0.9 - 1| + |0.3 - 0|) / 2
    assert sample["selective_ex"]["50%"] == 100.0 and held_out["min_confidence"]["0.5"]["flagged_pct"] == 33.3
    assert report["training (200-question sample)"]["mean_confidence"] == 70.0


def test_a_run_without_confidences_is_refused(tmp_path: Path, singer_db: Path, monkeypatch) -> None:
    run = write(tmp_path / "run", [("t1", OLDEST, True, 0.8)])
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    lines[0]["confidence"] = None
    (run / "results.jsonl").write_text(json.dumps(lines[0]) + "\n")
    calibrate = load("calibrate")
    monkeypatch.setattr(sys, "argv", ["calibrate.py", str(run), "--data-dir", str(spider(tmp_path, singer_db)),
                                      "--as-answered", "--out", str(tmp_path / "c.json")])
    with pytest.raises(SystemExit, match="without a confidence"):
        calibrate.main()


def test_a_checkpoint_s_gzipped_traces_are_read_and_nothing_is_written_without_out(
        tmp_path: Path, singer_db: Path, monkeypatch, capsys) -> None:
    import gzip

    run = write(tmp_path / "run", [("t1", OLDEST, True, 0.8), ("h1", YOUNGEST, False, 0.3)])
    traces = run / "traces.jsonl"
    (run / "traces.jsonl.gz").write_bytes(gzip.compress(traces.read_bytes()))
    traces.unlink()  # as benchmarks/checkpoints keeps them
    train = tmp_path / "train.json"
    train.write_text(json.dumps({"ids": ["t1"]}))
    calibrate = load("calibrate")
    monkeypatch.setattr(calibrate, "ROOT", tmp_path / "repo")  # where a fit's default record would go
    monkeypatch.setattr(sys, "argv", ["calibrate.py", str(run), "--data-dir", str(spider(tmp_path, singer_db)),
                                      "--train", str(train), "--heldout", str(train), "--as-answered"])
    calibrate.main()
    assert "| held out (rest of the run) | 1 | 0.0 | 30.0 |" in capsys.readouterr().out
    assert not (tmp_path / "repo").exists()  # --as-answered without --out replaces no fit's record
