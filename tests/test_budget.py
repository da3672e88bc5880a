"""A question's time budget (sqlweave.budget): checked between stages and inside the model call, honoured by every
door; the answer found so far comes back cut short, or a typed timeout."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from sqlweave.budget import Deadline, current, preset_budget, within
from sqlweave.database import Database
from sqlweave.db.demo import demo_database_path
from sqlweave.errors import ConfigurationError, LLMTimeoutError, QuestionCancelledError, QuestionTimeoutError
from sqlweave.llm.base import GenerationOptions, Message
from sqlweave.llm.fake import FakeLLM
from sqlweave.pipeline import Pipeline, State
from sqlweave.presets import build_pipeline

COUNT = "```sql\nSELECT COUNT(*) FROM customers\n```"


def slow_model(after_first: float) -> tuple[FakeLLM, list[float | None]]:
    """A model whose first answer is at once and whose later ones take ``after_first`` seconds, or give up at the
    call's ``timeout_s`` (as every backend must) or when the question is cancelled."""
    timeouts: list[float | None] = []

    def respond(messages: tuple[Message, ...], options: GenerationOptions) -> str:
        timeouts.append(options.timeout_s)
        if len(timeouts) == 1:
            return COUNT
        end = time.monotonic() + min(after_first, options.timeout_s or after_first)
        deadline = current()
        while time.monotonic() < end:
            if deadline is not None and deadline.cancelled():
                raise deadline.error()
            time.sleep(0.01)
        if options.timeout_s is not None and options.timeout_s < after_first:
            raise LLMTimeoutError("the fake model did not finish in time")
        return COUNT

    return FakeLLM(responder=respond), timeouts


class AskAgain:
    """A stage that asks the model once more (as a vote or a correction does)."""

    name = "ask_again"
    recovers = True
    requires: tuple[str, ...] = ()
    provides: tuple[str, ...] = ()

    def __call__(self, state: State) -> None:
        state.complete([Message("user", "again")])


def with_second_call(budget_s: float | None) -> Pipeline:
    zero = build_pipeline("zero-shot")
    return Pipeline("zero-shot", zero.stages + (AskAgain(), AskAgain()), budget_s=budget_s)


def test_the_library_answers_in_full_unless_a_budget_is_asked_for() -> None:
    llm, _ = slow_model(after_first=1.5)
    answer = with_second_call(None).run("How many customers?", Database.open(demo_database_path()), llm)
    assert answer.ok and not answer.cut_short and len(llm.calls) == 3  # batch work and evaluations run in full


def test_presets_have_budgets_and_a_bad_budget_fails_when_built() -> None:
    assert build_pipeline("default").budget == preset_budget("default") > 0
    assert build_pipeline("best").budget > build_pipeline("default").budget
    assert Pipeline("custom", build_pipeline("zero-shot").stages, budget_s=5).budget == 5
    for bad in (0, -1, True):
        with pytest.raises(ConfigurationError, match="budget_s"):
            Pipeline("custom", build_pipeline("zero-shot").stages, budget_s=bad)
    with pytest.raises(ConfigurationError, match="budget_s"):
        build_pipeline("zero-shot").run("How many customers?", Database.open(demo_database_path()), FakeLLM([COUNT]),
                                        budget_s=0)


def test_a_budget_spent_after_an_answer_ran_gives_that_answer_cut_short() -> None:
    build_pipeline("zero-shot").run("How many customers?", Database.open(demo_database_path()), FakeLLM([COUNT]))
    llm, timeouts = slow_model(after_first=30)  # (once loaded, the question's language is found in no time)
    start = time.monotonic()
    answer = with_second_call(1.0).run("How many customers?", Database.open(demo_database_path()), llm)
    took = time.monotonic() - start
    assert took < 1.0 + 2.0, took  # the slow call stopped at the deadline, the last stage never started
    assert answer.ok and answer.cut_short and answer.result.rows == ((60,),)
    assert answer.error is None
    assert any("Cut short at the question's time budget of 1 s" in c and "ask_again" in c for c in answer.cautions)
    assert timeouts[1] is not None and timeouts[1] <= 1.0  # the model call was given the time left
    assert len(timeouts) == 2  # the second ask_again made no model call: the time was up
    assert answer.as_dict()["cut_short"] is True


def test_a_budget_spent_before_any_answer_is_a_typed_timeout() -> None:
    def stuck(messages: tuple[Message, ...], options: GenerationOptions) -> str:
        time.sleep(min(30, options.timeout_s or 30))
        raise LLMTimeoutError("the fake model did not finish in time")

    start = time.monotonic()
    answer = build_pipeline("zero-shot").run("How many customers?", Database.open(demo_database_path()),
                                             FakeLLM(responder=stuck), budget_s=0.5)
    assert time.monotonic() - start < 0.5 + 2.0
    assert not answer.ok and isinstance(answer.error, QuestionTimeoutError)
    assert answer.error.code == "question_timeout" and answer.error.hint and not answer.cut_short


def test_a_cancelled_question_stops_within_a_second() -> None:
    llm, _ = slow_model(after_first=30)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    start = time.monotonic()
    answer = with_second_call(None).run("How many customers?", Database.open(demo_database_path()), llm,
                                        cancel=cancel)
    assert time.monotonic() - start < 0.3 + 1.0
    assert isinstance(answer.error, QuestionCancelledError) and answer.error.code == "cancelled"


def test_past_the_deadline_no_model_call_is_made() -> None:
    llm = FakeLLM([COUNT])
    deadline = Deadline.start(10)
    deadline.cancel.set()
    with within(deadline), pytest.raises(QuestionCancelledError):
        llm.complete([Message("user", "q")])
    assert llm.calls == []
    expired = Deadline.start(0.0001)
    time.sleep(0.01)
    with within(expired), pytest.raises(QuestionTimeoutError):
        llm.complete([Message("user", "q")])
    assert llm.calls == [] and current() is None


def test_the_call_timeout_is_the_sooner_of_its_own_and_the_time_left() -> None:
    seen: list[Any] = []
    llm = FakeLLM(responder=lambda m, o: seen.append(o.timeout_s) or "ok")
    with within(Deadline.start(100)):
        llm.complete([Message("user", "q")], timeout_s=5)
        llm.complete([Message("user", "q")])
    assert seen[0] == 5 and 99 < seen[1] <= 100


def test_a_run_with_no_budget_and_nobody_to_cancel_is_not_watched() -> None:
    assert not Deadline.start(None).watched  # the library's batch work: the model runs as it always has
    assert Deadline.start(None, threading.Event()).watched  # a door's question: its client may leave
    assert Deadline.start(5).watched
