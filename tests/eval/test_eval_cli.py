import json
from pathlib import Path

from typer.testing import CliRunner

from sqlweave.cli import app
from sqlweave.eval.datasets import load_spider
from sqlweave.eval.runner import run_eval
from sqlweave.llm import FakeLLM
from sqlweave.presets import build_pipeline
from tests.eval.test_runner import _tiny_dataset

runner = CliRunner()


def _two_runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = _tiny_dataset(tmp_path)
    ds = load_spider(root, "dev")
    good = {"How many singers?": "SELECT count(*) FROM singer", "Names by age?": "SELECT name FROM singer ORDER BY age",
            "Stadium count?": "SELECT count(*) FROM stadium", "Countries?": "SELECT DISTINCT country FROM singer",
            "Broken gold?": "SELECT 1"}
    ask = lambda m: m[-1].content.rsplit("Question: ", 1)[1]  # noqa: E731
    a = tmp_path / "a"
    b = tmp_path / "b"
    run_eval(ds, ds.examples, build_pipeline("zero-shot"), FakeLLM(responder=lambda m, o: "SELECT 1"), a)
    run_eval(ds, ds.examples, build_pipeline("zero-shot"), FakeLLM(responder=lambda m, o: good[ask(m)]), b)
    return root, a, b


def test_compare_and_report(tmp_path: Path) -> None:
    root, a, b = _two_runs(tmp_path)
    r = runner.invoke(app, ["eval", "compare", str(a), str(b)])
    assert r.exit_code == 0, r.output
    assert "wrong -> right: 4" in r.output and "right -> wrong: 0" in r.output
    html = tmp_path / "report.html"
    md = tmp_path / "report.md"
    r = runner.invoke(app, ["eval", "report", str(a), str(b), "--html", str(html), "--md", str(md)])
    assert r.exit_code == 0, r.output
    page = html.read_text()
    assert page.count("<svg") == 3 and "Execution accuracy by hardness" in page and "<script" not in page
    assert "| **EX (all)** | 5 | **0.0** | **80.0** |" in md.read_text()


def test_score_prediction_file(tmp_path: Path) -> None:
    root = _tiny_dataset(tmp_path)
    preds = tmp_path / "preds.sql"
    preds.write_text("SELECT count(*) FROM singer\nSELECT name FROM singer ORDER BY age\n\nSELECT country FROM singer\t concert_singer\nSELECT 1\nSELECT 2\n")
    out = tmp_path / "scored.jsonl"
    r = runner.invoke(app, ["eval", "score", "--predictions", str(preds), "--data-dir", str(root), "--out", str(out)])
    assert r.exit_code == 0, r.output
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert [x["match"] for x in rows] == [True, True, False, True, False]
    assert rows[2]["error"] == "no prediction"
    preds.write_text("SELECT 1\n")
    r = runner.invoke(app, ["eval", "score", "--predictions", str(preds), "--data-dir", str(root)])
    assert r.exit_code == 2 and "1 predictions for 6 questions" in r.output


def test_eval_errors_are_messages(tmp_path: Path) -> None:
    r = runner.invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(tmp_path), "--model", "fake"])
    assert r.exit_code == 2 and "no dataset file" in r.output
    r = runner.invoke(app, ["eval", "--dataset", "nope", "--data-dir", str(tmp_path)])
    assert r.exit_code == 2 and "unknown dataset" in r.output
    r = runner.invoke(app, ["eval", "compare", str(tmp_path / "x"), str(tmp_path / "y")])
    assert r.exit_code == 2 and "no results" in r.output


