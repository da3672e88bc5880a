"""Questions in any language: answered with a ``language`` note, English prompts unchanged, refusal only on request,
and the language detector's quality on Spider's English questions and the multilingual test set."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import sqlweave
from sqlweave.errors import InvalidQuestionError
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.prompts import load, render
from sqlweave.question import detect_language, language_block
from sqlweave.stages import CheckQuestion, ExecuteSQL, ExtractSQL, GenerateSQL, RenderSchema
from sqlweave.stages.generate import prompt_fields

ROOT = Path(__file__).resolve().parents[1]
SPIDER_DEV = ROOT.parent / "shared" / "data" / "spider" / "dev.json"
MULTILINGUAL = ROOT / "benchmarks" / "data" / "multilingual-spider.json"
NAMES = {"en": "English", "fr": "French", "de": "German", "es": "Spanish", "zh": "Chinese"}

#: The zero-shot user template as it was before the optional ``{language}`` block existed.
OLD_ZERO_SHOT_USER = "Database schema:\n{schema}\n\n{history}{values}Question: {question}"


def _pipeline(check: CheckQuestion | None = None) -> Pipeline:
    return Pipeline("zero-shot", (check or CheckQuestion(), RenderSchema(), GenerateSQL(), ExtractSQL(), ExecuteSQL()))


def _user_prompt(llm: FakeLLM, call: int = 0) -> str:
    return llm.calls[call][0][-1].content


@pytest.mark.parametrize("question, language", [
    ("Combien de chanteurs y a-t-il ?", "French"),
    ("有多少歌手？", "Chinese"),
    ("¿Cuántos cantantes hay?", "Spanish"),
])
def test_a_question_in_another_language_is_answered_with_a_language_note(singer_db: Path, question: str,
                                                                        language: str) -> None:
    llm = FakeLLM(["```sql\nSELECT count(*) FROM singer\n```"])
    answer = sqlweave.connect(singer_db, llm=llm).run(question)
    assert answer.ok and answer.result.rows == ((6,),) and answer.error is None
    check = answer.trace[0]
    assert check.stage == "check_question" and check.error is None
    assert check.notes["language"] == language
    user = _user_prompt(llm)
    assert f"The question is in {language}." in user and user.endswith(f"Question: {question}")


def test_english_prompts_are_byte_identical_to_the_template_without_the_language_block(singer_db: Path) -> None:
    llm = FakeLLM(responder=lambda messages, options: "SELECT count(*) FROM singer")
    db = sqlweave.connect(singer_db, llm=llm).db
    question = "How many singers are there?"
    answer = _pipeline().run(question, db, llm)
    assert answer.ok and answer.trace[0].notes["language"] == "English"
    # Without the check stage nothing sets the language: the prompt as it was before languages were told.
    assert _pipeline().without("check_question").run(question, db, llm).ok
    (with_check, _), (without_check, _) = llm.calls
    assert with_check == without_check
    system, user = with_check[0].content, with_check[1].content
    rendered = user[len("Database schema:\n"):user.index("\n\nQuestion: ")]
    assert rendered.startswith("CREATE TABLE") and "language" not in user.lower()
    assert user == OLD_ZERO_SHOT_USER.format(schema=rendered, history="", values="", question=question)
    assert system == load("zero_shot")[0].format(dialect="SQLite")


@pytest.mark.parametrize("template", ["zero_shot", "few_shot"])
def test_the_language_block_is_empty_for_english_in_every_generation_template(template: str) -> None:
    state = SimpleNamespace(question="How many singers are there?", question_language="English",
                            prompt_blocks={"examples": "Q: x\nSQL: SELECT 1"}, prompt_question=None, history=())
    fields = {**prompt_fields(state), "dialect": "SQLite", "schema": "CREATE TABLE singer (Name TEXT);"}
    system, user = load(template)
    without = (system.format(**{**fields, "language": ""}),
               user.replace("{language}", "").format(**{**fields, "language": ""}))
    assert render(template, **fields) == without
    french = {**fields, "language": language_block("French")}
    assert render(template, **french)[1] == without[1].replace("Question: ", language_block("French") + "Question: ")


def test_an_unknown_language_changes_nothing() -> None:
    assert detect_language("12345 ?") == "unknown" and language_block("unknown") == "" and language_block(None) == ""


@pytest.mark.parametrize("check", [CheckQuestion(languages=("English",)), CheckQuestion(require_english=True),
                                   CheckQuestion(any_language=False)])
def test_refusal_only_when_asked_for(singer_db: Path, check: CheckQuestion) -> None:
    llm = FakeLLM(["SELECT count(*) FROM singer"])
    db = sqlweave.connect(singer_db, llm=llm).db
    answer = _pipeline(check).run("Combien de chanteurs y a-t-il dans la base ?", db, llm)
    assert isinstance(answer.error, InvalidQuestionError) and llm.calls == []
    assert "seems to be in French" in answer.error.message and "English" in answer.error.hint
    assert _pipeline(check).run("How many singers are there?", db, llm).ok


def test_a_language_list_answers_those_languages_only() -> None:
    check = CheckQuestion(languages=("English", "French"))
    assert check.check("Combien de chanteurs y a-t-il ?")[1] == "French"
    assert check.check("How many singers?")[1] == "English"
    assert check.check("12345")[1] == "unknown"  # nothing to tell a language from: not refused for it
    with pytest.raises(InvalidQuestionError, match="German"):
        check.check("Wie viele Sänger gibt es?")


def test_default_and_older_spelling_answer_every_language() -> None:
    for check in (CheckQuestion(), CheckQuestion(any_language=True)):
        assert check.check("Wie viele Sänger gibt es?") == ("Wie viele Sänger gibt es?", "German")


def test_empty_and_overlong_questions_are_still_refused() -> None:
    with pytest.raises(InvalidQuestionError, match="empty"):
        CheckQuestion().check("  \n ")
    with pytest.raises(InvalidQuestionError, match="limit is 10"):
        CheckQuestion(max_chars=10).check("Combien de chanteurs ?")


def test_a_bare_namespace_gets_the_checks_only() -> None:
    """A door that refuses before any model time passes the question alone; it gets the cleaned question back."""
    probe = SimpleNamespace(question="  Combien de chanteurs ?  ")
    CheckQuestion()(probe)  # type: ignore[arg-type]
    assert probe.question == "Combien de chanteurs ?"


def test_spider_dev_english_questions_are_detected_as_english() -> None:
    questions = [x["question"] for x in json.loads(SPIDER_DEV.read_text(encoding="utf-8"))]
    english = sum(detect_language(q) == "English" for q in questions)
    assert len(questions) > 1000 and english / len(questions) >= 0.99


def test_the_multilingual_set_is_complete_and_detected() -> None:
    data = json.loads(MULTILINGUAL.read_text(encoding="utf-8"))
    dev = json.loads(SPIDER_DEV.read_text(encoding="utf-8"))
    assert len(data) >= 30 and len({x["id"] for x in data}) == len(data)
    for item in data:
        gold = dev[int(item["id"].removeprefix("dev-"))]
        assert (item["db_id"], item["query"], item["question"]["en"]) == (gold["db_id"], gold["query"],
                                                                        gold["question"])
        assert set(item["question"]) == set(NAMES) and all(q.strip() for q in item["question"].values())
    for code, name in NAMES.items():
        detected = [detect_language(item["question"][code]) for item in data]
        assert sum(d == name for d in detected) / len(data) >= 0.9, (code, detected)
