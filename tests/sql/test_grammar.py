"""The schema's query grammar (GBNF): what it names, how it quotes, and that llama.cpp accepts it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.schema import Column, Schema, Table
from sqlweave.errors import ConfigurationError
from sqlweave.llm import FakeLLM
from sqlweave.llm.base import LLM, Completion, GenerationOptions, Message, Usage
from sqlweave.presets import build_pipeline
from sqlweave.sql.grammar import schema_grammar
from tests.extras import need_extra

HOSTILE = Schema("h", (Table('we"ird table', (Column("a b"), Column("ok_col"), Column('x"); DROP TABLE t; --'))),
                       Table("plain", (Column("id", primary_key=True),))))


def rule(grammar: str, name: str) -> str:
    return next(line for line in grammar.splitlines() if line.startswith(f"{name} ::= "))


def test_only_the_schema_names_are_tables_and_columns(singer_db: Path) -> None:
    g = schema_grammar(Database.open(singer_db).schema())
    assert rule(g, "table") == 'table ::= "concert" | "\\"concert\\"" | "singer" | "\\"singer\\"" | ' \
                               '"singer_in_concert" | "\\"singer_in_concert\\"" | "stadium" | "\\"stadium\\""'
    cols = re.findall(r'"([A-Za-z_]+)"', rule(g, "col"))
    assert {"Singer_ID", "Name", "concert_Name", "Stadium_ID"} <= set(cols) and "singers" not in cols
    assert rule(g, "root") == 'root ::= ows query ows ";"?'  # nothing before or after the query


def test_names_that_need_quoting_are_only_offered_quoted_and_escaped() -> None:
    g = schema_grammar(HOSTILE)
    table = rule(g, "table")
    assert table == 'table ::= "plain" | "\\"plain\\"" | "\\"we\\"\\"ird table\\""'  # SQL-quoted, then GBNF-escaped
    col = rule(g, "col")
    assert '"\\"a b\\""' in col and '"a b"' not in col
    assert "DROP TABLE" in col and col.count("::=") == 1  # the hostile name stays inside one literal


def test_dialects_offer_their_own_functions() -> None:
    s = Schema("x", (Table("t", (Column("d"),)),))
    assert '"strftime"' in rule(schema_grammar(s, "sqlite"), "function")
    assert '"date_trunc"' in rule(schema_grammar(s, "postgres"), "function")
    assert "kw-ilike" in rule(schema_grammar(s, "postgres"), "pred")
    assert "kw-ilike" not in rule(schema_grammar(s, "sqlite"), "pred")


@pytest.mark.parametrize("schema", ["singer", "hostile"])
def test_llama_cpp_parses_the_grammar(singer_db: Path, schema: str) -> None:
    need_extra("local")
    from llama_cpp import LlamaGrammar

    s = Database.open(singer_db).schema() if schema == "singer" else HOSTILE
    assert LlamaGrammar.from_string(schema_grammar(s), verbose=False) is not None


def test_the_grammar_reaches_the_model_call(singer_db: Path) -> None:
    llm = FakeLLM(["SELECT count(*) FROM singer"])
    answer = build_pipeline("default+grammar").run("How many singers?", Database.open(singer_db), llm)
    options = llm.calls[0][1]
    assert answer.ok and options.grammar is not None and "singer_in_concert" in rule(options.grammar, "table")
    assert next(e for e in answer.trace if e.stage == "generate").notes["grammar"] == "queries over the 4 tables shown"
    assert FakeLLM(["x"]).complete([Message("user", "q")]).text == "x"  # no grammar: unchanged


class NoGrammar(LLM):
    model_id = "remote-model"

    def _complete(self, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        return Completion(("SELECT count(*) FROM singer",), Usage(), 0.0, self.model_id)


def test_a_backend_without_grammars_refuses_one_and_the_stage_says_it_went_without(singer_db: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot hold generation to a grammar"):
        NoGrammar().complete([Message("user", "q")], grammar='root ::= "x"')
    answer = build_pipeline("default+grammar").run("How many singers?", Database.open(singer_db), NoGrammar())
    assert answer.ok and "cannot follow a grammar" in next(e for e in answer.trace if e.stage == "generate").notes["grammar"]


def test_grammar_needs_a_generate_stage() -> None:
    with pytest.raises(ConfigurationError, match="no generate stage"):
        build_pipeline("agent+grammar")
