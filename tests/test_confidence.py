"""Confidence: the signals stages set and the features read from an answer, the shipped calibration, and unsure
answers with their readings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import sqlweave
from sqlweave.cli import app
from sqlweave.confidence import FEATURES, Calibration, Signals, default_calibration, estimate, features
from sqlweave.db.connection import QueryResult
from sqlweave.errors import ConfigurationError, LLMTimeoutError
from sqlweave.llm.fake import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.presets import build_pipeline
from sqlweave.stages import ExecuteSQL
from sqlweave.stages.readings import SecondReadings
from tests.eval.test_vote_replays import load
from tests.stages.prompt_goldens import FAILING, presets, run

COUNT = "SELECT count(*) FROM singer"
ONE = QueryResult("", ("count(*)",), ((6,),), False, 0.001)


def fenced(sql: str) -> str:
    return f"```sql\n{sql}\n```"


def test_features_read_the_signals_and_the_query_shape() -> None:
    signals = Signals()
    signals.extracted(1)                 # one name the schema lacks...
    signals.executed(failed=True)        # ...so the first query failed
    signals.repaired = True              # and repair fixed it; no correction asked the model
    signals.extracted(0)
    signals.executed(failed=False)       # what came after the first query counts no more
    sql = ("SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id "
           "WHERE T1.age > (SELECT avg(age) FROM singer) GROUP BY T1.name HAVING count(*) > 1 "
           "UNION SELECT name FROM stadium")
    s = features("Which singers older than average sang twice, and which stadiums?", sql,
                 QueryResult("", ("name",), (), False, 0.0), signals)
    assert set(s) == set(FEATURES)
    assert s["first_try_failed"] == 1 and s["schema_issues"] == 1 and s["repaired"] == 1 and s["corrected"] == 0
    assert s["empty"] == 1 and s["rows_log"] == 0
    assert s["tables"] == 3 and s["joins"] == 1 and s["nested"] == 1 and s["set_op"] == 1
    assert s["group_by"] == 1 and s["having"] == 1 and s["aggregates"] == 2 and s["conditions"] == 2
    # the question names singers and stadiums, not the join table singer_in_concert... which shares "singe"
    assert s["unnamed_tables"] == 0
    assert features("How many concerts?", "SELECT count(*) FROM stadium", ONE, Signals())["unnamed_tables"] == 1
    assert features("q", COUNT, ONE, Signals(corrected=True))["corrected"] == 1
    # a query sqlglot cannot read keeps the stages' signals and no shape
    unread = features("q", "SELECT FROM WHERE ((", ONE, signals)
    assert unread["tables"] == 0 and unread["first_try_failed"] == 1
    # a query named from another is measured as that other one
    named = Signals()
    named.named(sql, COUNT)
    assert features("q", sql, ONE, named)["tables"] == 1


def test_estimate_is_a_probability_and_zero_without_a_result() -> None:
    assert estimate("How many singers?", COUNT, None, None, Signals()) == 0.0
    assert estimate("How many singers?", None, ONE, None, Signals()) == 0.0
    easy = estimate("How many singers are there?", COUNT, ONE, None, Signals())
    hard = estimate("Show the names of singers who sang in no concert held in a stadium with capacity over 5000",
                    "SELECT name FROM singer WHERE singer_id NOT IN (SELECT T1.singer_id FROM singer_in_concert AS T1 "
                    "JOIN concert AS T2 ON T1.concert_id = T2.concert_id JOIN stadium AS T3 "
                    "ON T2.stadium_id = T3.stadium_id WHERE T3.capacity > 5000)",
                    QueryResult("", ("name",), (), False, 0.0), None, Signals(ran=True, first_try_failed=True))
    assert 0.0 < hard < easy < 1.0
    # an explicit calibration is used as given
    flat = Calibration({f: 0.0 for f in FEATURES}, 0.0, {}, {})
    assert estimate("q", COUNT, ONE, None, Signals(), calibration=flat) == 0.5


def test_the_shipped_calibration_covers_every_signal_and_says_how_it_held_up() -> None:
    cal = default_calibration()
    assert set(cal.weights) == set(FEATURES) and set(cal.means) == set(FEATURES)
    about = cal.about
    assert about["train"] == "spider-dev-200.json" and about["answered_training_questions"] > 150
    held = about["heldout"]
    assert held["questions"] >= 100 and 0 <= held["ece"] < 15 and held["auc"] > 0.6
    # more confident answers are right more often on questions it was not fitted on
    assert held["selective_ex"]["50%"] > held["selective_ex"]["100%"]
    assert Calibration.from_dict(json.loads(json.dumps(cal.as_dict()))) == cal


def test_every_answer_has_a_confidence_and_a_failed_one_has_zero(singer_db: Path) -> None:
    engine = sqlweave.connect(singer_db, llm=FakeLLM([fenced(COUNT)]))
    answer = engine.ask("How many singers are there?")
    assert 0.5 < answer.confidence < 1.0 and not answer.unsure and answer.readings == ()
    assert [e.stage for e in answer.trace][-1] == "name_keys"  # no readings stage when none was asked for
    # the signals the stages set are those a recorded trace gives back (benchmarks/tools/calibrate.py fits on these)
    assert answer.signals == load("calibrate").recorded_signals([e.as_dict() for e in answer.trace])
    failed = sqlweave.connect(singer_db, llm=FakeLLM(["I cannot tell."] * 8)).run("How many singers are there?")
    assert not failed.ok and failed.confidence == 0.0 and not failed.unsure
    assert failed.as_dict()["confidence"] == 0.0 and failed.as_dict()["readings"] == []


def test_below_min_confidence_the_answer_is_unsure_with_two_readings(singer_db: Path) -> None:
    samples = [fenced("SELECT count(*) FROM stadium"), fenced(COUNT), fenced("SELECT count(*) FROM stadium"),
               fenced("SELECT count(singer_id) FROM singer")]
    llm = FakeLLM([fenced(COUNT), *samples])
    engine = sqlweave.connect(singer_db, llm=llm)
    answer = engine.ask("How many singers are there?", min_confidence=1.0)
    assert answer.unsure and answer.sql == COUNT  # the answer itself is unchanged
    first, second = answer.readings
    assert first.sql == COUNT and first.result.rows == ((6,),) and first.share == pytest.approx(3 / 5)
    assert second.sql == "SELECT count(*) FROM stadium" and second.share == pytest.approx(2 / 5)
    readings = answer.trace[-1]
    assert readings.stage == "readings" and readings.notes["groups"] == [3, 2]
    assert len(llm.calls) == 2 and llm.calls[1][1].n == 4 and llm.calls[1][1].temperature > 0
    assert llm.calls[1][0] == llm.calls[0][0]  # the generation prompt, sampled again
    data = answer.as_dict()
    assert data["unsure"] is True and [r["share"] for r in data["readings"]] == [0.6, 0.4]
    # at or below the answer's confidence nothing more happens
    sure = sqlweave.connect(singer_db, llm=FakeLLM([fenced(COUNT)])).ask("How many singers are there?",
                                                                         min_confidence=0.0)
    assert not sure.unsure and sure.readings == () and sure.model_calls == 1


def test_a_failed_second_look_keeps_the_answer(singer_db: Path) -> None:
    llm = FakeLLM([fenced(COUNT), LLMTimeoutError("the model took too long")])
    answer = sqlweave.connect(singer_db, llm=llm).ask("How many singers are there?", min_confidence=1.0)
    assert answer.ok and answer.unsure and [r.sql for r in answer.readings] == [COUNT]
    assert "llm_timeout" in answer.trace[-1].notes["sampling_failed"]


class WriteCount:
    """A stage that writes the SQL itself: a pipeline with no generation prompt."""

    name = "write_count"
    recovers = False
    requires: tuple[str, ...] = ()
    provides = ("sql",)

    def __call__(self, state: Any) -> None:
        state.sql = COUNT


def test_a_pipeline_without_a_generation_prompt_shows_its_one_reading(singer_db: Path) -> None:
    llm = FakeLLM()
    pipe = Pipeline("fixed", (WriteCount(), ExecuteSQL()), when_unsure=SecondReadings())
    answer = sqlweave.connect(singer_db, llm=llm, pipeline=pipe).ask("How many singers are there?",
                                                                    min_confidence=1.0)
    assert answer.unsure and [r.sql for r in answer.readings] == [COUNT] and answer.readings[0].share == 1.0
    assert "no_prompt" in answer.trace[-1].notes and llm.calls == []
    # a pipeline with nothing to run when unsure shows the answer as its one reading
    bare = sqlweave.connect(singer_db, llm=llm, pipeline=Pipeline("bare", (WriteCount(), ExecuteSQL())))
    answer = bare.ask("How many singers are there?", min_confidence=1.0)
    assert answer.unsure and [(r.sql, r.share) for r in answer.readings] == [(COUNT, 1.0)]
    assert [e.stage for e in answer.trace] == ["write_count", "execute"]


@pytest.mark.parametrize("bad", [-0.1, 1.5, True])
def test_min_confidence_out_of_range_is_a_configuration_error(singer_db: Path, bad: Any) -> None:
    engine = sqlweave.connect(singer_db, llm=FakeLLM([fenced(COUNT)]))
    with pytest.raises(ConfigurationError, match="min_confidence"):
        engine.run("How many singers are there?", min_confidence=bad)


def test_voting_keeps_its_agreement_apart_from_the_confidence(singer_db: Path) -> None:
    llm = FakeLLM([fenced(COUNT)] * 6)
    answer = sqlweave.connect(singer_db, llm=llm, pipeline=build_pipeline("vote")).ask("How many singers?")
    assert answer.agreement == 1.0 and 0.0 < answer.confidence < 1.0


def test_cli_says_it_is_not_sure_and_shows_both_readings(singer_db: Path, monkeypatch) -> None:
    from sqlweave.llm.registry import BACKENDS

    def respond(messages: Any, options: Any) -> str:
        return fenced(COUNT if options.temperature == 0 else "SELECT count(*) FROM stadium")

    monkeypatch.setitem(BACKENDS, "doubt-fake", lambda arg, **kw: FakeLLM(responder=respond))
    runner = CliRunner()
    args = ["ask", "--db", str(singer_db), "--model", "doubt-fake", "--no-cache", "How many singers are there?"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "confidence" in r.output and "Not sure" not in r.output
    r = runner.invoke(app, args + ["--min-confidence", "1"])
    assert r.exit_code == 0, r.output
    assert "Not sure" in r.output and "Reading 1" in r.output and "Reading 2" in r.output
    assert "stadium" in r.output and "20%" in r.output and "80%" in r.output
    r = runner.invoke(app, args + ["--min-confidence", "1", "--json"])
    data = json.loads(r.stdout)
    assert data["unsure"] is True and [x["sql"] for x in data["readings"]] == [COUNT, "SELECT count(*) FROM stadium"]
    r = runner.invoke(app, args + ["--min-confidence", "1.5"])
    assert r.exit_code == 2 and "Traceback" not in r.output


@pytest.mark.parametrize("preset", presets())
def test_the_signals_stages_set_are_those_their_recorded_trace_gives(preset: str) -> None:
    """Calibrations are fitted on recorded traces (``recorded_signals``): the stages must set what those say, so
    that the features, and the confidence, stay those of every answer recorded so far."""
    recorded_signals = load("calibrate").recorded_signals
    for first in ((), (FAILING,), (FAILING, FAILING, FAILING)):
        answer = run(preset, first)
        assert answer.signals == recorded_signals([e.as_dict() for e in answer.trace])
        assert answer.signals.ran == any(e.stage == "execute" for e in answer.trace)


def test_a_failed_first_query_corrected_by_the_model_says_so() -> None:
    answer = run("correct", (FAILING,))
    assert answer.ok and answer.signals.first_try_failed and answer.signals.corrected
    assert answer.signals.schema_issues == 1 and not answer.signals.repaired
    assert not run("correct").signals.first_try_failed
