"""The example selectors ``ast_rerank`` (ASTReS) and ``dense_skeleton`` (Guo et al.) on a small pool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.errors import ConfigurationError
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import State
from sqlweave.retrieval.pool import load_pool
from sqlweave.stages.select_examples import METHODS, SelectExamples

TRAIN = [
    {"db_id": "pets", "question": "How many pets are older than 3?", "query": "SELECT count(*) FROM pets WHERE age > 3"},
    {"db_id": "pets", "question": "What is the name of the oldest pet?",
     "query": "SELECT name FROM pets ORDER BY age DESC LIMIT 1"},
    {"db_id": "shop", "question": "What is the average price of products?", "query": "SELECT avg(price) FROM products"},
    {"db_id": "shop", "question": "Which customer placed the most orders?",
     "query": "SELECT T1.name FROM customer AS T1 JOIN orders AS T2 ON T1.id = T2.cid GROUP BY T1.id "
              "ORDER BY count(*) DESC LIMIT 1"},
    {"db_id": "school", "question": "List the names of students older than 20.",
     "query": "SELECT name FROM student WHERE age > 20"},
    {"db_id": "concert_singer", "question": "How many singers are older than 30?",
     "query": "SELECT count(*) FROM singer WHERE age > 30"},
]
TABLES = [
    {"db_id": "pets", "table_names_original": ["pets"], "column_names_original": [[-1, "*"], [0, "name"], [0, "age"]]},
    {"db_id": "shop", "table_names_original": ["products", "customer", "orders"],
     "column_names_original": [[-1, "*"], [0, "price"], [1, "id"], [1, "name"], [2, "cid"]]},
    {"db_id": "school", "table_names_original": ["student"],
     "column_names_original": [[-1, "*"], [0, "name"], [0, "age"]]},
]
QUESTION = "How many singers are older than 30?"


@pytest.fixture
def train(tmp_path: Path) -> Path:
    (tmp_path / "train.json").write_text(json.dumps(TRAIN))
    (tmp_path / "tables.json").write_text(json.dumps(TABLES))
    return tmp_path / "train.json"


def make_state(db_path: Path, question: str = QUESTION, **extras: object) -> State:
    db = Database.open(db_path)
    schema = db.schema()
    state = State(question=question, db=db, llm=FakeLLM([]), schema=schema, prompt_schema=schema)
    for slot, value in extras.items():
        setattr(state, slot, value)
    return state


def questions(state: State) -> list[str]:
    return [e.question for e in state.examples]


def test_methods_and_options_are_checked() -> None:
    assert {"ast_rerank", "dense_skeleton"} <= set(METHODS)
    for bad in ({"k": 0}, {"k_simplified": -1}, {"candidates": 0}, {"k": "4"}):
        with pytest.raises(ConfigurationError):
            SelectExamples(pool="x", method="ast_rerank", **bad)  # type: ignore[arg-type]


def test_ast_rerank_orders_bm25_candidates_by_the_approximation(train: Path, singer_db: Path) -> None:
    bm25 = make_state(singer_db)
    SelectExamples(pool=str(train), method="bm25", k=2)(bm25)
    assert questions(bm25)[0] == "How many pets are older than 3?"

    state = make_state(singer_db, approx_sql="SELECT Name FROM singer ORDER BY Age DESC LIMIT 1")
    SelectExamples(pool=str(train), method="ast_rerank", k=2)(state)
    assert questions(state)[0] == "What is the name of the oldest pet?"  # same shape as the approximation
    assert "How many singers are older than 30?" not in questions(state)  # the question's own database
    notes = state._notes
    assert notes["ast_scores"][0] == 1.0 and notes["ast_scores"] == sorted(notes["ast_scores"], reverse=True)
    assert notes["candidates"] == 5 and "ORDER BY" in state.prompt_blocks["examples"]


def test_ast_rerank_uses_the_current_sql_when_there_is_no_approximation(train: Path, singer_db: Path) -> None:
    state = make_state(singer_db)
    state.sql = "SELECT name FROM singer WHERE age > 40"
    SelectExamples(pool=str(train), method="ast_rerank", k=1)(state)
    assert questions(state) == ["List the names of students older than 20."]


def test_ast_rerank_without_a_usable_approximation_keeps_bm25_order(train: Path, singer_db: Path) -> None:
    expected = make_state(singer_db)
    SelectExamples(pool=str(train), method="bm25", k=3)(expected)
    for extras in ({}, {"approx_sql": None}, {"approx_sql": "SELEC oops FROM ("}):
        state = make_state(singer_db, **extras)
        SelectExamples(pool=str(train), method="ast_rerank", k=3)(state)
        assert questions(state) == questions(expected)
        assert state._notes["rerank"].startswith("skipped") and "BM25 order kept" in state._notes["rerank"]


def test_the_pool_derives_and_caches_normalised_trees(train: Path) -> None:
    pool = load_pool(train)
    ex = next(e for e in pool.examples if e.db_id == "shop" and "JOIN" in e.sql)
    assert ex.normalized_sql == "SELECT _ FROM _ JOIN _ ON _ = _ GROUP BY _ ORDER BY COUNT(*) DESC LIMIT ?"
    assert pool.normalized_tree(ex) is pool.normalized_tree(ex)


needs_embeddings = pytest.mark.extra("embed")


@needs_embeddings
def test_dense_skeleton_takes_k1_from_the_question_and_k2_from_the_simplified_one(train: Path, singer_db: Path) -> None:
    state = make_state(singer_db)
    SelectExamples(pool=str(train), method="dense_skeleton", k=1, k_simplified=1)(state)
    assert questions(state) == ["How many pets are older than 3?"]  # same skeleton: "How many _ are older than _?"
    assert state._notes["k2"] == 0 and state._notes["simplified_skeleton"] is None

    state = make_state(singer_db, simplified_question="List the names of singers older than 30.")
    SelectExamples(pool=str(train), method="dense_skeleton", k=1, k_simplified=1)(state)
    assert questions(state) == ["How many pets are older than 3?", "List the names of students older than 20."]
    assert state._notes["simplified_skeleton"] == "List the _ of _ older than _."


@needs_embeddings
def test_dense_skeleton_merges_without_duplicates_and_builds_its_index_once(train: Path, singer_db: Path) -> None:
    stage = SelectExamples(pool=str(train), method="dense_skeleton", k=2, k_simplified=2)
    state = make_state(singer_db, simplified_question=QUESTION)  # the same skeleton twice: k2 must add new pairs
    stage(state)
    chosen = questions(state)
    assert len(chosen) == 4 == len(set(chosen)) and QUESTION not in chosen
    pool = load_pool(train)
    index = pool.dense_index("question_skeleton")
    stage(make_state(singer_db))
    assert pool.dense_index("question_skeleton") is index and len(pool._dense) == 1
    pool.add("Count the robots", "SELECT count(*) FROM robots", db_id="lab", schema_names=["robots"])
    assert pool.dense_index("question_skeleton").size == len(TRAIN) + 1  # rebuilt after an addition


@needs_embeddings
def test_dense_index_on_an_unknown_field_is_a_clear_error(train: Path) -> None:
    with pytest.raises(ConfigurationError, match="no dense index"):
        load_pool(train).dense_index("sql")


def test_sql_skeleton_retrieval_uses_the_approximated_query(train: Path, singer_db: Path) -> None:
    # Question words point at nothing in particular; the approximated query's shape (ORDER BY .. LIMIT 1)
    # is what picks the pet example with the same SQL skeleton.
    state = make_state(singer_db, "Tell me about the singers.",
                       approx_sql="SELECT name FROM singer ORDER BY age DESC LIMIT 1")
    SelectExamples(pool=str(train), method="sql_skeleton", k=1)(state)
    assert questions(state) == ["What is the name of the oldest pet?"]
    assert "ORDER BY" in state._notes["query"]


def test_sql_skeleton_retrieval_of_sql_that_does_not_parse_searches_by_the_question(train: Path,
                                                                                      singer_db: Path) -> None:
    # "SELECT FROM WHERE" has no skeleton; the question's words (average price) pick the shop example, where a
    # search of the SQL skeletons with those words would match none of them.
    state = make_state(singer_db, "What is the average price?", approx_sql="SELECT FROM WHERE (")
    SelectExamples(pool=str(train), method="sql_skeleton", k=1)(state)
    assert questions(state) == ["What is the average price of products?"]
    assert state._notes["query"] == "What is the average price?"


def test_a_vote_asks_again_with_examples_like_its_answer(train: Path, singer_db: Path) -> None:
    """The examples view: pairs from other databases whose SQL skeleton is the answer's, in the few-shot prompt,
    greedy then sampled; its answers join the vote."""
    from sqlweave.pipeline import Pipeline
    from sqlweave.presets import zero_shot
    from sqlweave.stages.vote import SelfConsistency

    answers = ["SELECT Name FROM singer ORDER BY Age ASC LIMIT 1",  # greedy: the youngest
               "SELECT Name FROM singer ORDER BY Age ASC LIMIT 1", "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1",
               "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1", "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1",
               "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1"]
    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=2, examples=1, examples_pool=str(train),
                                                               view_samples=2),))
    llm = FakeLLM(answers)
    answer = pipe.run("Who is the oldest singer?", Database.open(singer_db), llm)
    assert answer.result.rows == (("Joe Sharp",),) and answer.trace[-1].notes["groups"] == [4, 2]
    few_shot = llm.calls[2][0][-1].content
    # the pet pair has the answer's skeleton; the pool's concert_singer pair (the question's database) is never shown
    assert "Examples from other databases:" in few_shot and "What is the name of the oldest pet?" in few_shot
    assert "How many singers are older than 30?" not in few_shot and "CREATE TABLE" in few_shot
    assert answer.trace[-1].notes["examples"] == ["What is the name of the oldest pet?"]
    assert [(c[1].temperature, c[1].seed) for c in llm.calls[2:]] == [(0.0, None), (0.8, 1), (0.8, 2)]


def test_the_examples_addon_needs_a_vote_and_names_its_pool(train: Path) -> None:
    from sqlweave.presets import EXAMPLES_K, build_pipeline
    from sqlweave.stages.vote import SelfConsistency

    votes = [s for s in build_pipeline("best+examples", examples=str(train)).stages if isinstance(s, SelfConsistency)]
    assert votes and all(v.examples == EXAMPLES_K and v.examples_pool == str(train) for v in votes)
    with pytest.raises(ConfigurationError, match="no vote stage"):
        build_pipeline("zero-shot+examples", examples=str(train))
    with pytest.raises(ConfigurationError, match="examples"):
        SelfConsistency(examples=-1)


def test_an_unreadable_pool_fails_the_vote_with_its_reason(tmp_path: Path, singer_db: Path) -> None:
    """A pool that cannot be read is the user's to fix: the answer carries the typed error instead of a vote held
    without its examples view."""
    from sqlweave.pipeline import Pipeline
    from sqlweave.presets import zero_shot
    from sqlweave.stages.vote import SelfConsistency

    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=2, examples=1,
                                                               examples_pool=str(tmp_path / "missing.json")),))
    llm = FakeLLM(["SELECT Name FROM singer ORDER BY Age DESC LIMIT 1"] * 3)
    answer = pipe.run("Who is the oldest singer?", Database.open(singer_db), llm)
    assert not answer.ok and isinstance(answer.error, ConfigurationError)
    assert "cannot read examples from" in answer.error.message and "missing.json" in answer.error.message
    assert len(llm.calls) == 1  # no sample was drawn for a vote that could not be held


def test_a_few_shot_view_can_keep_generation_s_instructions_and_schema_as_its_prefix(
        train: Path, singer_db: Path) -> None:
    """``examples_prompt="zero_shot_examples"``: the few-shot view's conversation begins as generation's does (the
    same system message, the schema), so llama.cpp resumes from the state generation evaluated; the pairs follow
    the schema and the question comes last."""
    from sqlweave.pipeline import Pipeline
    from sqlweave.presets import zero_shot
    from sqlweave.stages.vote import SelfConsistency

    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=1, examples=1, examples_pool=str(train),
                                                               examples_prompt="zero_shot_examples"),))
    llm = FakeLLM(["SELECT count(*) FROM singer WHERE Age > 25"] * 3)
    pipe.run("How many singers are older than 25?", Database.open(singer_db), llm)
    generation, view = llm.calls[0][0], llm.calls[2][0]
    assert view[0].content == generation[0].content  # the same instructions
    schema_part = generation[1].content.split("Question:")[0].rstrip()
    assert view[1].content.startswith(schema_part)  # then the same schema
    pair = view[1].content.index("How many pets are older than 3?")
    assert len(schema_part) < pair < view[1].content.index("Question: How many singers are older than 25?")
    for name in ("nope", "../prompts/few_shot", "/etc/passwd", ""):  # a template's name, never a path
        with pytest.raises(ConfigurationError, match="no prompt template"):
            SelfConsistency(examples=1, examples_prompt=name)
    with pytest.raises(ConfigurationError, match="shows no examples"):
        SelfConsistency(examples=1, examples_prompt="zero_shot")
