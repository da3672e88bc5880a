"""Users' own examples: added from the API and the CLI, checked against the database, persisted, seen by pools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sqlweave
from sqlweave.cli import app
from sqlweave.errors import RefusedStatementError, SchemaError
from sqlweave.llm.fake import FakeLLM
from sqlweave.retrieval.pool import ExamplePool, load_pool, user_examples, user_pool_file
from tests.conftest import file_digest


def test_api_adds_a_checked_example_that_a_loaded_pool_sees(singer_db: Path, tmp_path: Path) -> None:
    train = tmp_path / "train.json"
    train.write_text(json.dumps([{"db_id": "x", "question": "How many stadiums?", "query": "SELECT count(*) FROM stadium"}]))
    pool = load_pool(train)
    assert len(pool) == 1
    engine = sqlweave.connect(singer_db, llm=FakeLLM([]))
    ex = engine.add_example("Which singers are French?", "SELECT Name FROM singer WHERE Country = 'France'")
    assert ex.db_id == "concert_singer" and ex.source == "user" and ex.sql_skeleton
    assert [e.question for e in user_examples()] == ["Which singers are French?"]
    assert len(pool) == 2 and pool.search("question", "french singers", k=1)[0].question == ex.question
    # A new process (a fresh pool from the same training file) reads it from disk.
    assert any(e.source == "user" for e in ExamplePool.from_spider(train).examples)


def test_a_pair_added_for_a_database_is_shown_for_its_questions_and_its_training_pairs_are_not(
        singer_db: Path, tmp_path: Path) -> None:
    """Training pairs of the question's own database are passed over (they could hold its answer); the user's own
    pairs for that database are what they were added for."""
    train = tmp_path / "train.json"
    train.write_text(json.dumps([
        {"db_id": "concert_singer", "question": "Which singers are from France?",
         "query": "SELECT Name FROM singer WHERE Country = 'France'"},
        {"db_id": "pets", "question": "Which pets are from France?", "query": "SELECT name FROM pets WHERE origin = 'France'"},
    ]))
    llm = FakeLLM(["SELECT Name FROM singer WHERE Country = 'Netherlands'"])
    from sqlweave.presets import build_pipeline

    engine = sqlweave.connect(singer_db, llm=llm, pipeline=build_pipeline("rag", examples=str(train)), cache=False)
    engine.add_example("Which singers are Dutch?", "SELECT Name FROM singer WHERE Country = 'Netherlands'")
    answer = engine.ask("Which singers are from the Netherlands?")
    assert answer.ok
    shown = next(e for e in answer.trace if e.stage == "select_examples").notes["examples"]
    assert "Which singers are Dutch?" in shown and "Which pets are from France?" in shown
    assert "Which singers are from France?" not in shown


@pytest.mark.parametrize(("sql", "error"), [
    ("DELETE FROM singer", RefusedStatementError),
    ("SELECT nme FROM singer", SchemaError),
    ("SELECT count(*) FROM singers", SchemaError),
])
def test_bad_examples_are_refused_and_nothing_is_stored(singer_db: Path, sql: str, error: type) -> None:
    before = file_digest(singer_db)
    with pytest.raises(error):
        sqlweave.connect(singer_db, llm=FakeLLM([])).add_example("How many singers?", sql)
    assert not user_pool_file().exists() and file_digest(singer_db) == before


def test_cli_add_and_list(singer_db: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["examples", "add", "How many singers?", "SELECT count(*) FROM singer", "--db", str(singer_db)])
    assert ok.exit_code == 0 and "added for concert_singer" in ok.output
    bad = runner.invoke(app, ["examples", "add", "Drop it", "DROP TABLE singer", "--db", str(singer_db)])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    listed = runner.invoke(app, ["examples", "list", "--json"])
    assert [e["sql"] for e in json.loads(listed.output)] == ["SELECT count(*) FROM singer"]


def test_cli_build_derives_and_caches_a_training_file(tmp_path: Path) -> None:
    train = tmp_path / "train.json"
    train.write_text(json.dumps([{"db_id": "x", "question": f"How many rows in t{i}?", "query": f"SELECT count(*) FROM t{i}"}
                                 for i in range(5)]))
    runner = CliRunner()
    first = runner.invoke(app, ["examples", "build", "--examples", str(train)])
    assert first.exit_code == 0 and "5 examples ready" in first.output
    cache = user_pool_file().parent / "derived.jsonl"
    lines = cache.read_text().splitlines()
    assert len(lines) == 5
    runner.invoke(app, ["examples", "build", "--examples", str(train)])
    assert cache.read_text().splitlines() == lines  # nothing derived twice
    missing = runner.invoke(app, ["examples", "build", "--examples", "no-such-train.json"])
    assert missing.exit_code == 2 and "'no-such-train.json' does not exist" in missing.output
    (tmp_path / "bad.json").write_text("{oops")
    bad = runner.invoke(app, ["examples", "build", "--examples", str(tmp_path / "bad.json")])
    assert bad.exit_code == 2 and "cannot read examples" in bad.output


def test_cli_build_without_a_file_readies_the_bundled_pool(monkeypatch) -> None:
    monkeypatch.delenv("SQLWEAVE_EXAMPLES", raising=False)
    r = CliRunner().invoke(app, ["examples", "build"])
    assert r.exit_code == 0 and "7000 examples ready (0 of them yours)" in r.output
    assert not (user_pool_file().parent / "derived.jsonl").exists()  # shipped derived


def test_an_example_added_after_an_interrupted_write_is_kept() -> None:
    from sqlweave.retrieval.pool import add_user_example

    add_user_example("How many singers?", "SELECT count(*) FROM singer", db_id="concert", schema_names=["singer"])
    with user_pool_file().open("a") as fh:
        fh.write('{"question": "Which sing')  # a write cut short, no newline
    add_user_example("How many stadiums?", "SELECT count(*) FROM stadium", db_id="concert", schema_names=["stadium"])
    assert [e.question for e in user_examples()] == ["How many singers?", "How many stadiums?"]
