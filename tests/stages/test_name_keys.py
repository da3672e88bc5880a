"""The name_keys stage: a key shown where the question asks for no ids is followed by the name of its row."""

from __future__ import annotations

import pytest

from sqlweave.confidence import Signals, features
from sqlweave.database import Database
from sqlweave.db.demo import demo_database_path
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.presets import build_pipeline
from sqlweave.sql.repair import Repair
from sqlweave.stages import name_keys as name_keys_stage

MANAGERS = "SELECT e.manager_id, e.first_name, e.last_name\nFROM employees e"
QUESTION = "Who is the manager of each employee?"


def run(question: str, sql: str, preset: "str | Pipeline" = "default"):
    db = Database.open(demo_database_path())
    try:
        pipe = build_pipeline(preset) if isinstance(preset, str) else preset
        return pipe.run(question, db, FakeLLM([sql]))
    finally:
        db.close()


def entry(answer):
    return next(e for e in answer.trace if e.stage == "name_keys")


def test_the_demo_shop_names_each_employee_s_manager() -> None:
    answer = run(QUESTION, MANAGERS)
    assert answer.ok and answer.result.columns == (
        "manager_id", "manager_first_name", "manager_last_name", "first_name", "last_name")
    plain = run(QUESTION, MANAGERS, build_pipeline("default").without("name_keys"))
    assert len(answer.result.rows) == len(plain.result.rows)
    names = {row[0]: row[1:] for row in plain.result.rows}  # employee_id is not shown: find it by name
    with Database.open(demo_database_path()) as db:
        ids = dict(db.execute("SELECT employee_id, first_name || ' ' || last_name FROM employees").rows)
    for manager_id, first, last, *_ in answer.result.rows:
        assert (manager_id is None and first is None) or f"{first} {last}" == ids[manager_id]
    assert names  # the unnamed answer had rows to compare
    notes = entry(answer).notes
    assert notes["changed"] is True and notes["named_from"] == MANAGERS and notes["changes"] == [
        "named the rows the keys e.manager_id (first_name, last_name of employees) refer to (the question asks "
        "for no ids)"]
    # The model's query stays visible in the trace, and the confidence is read from it: a join added to show a
    # name changes no row.
    assert next(e for e in answer.trace if e.stage == "execute").sql == MANAGERS
    assert answer.confidence == plain.confidence > 0.5
    assert answer.signals.named_from == {answer.sql: MANAGERS}
    assert features(QUESTION, answer.sql, answer.result, answer.signals)["joins"] == 0
    assert features(QUESTION, answer.sql, answer.result, Signals())["joins"] == 1  # what the named query alone says


def test_a_question_that_asks_for_ids_keeps_them() -> None:
    answer = run("List each employee's manager id.", MANAGERS)
    assert answer.sql == MANAGERS and entry(answer).notes == {"changes": [], "changed": False}


def test_an_answer_without_rows_is_left_alone() -> None:
    sql = "SELECT e.manager_id FROM employees e WHERE e.last_name = 'Nobody'"
    answer = run("Who manages Nobody?", sql)
    assert answer.sql == sql and entry(answer).notes["skipped"] is True


def test_a_rewrite_that_changes_the_rows_is_not_adopted(monkeypatch: pytest.MonkeyPatch) -> None:
    doubled = "SELECT e.manager_id, e.first_name FROM employees e JOIN orders o ON 1 = 1"
    monkeypatch.setattr(name_keys_stage, "name_keys", lambda *a, **k: Repair(doubled, ["a change that adds rows"]))
    answer = run(QUESTION, MANAGERS)
    assert answer.sql == MANAGERS
    assert entry(answer).notes == {"changes": [], "changed": False, "rejected": {"a change that adds rows": "ok"}}


def test_only_presets_that_rewrite_name_keys() -> None:
    assert "name_keys" not in [s.name for s in build_pipeline("zero-shot").stages]  # the plain baseline stays plain
    assert run(QUESTION, MANAGERS, "zero-shot").sql == MANAGERS
    assert run(QUESTION, MANAGERS, "best").result.columns[1] == "manager_first_name"
