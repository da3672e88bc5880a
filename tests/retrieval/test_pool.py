import json
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.errors import ConfigurationError
from sqlweave.llm import FakeLLM
from sqlweave.presets import build_pipeline
from sqlweave.retrieval.pool import ExamplePool
from sqlweave.retrieval.question_skeleton import question_skeleton

TRAIN = [
    {"db_id": "pets", "question": "How many pets are older than 3?", "query": "SELECT count(*) FROM pets WHERE age > 3"},
    {"db_id": "pets", "question": "List the names of all dogs.", "query": "SELECT name FROM pets WHERE kind = 'dog'"},
    {"db_id": "shop", "question": "What is the average price of products?", "query": "SELECT avg(price) FROM products"},
    {"db_id": "shop", "question": "Which customer placed the most orders?",
     "query": "SELECT T1.name FROM customer AS T1 JOIN orders AS T2 ON T1.id = T2.cid GROUP BY T1.id ORDER BY count(*) DESC LIMIT 1"},
    {"db_id": "concert_singer", "question": "How many singers are there?", "query": "SELECT count(*) FROM singer"},
]
TABLES = [
    {"db_id": "pets", "table_names_original": ["pets"], "column_names_original": [[-1, "*"], [0, "name"], [0, "age"], [0, "kind"]]},
    {"db_id": "shop", "table_names_original": ["products", "customer", "orders"],
     "column_names_original": [[-1, "*"], [0, "price"], [1, "id"], [1, "name"], [2, "cid"]]},
]


@pytest.fixture
def train(tmp_path: Path) -> Path:
    (tmp_path / "train.json").write_text(json.dumps(TRAIN + [{"broken": True}]))
    (tmp_path / "tables.json").write_text(json.dumps(TABLES))
    return tmp_path / "train.json"


@pytest.mark.parametrize(
    "question,names,values,expected",
    [
        ("How many pets are older than 3?", ["pets", "age"], [], "How many _ are older than _?"),
        ("List the names of all dogs.", ["pets", "name", "kind"], ["dog"], "List the _ of all _."),
        ("Show the song_name of 'Love'", ["song_name"], [], "Show the _ of _"),
        ("What is the average price?", [], [], "What is the average price?"),
    ],
)
def test_question_skeletons(question, names, values, expected) -> None:
    assert question_skeleton(question, names, values) == expected


def test_pool_derives_skeletons_and_caches_them(train: Path) -> None:
    pool = ExamplePool.from_spider(train)
    assert len(pool) == 5  # the malformed entry is skipped
    ex = pool.examples[0]
    assert ex.question_skeleton == "How many _ are older than _?"
    assert ex.sql_skeleton == "SELECT COUNT(*) FROM _ WHERE _ > _"
    cache = Path(__import__("os").environ["SQLWEAVE_CACHE_DIR"]) / "pool" / "derived.jsonl"
    assert len(cache.read_text().splitlines()) == 5
    # A second load reuses every derived line; a new pair adds exactly one.
    data = json.loads(train.read_text()) + [{"db_id": "pets", "question": "Oldest pet?", "query": "SELECT max(age) FROM pets"}]
    train.write_text(json.dumps(data))
    assert len(ExamplePool.from_spider(train)) == 6
    assert len(cache.read_text().splitlines()) == 6


def test_search_fields(train: Path) -> None:
    pool = ExamplePool.from_spider(train)
    assert pool.search("question", "mean price of items", k=1)[0].db_id == "shop"
    assert pool.search("sql_skeleton", "SELECT COUNT(*) FROM _ WHERE _ > _", k=1)[0].question.startswith("How many pets")
    assert pool.search("question_skeleton", "How many _ are older than _?", k=1)[0].db_id == "pets"
    excluded = pool.search("question", "How many singers are there?", k=5, exclude=lambda e: e.db_id == "concert_singer")
    assert all(e.db_id != "concert_singer" for e in excluded)
    with pytest.raises(ConfigurationError):
        pool.search("nope", "x")


def test_user_examples_are_persisted(train: Path) -> None:
    pool = ExamplePool.from_spider(train)
    pool.add("Count the robots", "SELECT count(*) FROM robots", db_id="lab", schema_names=["robots"], persist=True)
    assert pool.search("question", "count robots", k=1)[0].sql == "SELECT count(*) FROM robots"
    assert any(e.source == "user" for e in ExamplePool.from_spider(train).examples)


def test_rag_pipeline_puts_examples_in_the_prompt(train: Path, singer_db: Path) -> None:
    llm = FakeLLM(["SELECT count(*) FROM singer"])
    pipe = build_pipeline("rag", examples=str(train), k=2)
    answer = pipe.run("How many singers are older than 30?", Database.open(singer_db), llm)
    assert answer.ok
    prompt = llm.calls[0][0][-1].content
    assert "Examples from other databases:" in prompt and "How many pets are older than 3?" in prompt
    assert "How many singers are there?" not in prompt  # same database as the question: excluded
    assert prompt.index("CREATE TABLE") < prompt.index("Examples") < prompt.index("Question: How many singers are older")
    notes = next(e for e in answer.trace if e.stage == "select_examples").notes
    assert notes["pool_size"] == 5 and len(notes["examples"]) == 2


def test_rag_without_a_pool_given_retrieves_from_the_bundled_one(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    from sqlweave.retrieval.pool import BUNDLED_POOL
    from sqlweave.stages import select_examples

    monkeypatch.delenv("SQLWEAVE_EXAMPLES", raising=False)
    assert next(s.pool for s in build_pipeline("rag").stages if s.name == "select_examples") == str(BUNDLED_POOL)
    monkeypatch.setattr(select_examples, "BUNDLED_POOL", tmp_path / "gone.json.gz")  # an installation without it
    with pytest.raises(ConfigurationError, match="no example pool") as info:
        build_pipeline("rag")
    assert "--examples" in info.value.hint


def test_unreadable_pool(tmp_path: Path) -> None:
    (tmp_path / "train.json").write_text("{oops")
    with pytest.raises(ConfigurationError, match="cannot read examples"):
        ExamplePool.from_spider(tmp_path / "train.json")


def test_masked_organisation_shows_no_names(train: Path, singer_db: Path) -> None:
    llm = FakeLLM(["SELECT count(*) FROM singer"])
    build_pipeline("rag-desem", examples=str(train)).run("How many singers are older than 30?",
                                                         Database.open(singer_db), llm)
    prompt = llm.calls[0][0][-1].content
    examples = prompt[prompt.index("Examples"):prompt.index("Question: How many singers")]
    assert "SQL pattern: SELECT COUNT(*) FROM _ WHERE _ > _" in examples
    assert "pets" not in examples and "FROM pets" not in examples
    with pytest.raises(ConfigurationError, match="organisation"):
        build_pipeline("rag", examples=str(train), organisation="nope")
