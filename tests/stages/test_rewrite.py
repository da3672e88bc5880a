"""The rewrite stage: adopted only when the rewritten query runs and returns rows; joins kept for other languages."""

from __future__ import annotations

from pathlib import Path

import pytest

import sqlweave.stages.rewrite as rewrite_stage
from sqlweave.database import Database
from sqlweave.llm.fake import FakeLLM
from sqlweave.presets import build_pipeline
from sqlweave.sql.rewrite import Rewrite

JOINED = ("SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID "
          "ORDER BY T1.Age DESC LIMIT 1")
GROUPED = ("SELECT T1.Name, count(*) FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID "
           "GROUP BY T1.Name")


def run(db_path: Path, question: str, sql: str, preset: str = "default"):
    db = Database.open(db_path)
    try:
        return build_pipeline(preset).run(question, db, FakeLLM([sql]))
    finally:
        db.close()


def rewrite_entry(answer):
    return next(e for e in answer.trace if e.stage == "rewrite")


def test_a_needless_join_is_dropped_and_the_trace_says_so(singer_db: Path) -> None:
    answer = run(singer_db, "What is the name of the oldest singer?", JOINED)
    assert answer.ok and answer.sql == "SELECT T1.Name FROM singer AS T1 ORDER BY T1.Age DESC LIMIT 1"
    assert answer.result.rows == (("Joe Sharp",),)
    notes = rewrite_entry(answer).notes
    assert notes["changed"] is True and notes["changes"] == [
        "dropped the join of singer_in_concert (the question needs none of its columns)"]
    assert next(e for e in answer.trace if e.stage == "execute").sql == JOINED  # the model's own answer stays visible


def test_a_question_in_another_language_keeps_its_joins_but_not_its_name_grouping(singer_db: Path) -> None:
    kept = run(singer_db, "Quel est le nom du chanteur le plus âgé ?", JOINED)
    assert kept.sql == JOINED and rewrite_entry(kept).notes == {"changes": [], "changed": False}
    grouped = run(singer_db, "Combien de concerts pour chaque chanteur ?", GROUPED)
    assert grouped.sql.endswith("GROUP BY T1.Name, T1.Singer_ID")


def test_a_rewrite_that_fails_to_run_is_not_adopted(singer_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rewrite_stage, "rewrite_query",
                        lambda sql, *a, **k: Rewrite("SELECT Nam FROM singer", ["a change that breaks it"]))
    answer = run(singer_db, "What is the name of the oldest singer?", JOINED)
    assert answer.ok and answer.sql == JOINED
    assert rewrite_entry(answer).notes == {"changes": [], "changed": False,
                                           "rejected": {"a change that breaks it": "schema_linking"}}


def test_an_empty_answer_that_asks_one_column_for_both_values_becomes_an_intersection(singer_db: Path) -> None:
    sql = ("SELECT T1.Name FROM stadium AS T1 JOIN concert AS T2 ON T1.Stadium_ID = T2.Stadium_ID "
           "WHERE T2.Year = '2014' AND T2.Year = '2015'")
    answer = run(singer_db, "Which stadiums had concerts in both 2014 and 2015?", sql, preset="zero-shot+rewrite")
    assert answer.ok and " INTERSECT " in answer.sql and answer.result.rows
    assert rewrite_entry(answer).notes["changes"] == ["kept what has both '2014' and '2015' (INTERSECT), not either"]
    # Asked without "both", the empty answer stands.
    kept = run(singer_db, "Which stadiums had concerts in 2014 and 2015?", sql, preset="zero-shot+rewrite")
    assert kept.sql == sql and not kept.result.rows


def test_an_empty_answer_keeps_its_joins(singer_db: Path) -> None:
    sql = JOINED.replace("ORDER BY", "WHERE T1.Age > 500 ORDER BY")
    answer = run(singer_db, "What is the name of the oldest singer over 500?", sql, preset="zero-shot+rewrite")
    assert answer.sql == sql and rewrite_entry(answer).notes == {"changes": [], "changed": False}


@pytest.mark.parametrize(("sql", "rows"), [
    # no rows: no singer's name is 'France'
    ("SELECT Name FROM singer WHERE Name = 'France' ORDER BY Age", (("Tribal King",), ("Justin Brown",),
                                                                   ("Rose White",), ("John Nizinik",))),
    # a count of nothing, which runs "well"
    ("SELECT count(*) FROM singer WHERE Song_Name = 'France'", ((4,),)),
])
def test_a_text_compared_with_the_wrong_column_is_relinked(singer_db: Path, sql: str, rows: tuple) -> None:
    answer = run(singer_db, "Which singers are from France?", sql, preset="zero-shot+rewrite")
    assert answer.ok and answer.result.rows == rows and "Country = 'France'" in answer.sql
    notes = rewrite_entry(answer).notes
    assert notes["changed"] is True and notes["changes"][0].startswith("compared 'France' with singer.Country")


def test_a_relinked_answer_is_then_rewritten(singer_db: Path) -> None:
    sql = JOINED.replace("ORDER BY", "WHERE T1.Name = 'France' ORDER BY")
    answer = run(singer_db, "What is the name of the oldest singer from France?", sql)
    assert answer.sql == "SELECT T1.Name FROM singer AS T1 WHERE T1.Country = 'France' ORDER BY T1.Age DESC LIMIT 1"
    assert [c.split(" ")[0] for c in rewrite_entry(answer).notes["changes"]] == ["compared", "dropped"]


def test_a_relink_that_returns_nothing_is_not_adopted(singer_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rewrite_stage, "relink_values",
                        lambda sql, *a, **k: Rewrite(sql + " AND 1 = 0", ["a change that empties it"]))
    answer = run(singer_db, "Which singers are from France?", "SELECT Name FROM singer WHERE Country = 'France'",
                 preset="zero-shot+rewrite")
    assert answer.sql == "SELECT Name FROM singer WHERE Country = 'France'" and len(answer.result.rows) == 4
    assert rewrite_entry(answer).notes == {"changes": [], "changed": False,
                                           "rejected": {"a change that empties it": "empty"}}


def test_a_failed_answer_never_reaches_the_stage(singer_db: Path) -> None:
    answer = run(singer_db, "Names?", "SELECT nothing FROM nowhere", preset="zero-shot+rewrite")
    assert not answer.ok and all(e.stage != "rewrite" for e in answer.trace)


def test_samples_that_share_a_probe_ask_the_database_each_question_once(singer_db: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlweave.pipeline import State
    from sqlweave.stages.candidate import attempt
    from sqlweave.stages.rewrite import rewrite_attempt, value_probe

    db = Database.open(singer_db)
    try:
        state = State(question="Which singers are from France?", db=db, llm=FakeLLM([]), schema=db.schema(),
                      prompt_schema=db.schema())
        samples = [attempt(state, "SELECT Name FROM singer WHERE Name = 'France'") for _ in range(3)]
        probes: list[str] = []
        read = db.trusted_read
        monkeypatch.setattr(db, "trusted_read", lambda sql, **kw: probes.append(sql) or read(sql, **kw))
        shared = value_probe(db)
        chosen = [rewrite_attempt(state, s, shared)[0] for s in samples]
        assert all(c.sql == "SELECT Name FROM singer WHERE Country = 'France'" for c in chosen)
        once = len(probes)
        assert once > 1 and len(set(probes)) == once  # three samples, each question asked once
        for s in samples:
            rewrite_attempt(state, s)  # a probe of its own each: the same questions asked again
        assert len(probes) == 4 * once
    finally:
        db.close()