def test_eval_vote_below_moves_the_floor_of_the_vote(tmp_path: Path) -> None:
    root = _tiny_dataset(tmp_path)
    out = tmp_path / "run"
    r = runner.invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--model", "fake",
                            "--pipeline", "best", "--vote-below", "0.95", "--limit", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    stages = json.loads((out / "run.json").read_text())["stages"]
    vote = next(s for s in stages if s.startswith("SelfConsistency("))
    assert "only_below=0.95" in vote and stages[-1] == "NameKeys(name='name_keys')"
    r = runner.invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--model", "fake",
                            "--pipeline", "zero-shot", "--vote-below", "0.5", "--out", str(tmp_path / "z")])
    assert r.exit_code == 2 and "no vote spent below a confidence" in r.output
    r = runner.invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--model", "fake",
                            "--pipeline", "best", "--vote", "temperature=1.0", "--vote", "select=majority",
                            "--limit", "1", "--out", str(tmp_path / "t")])
    assert r.exit_code == 0, r.output
    stage = next(s for s in json.loads((tmp_path / "t" / "run.json").read_text())["stages"]
                 if s.startswith("SelfConsistency("))
    assert "temperature=1.0" in stage and "select='majority'" in stage
    # resuming the folder with other vote settings would mix two runs: refused
    for other in (["--vote", "temperature=0.6"], [], ["--vote-below", "0.5"]):
        r = runner.invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--model", "fake",
                                "--pipeline", "best", *other, "--out", str(tmp_path / "t")])
        assert r.exit_code == 2 and "holds a run with" in " ".join(r.output.split()), other
    for bad, said in (("temperature", "--vote 'temperature' is not KEY=VALUE"), ("seed=x", "vote option seed takes a whole number")):
        r = runner.invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--model", "fake",
                                "--pipeline", "best", "--vote", bad, "--out", str(tmp_path / "u")])
        assert r.exit_code == 2 and said in " ".join(r.output.split()), r.output
    r = runner.invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--pipeline", "best",
                            "--vote-below", "1.5"])
    assert r.exit_code == 2 and "less than or equal to 1" in " ".join(r.output.split())


def test_missing_databases_are_counted_among_the_questions_asked(tmp_path: Path) -> None:
    root = _tiny_dataset(tmp_path)  # dev-4 asks about a database that is not there
    whole = runner.invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--model", "fake",
                                "--out", str(tmp_path / "all")])
    assert whole.exit_code == 0, whole.output
    assert "1 questions skipped: databases missing: missing_db" in " ".join(whole.output.split())
    for ids, said in ((["dev-0", "dev-1"], None), (["dev-4", "dev-0"], "1 questions skipped")):
        (tmp_path / "s.json").write_text(json.dumps({"ids": ids}))
        r = runner.invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--model", "fake",
                                "--sample", str(tmp_path / "s.json"), "--out", str(tmp_path / "-".join(ids))])
        assert r.exit_code == 0, r.output
        assert ("questions skipped" in r.output) == bool(said), r.output
        asked = [json.loads(line)["id"] for line in (tmp_path / "-".join(ids) / "results.jsonl").read_text().splitlines()]
        assert asked == (["dev-0", "dev-1"] if said is None else ["dev-0"])
    (tmp_path / "s.json").write_text(json.dumps({"ids": ["dev-99"]}))
    r = runner.invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--model", "fake",
                            "--sample", str(tmp_path / "s.json")])
    assert r.exit_code == 2 and "names 1 questions not in the dataset" in " ".join(r.output.split())
    r = runner.invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--model", "fake", "--limit", "0"])
    assert r.exit_code == 2


def test_ablate_runs_every_preset_on_one_set_of_evaluation_resources(tmp_path: Path, monkeypatch) -> None:
    """The presets of an ablation share one example pool and one set of value indexes (loaded once), and none of
    them sees the pairs a user added."""
    import sqlweave.eval.runner as runner_module

    made = []
    real = runner_module.evaluation_resources
    monkeypatch.setattr(runner_module, "evaluation_resources", lambda: made.append(real()) or made[-1])
    root = _tiny_dataset(tmp_path)
    out = tmp_path / "ablation"
    r = runner.invoke(app, ["eval", "ablate", "--pipelines", "zero-shot,repair", "--dataset", "spider-dev",
                            "--data-dir", str(root), "--model", "fake", "--limit", "2", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert len(made) == 1 and made[0].settings.user_examples is False
    assert set(json.loads((out / "ablation.json").read_text())) == {"zero-shot", "repair"}
    for name in ("zero-shot", "repair"):
        assert json.loads((out / name / "run.json").read_text())["user_examples"] is False
