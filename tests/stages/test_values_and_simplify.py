"""Value selection, the values block in generation prompts, and question simplification (fake model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.db.demo import demo_database_path
from sqlweave.db.render import RenderedSchema
from sqlweave.schema import Column, Schema, Table
from sqlweave.errors import ConfigurationError, LLMTimeoutError
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import Pipeline, State
from sqlweave.presets import zero_shot
from sqlweave.stages import CheckQuestion, ExecuteSQL, ExtractSQL, GenerateSQL, RenderSchema
from sqlweave.stages.approximate import ApproximateQuery
from sqlweave.stages.correct import full_schema_prompt
from sqlweave.stages.generate import VALUES_HEADER, headed_block
from sqlweave.stages.select_values import SelectValues, candidate_spans, select_values, value_index
from sqlweave.stages.simplify import SimplifyQuestion, check_simplification, clean_simplification

# Today's exact zero-shot prompt for a small schema and question: the response cache and every
# measurement depend on it, so a pipeline without value selection must keep rendering it byte for byte.
PINNED_SYSTEM = (
    "You are an expert data analyst who writes SQLite queries. Given a database schema and a question, write one "
    "SQLite query that answers the question.\n"
    "Rules:\n"
    "- Use only the tables and columns that exist in the schema; copy their names exactly.\n"
    "- Select only what the question asks for, in the order it asks.\n"
    "- Join tables through their foreign keys when the question spans several tables.\n"
    "- Answer with the SQL query alone, in a ```sql code block, with no explanation."
)
PINNED_SCHEMA = "CREATE TABLE singer (\n  Singer_ID INT PRIMARY KEY,\n  Name TEXT,\n  Country TEXT\n);"
PINNED_USER = ("Database schema:\nCREATE TABLE singer (\n  Singer_ID INT PRIMARY KEY,\n  Name TEXT,\n  Country TEXT\n);"
               "\n\nQuestion: How many singers are from France?")


def _state(db: Database, llm: FakeLLM, question: str = "How many singers are from France?") -> State:
    s = db.schema()
    state = State(question, db, llm, s, s)
    state.rendered_schema = RenderedSchema("create_table", PINNED_SCHEMA, 30, False)
    return state


def test_zero_shot_prompt_is_unchanged_without_values(singer_db: Path) -> None:
    llm = FakeLLM(["SELECT 1"])
    state = _state(Database.open(singer_db), llm)
    GenerateSQL()(state)
    system, user = (m.content for m in llm.calls[0][0])
    assert system == PINNED_SYSTEM
    assert user == PINNED_USER
    # An empty selection (the stage ran, found nothing) renders the same bytes.
    llm2 = FakeLLM(["SELECT 1"])
    state2 = _state(Database.open(singer_db), llm2)
    state2.values, state2.prompt_blocks["values"] = [], ""
    GenerateSQL()(state2)
    assert [m.content for m in llm2.calls[0][0]] == [PINNED_SYSTEM, PINNED_USER]


def test_values_block_sits_just_before_the_question(singer_db: Path) -> None:
    for template in ("zero_shot", "few_shot"):
        llm = FakeLLM(["SELECT 1"])
        state = _state(Database.open(singer_db), llm)
        state.prompt_blocks = {"values": headed_block(VALUES_HEADER, "- singer.Country: 'France'"),
                               "examples": "Question: q\nSQL: SELECT 1"}
        GenerateSQL(prompt=template)(state)
        user = llm.calls[0][0][1].content
        assert user.endswith("\n\nValues from the database that match the question:\n- singer.Country: 'France'"
                             "\n\nQuestion: How many singers are from France?")


def test_correction_fallback_and_approximation_keep_the_values(singer_db: Path) -> None:
    db = Database.open(singer_db)
    state = _state(db, FakeLLM(["SELECT 1"]))
    state.prompt_blocks["values"] = headed_block(VALUES_HEADER, "- singer.Country: 'France'")
    messages = full_schema_prompt(state, "zero_shot")
    assert "- singer.Country: 'France'\n\nQuestion: How many singers" in messages[1].content
    assert "CREATE TABLE stadium" in messages[1].content
    llm = FakeLLM(["SELECT count(*) FROM singer"])
    state = _state(db, llm)
    state.prompt_blocks["values"] = headed_block(VALUES_HEADER, "- singer.Country: 'France'")
    ApproximateQuery()(state)
    assert "Values from the database that match the question:" in llm.calls[0][0][1].content


def test_select_values_on_the_demo_database() -> None:
    db = Database.open(demo_database_path())
    idx, schema = value_index(db), db.schema()
    assert value_index(db) is idx  # kept in memory
    found = select_values("Which customers from Canada placed more than two orders?", idx, schema)
    assert [(m.table, m.column, m.value) for m in found] == [("customers", "country", "Canada")]
    # Lower case, a typo in a capitalised name, a product with a number.
    found = select_values("How many orders were delivered to customers in Montrael?", idx, schema)
    assert {(m.column, m.value) for m in found} == {("status", "delivered"), ("city", "Montreal")}
    found = select_values("What is the price of the Jigsaw 1000?", idx, schema)
    assert [(m.column, m.value) for m in found] == [("name", "Jigsaw 1000")]
    # Schema words and question words select nothing.
    assert select_values("List the name and price of every product in each category.", idx, schema) == []


def test_select_values_is_precise_on_concert_singer(singer_db: Path) -> None:
    db = Database.open(singer_db)
    idx, schema = value_index(db), db.schema()
    found = select_values("What are the names of the singers from the Netherlands?", idx, schema)
    assert [(m.table, m.column, m.value) for m in found] == [("singer", "Country", "Netherlands")]
    found = select_values('Show the stadium where the concert "Super bootcamp" took place.', idx, schema)
    assert [(m.column, m.value, m.span) for m in found] == [("concert_Name", "Super bootcamp", "Super bootcamp")]
    assert select_values("How many singers are there?", idx, schema) == []
    assert select_values("What is the average age of all singers?", idx, schema) == []
    with pytest.raises(ConfigurationError):
        select_values("x", idx, schema, threshold=0.0)


def test_candidate_spans_favour_quotes_capitals_and_numbers() -> None:
    spans = candidate_spans("Show songs of 'Love' by Tom Cruise released in 2014 on Route 66", {"song", "songs"})
    kinds = {s.text: s.kind for s in spans}
    assert kinds["Love"] == "quoted" and kinds["Tom Cruise"] == "capitalised" and kinds["Route 66"] == "capitalised"
    assert "2014" not in kinds and "songs" not in kinds and "Show" not in kinds


def test_select_values_stage_in_a_pipeline(singer_db: Path) -> None:
    pipe = Pipeline("values", (CheckQuestion(), SelectValues(), RenderSchema(), GenerateSQL(), ExtractSQL(),
                               ExecuteSQL()))
    llm = FakeLLM(["SELECT count(*) FROM singer WHERE Country = 'Netherlands'"])
    answer = pipe.run("How many singers come from the Netherlands?", Database.open(singer_db), llm)
    assert answer.ok and answer.result.rows[0][0] >= 1
    user = llm.calls[0][0][1].content
    assert user.endswith("Values from the database that match the question:\n- singer.Country: 'Netherlands'\n\n"
                         "Question: How many singers come from the Netherlands?")
    entry = next(e for e in answer.trace if e.stage == "select_values")
    assert entry.notes["values"][0]["value"] == "Netherlands"


def test_pipeline_without_values_stage_renders_as_before(singer_db: Path) -> None:
    llm = FakeLLM(["SELECT 1"])
    zero_shot().run("How many singers are from France?", Database.open(singer_db), llm)
    assert "Values from the database" not in llm.calls[0][0][1].content
    assert llm.calls[0][0][1].content.endswith("\n\nQuestion: How many singers are from France?")


def test_only_prompt_schema_values(singer_db: Path) -> None:
    db = Database.open(singer_db)
    s = db.schema()
    state = State("How many singers come from the Netherlands?", db, FakeLLM(), s, s.subset({"stadium": None}))
    SelectValues()(state)
    assert state.values == [] and state.prompt_blocks["values"] == ""
    SelectValues(only_prompt_schema=False)(state)
    assert state.prompt_blocks["values"] == f"{VALUES_HEADER}\n- singer.Country: 'Netherlands'\n\n"


# --- simplification ------------------------------------------------------------------------------------------


def _simplify(answer: str | Exception, question: str = "Give me the tally of vocalists hailing from France.",
              **kw: object) -> State:
    db = Database.open(demo_database_path())
    s = db.schema()
    state = State(question, db, FakeLLM([answer]), s, s)
    SimplifyQuestion(**kw)(state)  # type: ignore[arg-type]
    return state


def test_simplify_keeps_a_good_answer_and_uses_the_template() -> None:
    state = _simplify("Simplified question: How many singers are from France?")
    assert state.simplified_question == "How many singers are from France?"
    assert state.prompt_question is None
    system, user = (m.content for m in state.llm.calls[0][0])
    assert "Replace the words as far as possible to simplify the question" in system
    assert user == "Question: Give me the tally of vocalists hailing from France."


@pytest.mark.parametrize("answer, reason", [
    ("", "empty"),
    ("```sql\nSELECT count(*) FROM singer WHERE country = 'France'\n```", "sql"),
    ("SELECT count(*) FROM singer", "sql"),
    ("How many " + "really " * 60 + "singers?", "too_long"),
    ("Combien de chanteurs sont de la France ?", "language"),
    (LLMTimeoutError("slow"), "model error: llm_timeout"),
])
def test_simplify_rejects_garbage(answer: str | Exception, reason: str) -> None:
    state = _simplify(answer)
    assert state.simplified_question == state.question
    assert state.prompt_question is None


def test_simplify_garbage_reasons() -> None:
    assert check_simplification("Singers born after 1990?", "") == "empty"
    assert check_simplification("Singers born after 1990?", "Singers born recently?") == "lost_value"
    assert check_simplification("Songs named 'Love'?", "Which songs are called Hate?") == "lost_value"
    assert clean_simplification("**Simplified question:**\n\"How many singers?\"") == "How many singers?"


def test_simplified_question_used_for_generation() -> None:
    pipe = Pipeline("simple", (CheckQuestion(), SimplifyQuestion(use_for_generation=True), RenderSchema(),
                               GenerateSQL(), ExtractSQL(), ExecuteSQL()))
    llm = FakeLLM(["How many customers are from Canada?", "SELECT count(*) FROM customers WHERE country = 'Canada'"])
    q = "Give me the tally of clients hailing from Canada."
    answer = pipe.run(q, Database.open(demo_database_path()), llm)
    assert answer.ok and answer.question == q
    user = llm.calls[1][0][1].content
    assert user.endswith(f"Question: How many customers are from Canada?\n(Original wording: {q})")
