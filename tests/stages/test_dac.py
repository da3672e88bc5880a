from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.presets import zero_shot
from sqlweave.sql.skeleton import sql_skeleton
from sqlweave.stages.dac import DecomposedCorrection, missing_entities, parse_alignments


@pytest.fixture
def schema(singer_db: Path):
    return Database.open(singer_db).schema()


@pytest.mark.parametrize(
    "text,expected",
    [
        ('[{"token": "singers", "schema": "singer", "type": "tbl"}]', ["singer:tbl"]),
        ("[{'token': 'singers', 'schema': 'singer', 'type': 'tbl'}, {'token': 'age', 'schema': 'singer.Age', 'type': 'col'}]",
         ["singer:tbl", "singer.Age:col"]),
        # Prose around the list, a truncated list (cut by max tokens), a dict per line.
        ('Sure!\n[{"token": "France", "schema": "singer.country", "type": "val"}, {"token": "st',
         ["singer.Country:val"]),
        ('{"token": "name", "schema": "name", "type": "col"}\n{"token": "stadium", "schema": "stadium"}',
         ["singer.Name:col", "stadium:tbl"]),
        # Null schema, unknown entities, wrong types, non-dicts: dropped.
        ('[{"token": "the", "schema": null, "type": null}, {"token": "x", "schema": "planets", "type": "tbl"}, 3, "s"]', []),
        ('[{"token": "singer", "schema": "singer", "type": "weird"}]', ["singer:tbl"]),
        # The constrained (JSON schema) shape, whole and cut short.
        ('{"alignments": [{"token": "singers", "schema": "singer", "type": "tbl"}]}', ["singer:tbl"]),
        ('{"alignments": [{"token": "age", "schema": "singer.age", "type": "col"}, {"token": "Fr', ["singer.Age:col"]),
        ("no list at all", []),
        ("", []),
        ("[[[[", []),
    ],
)
def test_alignment_parsing_is_robust(schema, text: str, expected: list[str]) -> None:
    got = [f"{a.schema}:{a.type}" for a in parse_alignments(text, schema)]
    assert got == expected


def test_missing_entities(schema) -> None:
    links = parse_alignments('[{"token": "age", "schema": "singer.age", "type": "col"}, '
                             '{"token": "stadium", "schema": "stadium", "type": "tbl"}, '
                             '{"token": "France", "schema": "singer.country", "type": "val"}]', schema)
    assert missing_entities(links, "SELECT name FROM singer", "sqlite") == ["singer.Age", "stadium"]
    assert missing_entities(links, "SELECT age FROM singer JOIN stadium ON 1 = 1", "sqlite") == []


def pipe(**kw) -> Pipeline:
    return Pipeline("dac", zero_shot().stages + (DecomposedCorrection(**kw),))


def test_entity_feedback_then_skeleton_feedback(singer_db: Path) -> None:
    answers = [
        "SELECT name FROM singer",                                                    # initial
        '[{"token": "oldest", "schema": "singer.age", "type": "col"}]',               # linking: age not used
        "SELECT name FROM singer ORDER BY age",                                       # entity fix
        "SELECT name FROM singer ORDER BY age DESC LIMIT 1",                          # skeleton parse
        "SELECT name FROM singer ORDER BY age DESC LIMIT 1",                          # skeleton fix
    ]
    llm = FakeLLM(answers)
    answer = pipe().run("Who is the oldest singer?", Database.open(singer_db), llm)
    assert answer.sql == "SELECT name FROM singer ORDER BY age DESC LIMIT 1"
    assert answer.result.rows == (("Joe Sharp",),)
    entity_prompt = llm.calls[2][0][-1].content
    assert "<<<singer.Age>>> are mentioned by the question" in entity_prompt
    assert 'Fix the sql "SELECT name FROM singer"' in entity_prompt
    skeleton_prompt = llm.calls[4][0][-1].content
    assert 'could be like "SELECT _ FROM _ ORDER BY _ DESC LIMIT _"' in skeleton_prompt
    # The skeleton step sees the question alone, no schema.
    assert "CREATE TABLE" not in llm.calls[3][0][-1].content
    notes = answer.trace[-1].notes
    assert notes["missing_entities"] == ["singer.Age"] and notes["skeleton_mismatch"] is True


def test_no_feedback_no_fix_calls(singer_db: Path) -> None:
    answers = ["SELECT count(*) FROM singer", '[{"token": "singers", "schema": "singer", "type": "tbl"}]',
               "SELECT count(*) FROM singers"]
    llm = FakeLLM(answers)
    answer = pipe().run("How many singers?", Database.open(singer_db), llm)
    assert len(llm.calls) == 3 and answer.sql == "SELECT count(*) FROM singer"
    assert answer.trace[-1].notes["skeleton_mismatch"] is False


def test_a_worse_fix_is_not_adopted(singer_db: Path) -> None:
    answers = ["SELECT count(*) FROM singer", '[{"token": "stadiums", "schema": "stadium", "type": "tbl"}]',
               "SELECT count(*) FROM stadiumz"]
    llm = FakeLLM(answers)
    answer = pipe(skeleton=False).run("How many singers?", Database.open(singer_db), llm)
    assert answer.ok and answer.sql == "SELECT count(*) FROM singer"
    assert answer.trace[-1].notes["entity_fix"]["outcome"] == "schema_linking"


def test_linking_is_constrained_to_the_schema_when_the_backend_can(singer_db: Path) -> None:
    from sqlweave.stages.dac import LINK_SCHEMA

    answers = ["SELECT count(*) FROM singer", '{"alignments": [{"token": "singers", "schema": "singer", "type": "tbl"}]}']
    llm = FakeLLM(answers)
    answer = pipe(skeleton=False).run("How many singers?", Database.open(singer_db), llm)
    assert llm.calls[1][1].json_schema == LINK_SCHEMA and llm.calls[0][1].json_schema is None
    assert answer.trace[-1].notes["alignments"] == ["singers->singer:tbl"]
    plain = FakeLLM(answers)
    plain.supports_json_schema = False  # e.g. a chat endpoint without response_format
    pipe(skeleton=False).run("How many singers?", Database.open(singer_db), plain)
    assert plain.calls[1][1].json_schema is None


def test_malformed_linking_output_is_not_fatal(singer_db: Path) -> None:
    llm = FakeLLM(["SELECT count(*) FROM singer", "I think the answer is singers!!! {{{"])
    answer = pipe(skeleton=False).run("How many singers?", Database.open(singer_db), llm)
    assert answer.ok and answer.trace[-1].notes["alignments"] == []


def test_skeletons() -> None:
    assert sql_skeleton("SELECT a FROM t WHERE b = 'x' AND c IN (SELECT d FROM u)") == \
        "SELECT _ FROM _ WHERE _ = _ AND _ IN (SELECT _ FROM _)"
    assert sql_skeleton("SELECT count(DISTINCT a) AS n FROM t ORDER BY n DESC LIMIT 3") == \
        "SELECT COUNT(DISTINCT _) FROM _ ORDER BY _ DESC LIMIT _"
