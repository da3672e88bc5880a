"""Pool-side question simplification (paper 000's repository of original + simplified skeletons)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sqlweave.errors import LLMTimeoutError
from sqlweave.llm import FakeLLM
from sqlweave.retrieval.pool import ExamplePool
from sqlweave.retrieval.simplified import load_simplified, simplified_file
from sqlweave.stages.simplify import simplify_pool

PAIRS = [
    ("Give me the tally of singers.", "SELECT count(*) FROM singer", ["singer"]),
    ("Which pets exceed 3 years of age?", "SELECT name FROM pets WHERE age > 3", ["pets", "name", "age"]),
    ("Enumerate every stadium's appellation.", "SELECT name FROM stadium", ["stadium", "name"]),
]


def make_pool() -> ExamplePool:
    pool = ExamplePool([])
    for q, sql, names in PAIRS:
        pool.add(q, sql, schema_names=names)
    return pool


def simplify_by_question(messages, options) -> str:
    text = messages[-1].content
    if "tally" in text:
        return "How many singers are there?"
    if "pets" in text:
        return "Which pets are older than three?"  # drops the number 3: must be rejected
    return "Simplified question: List the names of all stadiums."


def test_simplify_pool_records_each_answer_and_resumes(tmp_path: Path) -> None:
    store = tmp_path / "simplified.jsonl"
    pool, llm = make_pool(), FakeLLM(responder=simplify_by_question)
    first = simplify_pool(pool, llm, limit=2, path=store)
    assert (first.asked, first.accepted, first.rejected) == (2, 1, 1) and len(llm.calls) == 2
    rows = [json.loads(line) for line in store.read_text().splitlines()]
    assert rows[1]["rejected"] == "lost_value" and rows[0]["model"] == llm.model_id
    # an interruption mid-write leaves a cut line: it is ignored, and its question asked again
    with store.open("a") as fh:
        fh.write('{"question": "Enumerate every stadium')
    second = simplify_pool(pool, llm, path=store)
    assert (second.asked, second.already_done) == (1, 2) and len(llm.calls) == 3  # rejected ones are not re-asked
    assert load_simplified(store) == {"Give me the tally of singers.": "How many singers are there?",
                                      "Enumerate every stadium's appellation.": "List the names of all stadiums."}
    assert simplify_pool(pool, llm, path=store).asked == 0 and len(llm.calls) == 3
    assert pool.simplified == load_simplified(store)


def test_model_errors_are_recorded_as_rejections_not_raised(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    report = simplify_pool(make_pool(), FakeLLM([LLMTimeoutError("slow"), "How many singers?", "x"]), limit=1,
                           path=store)
    assert report.rejected == 1 and "model error" in json.loads(store.read_text())["rejected"]


def test_default_store_is_under_the_cache_dir() -> None:
    assert simplified_file().parts[-2:] == ("pool", "simplified.jsonl")


@pytest.mark.extra("embed")
def test_simplified_wordings_join_the_dense_repository(tmp_path: Path) -> None:
    pool = make_pool()
    assert pool.dense_index("question_skeleton").size == 3
    attached = pool.attach_simplified({"Give me the tally of singers.": "How many singers are there?",
                                       "Enumerate every stadium's appellation.": "List the names of all stadiums."})
    assert attached == 2 and pool.dense_index("question_skeleton").size == 5  # rebuilt: 3 originals + 2 simplified
    # "How many ... are there?" matches only the simplified wording of the singer pair (its original says "tally")
    found = pool.dense_search("question_skeleton", "How many _ are there?", k=3)
    assert found[0].sql == "SELECT count(*) FROM singer"
    assert len(found) == 3 == len({e.sql for e in found})  # an example and its simplified wording count once


def test_cli_simplify_with_a_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from sqlweave.cli import app
    from sqlweave.llm import registry

    train = tmp_path / "train.json"
    train.write_text(json.dumps([{"db_id": "concert", "question": q, "query": sql} for q, sql, _ in PAIRS]))
    monkeypatch.setitem(registry.BACKENDS, "fake", lambda arg, **kw: FakeLLM(responder=simplify_by_question))
    result = CliRunner().invoke(app, ["examples", "simplify", "--examples", str(train), "--model", "fake", "--limit", "1",
                                      "--quiet"])
    assert result.exit_code == 0, result.output
    assert "asked 1: 1 accepted, 0 rejected" in result.output and "1 of 3 pool questions" in result.output
    assert len(simplified_file().read_text().splitlines()) == 1
