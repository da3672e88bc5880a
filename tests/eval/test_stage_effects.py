"""Per-stage right -> wrong / wrong -> right counts from a run's traces (the safety check on correction)."""

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sqlweave.cli import app
from sqlweave.errors import ConfigurationError
from sqlweave.eval.datasets import load_spider
from sqlweave.eval.runner import run_eval
from sqlweave.eval.stage_effects import stage_effects
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import State
from sqlweave.presets import build_pipeline, with_stages
from tests.eval.test_runner import _tiny_dataset


@dataclass(frozen=True)
class Spoil:
    """A 'correction' that reverses the order of one answer (breaking it) and skips the others."""

    name: str = "spoil"
    recovers: bool = True

    def __call__(self, state: State) -> None:
        if state.sql and state.sql.endswith("ORDER BY age"):
            state.sql += " DESC"
        else:
            state.note(skipped=True)


ANSWERS = {
    "How many singers?": "SELECT count(*) FROM singers",          # wrong table name: repaired by rule
    "Names by age?": "SELECT name FROM singer ORDER BY age",      # right, then spoiled
    "Stadium count?": "SELECT count(*) FROM stadium",             # right, left alone
    "Countries?": "SELECT DISTINCT country FROM singer",          # right, left alone
    "Broken gold?": "SELECT name FROM singer",                    # gold fails: never right
}


def _run(tmp_path: Path) -> tuple[Path, Path]:
    root = _tiny_dataset(tmp_path)
    ds = load_spider(root, "dev")
    pipe = with_stages(build_pipeline("repair"), "repair-spoil", Spoil())
    llm = FakeLLM(responder=lambda m, o: ANSWERS[m[-1].content.rsplit("Question: ", 1)[1]])
    run_eval(ds, ds.examples, pipe, llm, tmp_path / "run", meta={"dataset": "spider-dev"})
    return root, tmp_path / "run"


def test_each_stage_gets_its_own_flips(tmp_path: Path) -> None:
    root, run = _run(tmp_path)
    effects = {e.stage: e for e in stage_effects(load_spider(root, "dev"), run)}
    assert effects["repair"].changed == 1 and effects["repair"].wrong_to_right == 1
    assert effects["repair"].right_to_wrong == 0
    spoil = effects["spoil"]
    assert (spoil.reached, spoil.skipped, spoil.changed) == (5, 4, 1)
    assert (spoil.right_to_wrong, spoil.wrong_to_right, spoil.net) == (1, 0, -1)
    # Producing the first SQL is not a change.
    assert effects["extract_sql"].changed == 0


def test_cli_table_and_json(tmp_path: Path) -> None:
    root, run = _run(tmp_path)
    out = CliRunner().invoke(app, ["eval", "stages", str(run), "--data-dir", str(root), "--json"])
    assert out.exit_code == 0, out.output
    rows = {r["stage"]: r for r in json.loads(out.stdout)}
    assert rows["spoil"]["right_to_wrong"] == 1 and rows["spoil"]["net"] == -1
    table = CliRunner().invoke(app, ["eval", "stages", str(run), "--data-dir", str(root)])
    assert table.exit_code == 0 and "spoil" in table.output and "-1" in table.output


def test_traces_without_per_stage_sql_are_refused_clearly(tmp_path: Path) -> None:
    root, run = _run(tmp_path)
    lines = [json.loads(l) for l in (run / "traces.jsonl").read_text().splitlines()]
    for row in lines:
        for entry in row["trace"]:
            entry.pop("sql")
    (run / "traces.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(ConfigurationError, match="each stage's SQL"):
        stage_effects(load_spider(root, "dev"), run)
    out = CliRunner().invoke(app, ["eval", "stages", str(run), "--data-dir", str(root)])
    assert out.exit_code != 0 and "Traceback" not in out.output and "Rerun" in out.output
    missing = CliRunner().invoke(app, ["eval", "stages", str(tmp_path / "nowhere"), "--data-dir", str(root)])
    assert missing.exit_code != 0 and "run.json" in missing.output
    for bad in ("{not json", '{"pipeline": "zero-shot"}', "[1, 2]"):
        (run / "run.json").write_text(bad)
        out = CliRunner().invoke(app, ["eval", "stages", str(run), "--data-dir", str(root)])
        assert out.exit_code != 0 and not isinstance(out.exception, Exception)  # a clean exit, not a crash
        assert "Traceback" not in out.output and "run.json" in out.output
