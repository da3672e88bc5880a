"""The interpret_time stage (``+time``): time expressions as evidence, today's date from the database's clock,
nothing added (and nothing asked) for questions without one."""

from __future__ import annotations

import sqlite3
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.errors import ConfigurationError, DatabaseUnavailableError
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import State
from sqlweave.presets import ADDONS, build_pipeline
from sqlweave.stages.interpret_time import InterpretTime, database_today
from sqlweave.stages.generate import EVIDENCE_HEADER


@pytest.fixture
def orders_db(tmp_path: Path) -> Database:
    path = tmp_path / "orders.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, order_date DATE, amount REAL)")
    con.executemany("INSERT INTO orders (order_date, amount) VALUES (?, ?)",
                    [("2026-10-31", 1.0), ("2026-11-01", 2.0), ("2026-11-14", 3.0), ("2026-11-15", 4.0),
                     ("2026-11-30", 5.0), ("2026-12-01", 6.0)])
    con.commit()
    con.close()
    return Database.open(path)


def _state(db: Database, question: str, evidence: str | None = None) -> State:
    return State(question, db, FakeLLM([]), db.schema(), db.schema(), evidence=evidence)


def test_a_question_without_a_time_gets_nothing_and_asks_nothing(orders_db: Database,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    state = _state(orders_db, "How many orders cost more than 3?")
    monkeypatch.setattr(Database, "trusted_read", lambda self, sql, **_: asked.append(sql))
    InterpretTime()(state)
    assert state.evidence is None and state._notes == {} and asked == []


def test_the_prompt_of_a_question_without_a_time_is_the_presets_own(orders_db: Database) -> None:
    prompts = []
    for preset in ("default", "default+time"):
        llm = FakeLLM(responder=lambda *_: "```sql\nSELECT COUNT(*) FROM orders\n```")
        answer = build_pipeline(preset).run("How many orders are there?", orders_db, llm)
        prompts.append([c[0] for c in llm.calls])
        assert answer.model_calls == len(llm.calls)
    assert prompts[0] == prompts[1]  # same prompts: the response cache answers both, the figure is the same


def test_the_interpretation_reaches_the_prompt_and_the_trace(orders_db: Database) -> None:
    llm = FakeLLM(["```sql\nSELECT SUM(amount) FROM orders WHERE order_date >= '2026-11-01' AND "
                   "order_date < '2026-12-01'\n```"])
    pipe = build_pipeline("zero-shot+time").replace_stage("interpret_time", InterpretTime(today="2026-12-09"))
    answer = pipe.run("What was the total amount of orders last month?", orders_db, llm)
    user = llm.calls[0][0][-1].content
    assert f"{EVIDENCE_HEADER}\nToday is Wednesday 2026-12-09 (DATE('now')).\n- \"last month\" is the month before " \
           "this one: November 2026: orders.order_date >= '2026-11-01' AND orders.order_date < '2026-12-01'\n" in user
    assert user.index(EVIDENCE_HEADER) < user.index("Question: ")
    entry = next(e for e in answer.trace if e.stage == "interpret_time")
    assert entry.calls == () and entry.notes["today"] == "2026-12-09" and entry.notes["today_from"] == "given"
    assert entry.notes["interpretations"] == [{
        "phrase": "last month", "kind": "period", "meaning": "the month before this one: November 2026",
        "start": "2026-11-01", "end": "2026-12-01",
        "sql": "orders.order_date >= '2026-11-01' AND orders.order_date < '2026-12-01'"}]
    assert answer.result is not None and answer.result.rows == ((14.0,),)


def test_the_users_evidence_comes_first(orders_db: Database) -> None:
    state = _state(orders_db, "Orders on weekends", evidence="Amounts are in euros.")
    InterpretTime(today="2026-12-09")(state)
    assert state.evidence is not None
    first, *rest = state.evidence.splitlines()
    assert first == "Amounts are in euros." and rest[-1].endswith("strftime('%w', orders.order_date) IN ('0', '6')")


def test_today_is_the_databases_date(orders_db: Database) -> None:
    assert database_today(orders_db) in (datetime.now(timezone.utc).date(), date.today())  # SQLite's 'now' is UTC
    state = _state(orders_db, "Orders yesterday")
    InterpretTime()(state)
    assert state._notes["today_from"] == "database"
    assert state._notes["today"] == database_today(orders_db).isoformat()


def test_a_clock_that_cannot_be_read_falls_back_to_the_machine(orders_db: Database,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def down(self: Database, sql: str, **_: object) -> None:
        raise DatabaseUnavailableError("the server went away")

    state = _state(orders_db, "Orders this year")
    monkeypatch.setattr(Database, "trusted_read", down)
    InterpretTime()(state)
    assert state._notes["today_from"] == "machine" and "went away" in state._notes["clock_error"]
    assert state.evidence is not None and str(date.today().year) in state.evidence


def test_a_period_word_that_names_the_schema_is_not_a_grouping(tmp_path: Path) -> None:
    path = tmp_path / "prices.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE sbDailyPrice (sbDpDate DATE, sbDpClose REAL)")
    con.close()
    db = Database.open(path)
    state = _state(db, "Lowest daily closing price in the past 7 days")
    InterpretTime(today="2026-12-01")(state)
    assert [i["phrase"] for i in state._notes["interpretations"]] == ["the past 7 days"]
    state = _state(db, "Monthly lowest closing price")
    InterpretTime(today="2026-12-01")(state)
    assert [i["phrase"] for i in state._notes["interpretations"]] == ["Monthly"]


@pytest.mark.parametrize("question", ["¿Cuántos pedidos hubo el mes pasado?", "上个月有多少订单？",
                                      "Combien de commandes le 2026-11-14 ?", "\u0000\ufeff  ", "Q" * 1999])
def test_questions_in_any_language_or_shape_do_not_fail(orders_db: Database, question: str) -> None:
    state = _state(orders_db, question)
    InterpretTime(today="2026-12-09")(state)
    assert state.evidence is None or "2026-11-14" in state.evidence


def test_today_must_be_a_date() -> None:
    with pytest.raises(ConfigurationError, match="ISO date"):
        InterpretTime(today="yesterday")


def test_plus_time_goes_before_generation_in_every_kind_of_preset() -> None:
    assert "time" in ADDONS
    for preset, before in (("default+time", "generate"), ("best+time", "generate"), ("pruned+time", "approximate"),
                           ("rag-ast+time", "approximate")):
        names = [s.name for s in build_pipeline(preset).stages]
        assert names.index("interpret_time") + 1 == names.index(before), (preset, names)
    names = [s.name for s in build_pipeline("zero-shot+evidence+time").stages]
    assert names.index("generate_evidence") < names.index("interpret_time") < names.index("generate")
    assert [s.name for s in build_pipeline("agent+time").stages] == ["check_question", "interpret_time", "agent"]


def test_each_line_is_written_on_the_date_column_the_question_names(tmp_path: Path) -> None:
    path = tmp_path / "shop.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE payments_received (id INTEGER, payment_date DATE, amount REAL)")
    con.execute("CREATE TABLE payments_made (id INTEGER, payment_date DATE, amount REAL)")
    con.execute("CREATE TABLE treatments (id INTEGER, start_dt DATE, end_dt DATE)")
    con.execute("CREATE TABLE adverse_events (id INTEGER, treatment_id INTEGER, reported_dt TEXT)")
    con.execute("INSERT INTO adverse_events VALUES (1, 1, '2026-01-05'), (2, 1, '2026-02-01 10:00:00')")
    con.commit()
    con.close()
    db = Database.open(path)

    def lines(question: str) -> list[str]:
        state = _state(db, question)
        InterpretTime(today="2026-12-01")(state)
        return [i["sql"] for i in state._notes["interpretations"]]

    assert lines("Total payments received last week") == [
        "payments_received.payment_date >= '2026-11-23' AND payments_received.payment_date < '2026-11-30'"]
    assert lines("Payments last week") == ["d >= '2026-11-23' AND d < '2026-11-30'"]  # received or made: not told
    assert lines("Treatments that ended in the past 30 days") == ["treatments.end_dt >= '2026-11-01'"]
    # the later date is named before the phrase, the earlier one after it; a text column of ISO dates is a date
    assert lines("adverse events within 10 days after starting the treatment") == [
        "date(adverse_events.reported_dt) BETWEEN date(treatments.start_dt) AND date(treatments.start_dt, '+10 days')"]
    state = _state(db, "Payments last week")
    InterpretTime(today="2026-12-01", name_columns=False)(state)
    assert state.evidence is not None and "For a date column d:" in state.evidence


def test_days_of_the_week_are_left_out_where_no_column_holds_a_date(tmp_path: Path) -> None:
    path = tmp_path / "flights.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE flight (flight_number TEXT, flight_days TEXT, departure_time INTEGER)")
    con.execute("INSERT INTO flight VALUES ('AA1', 'mon wed', 1700000000)")
    con.commit()
    con.close()
    state = _state(Database.open(path), "Which flights operate on Mondays, for each month?")
    InterpretTime(today="2026-12-01")(state)
    assert [i["phrase"] for i in state._notes["interpretations"]] == ["for each month"]
