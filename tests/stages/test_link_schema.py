"""Schema linking by meaning (``link_schema``, ``+link``): which words link, to what, and what the prompt shows."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pytest

from sqlweave.database import Database
from sqlweave.schema import Column, Schema, Table
from sqlweave.errors import ConfigurationError, MissingDependencyError
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.presets import build_pipeline
from sqlweave.stages.link_schema import LinkSchema, candidate_words, link_terms, links_text
from sqlweave.stages.payloads import SchemaLink
from sqlweave.stages import CheckQuestion, ExecuteSQL, ExtractSQL, GenerateSQL, RenderSchema
from sqlweave.stages.generate import LINKS_HEADER

needs_embeddings = pytest.mark.extra("embed")

SCHEMA = Schema("x", (Table("singer", (Column("Singer_ID"), Column("Name"), Column("Country"))),
                      Table("stadium", (Column("Stadium_ID"), Column("Capacity"))),
                      Table("concert", (Column("concert_ID"), Column("Stadium_ID")))))


class TableEmbedder:
    """Vectors from a fixed table: each known text gets its axis (or a given mix), anything else a far axis."""

    def __init__(self, table: dict[str, dict[str, float]], dims: Sequence[str]) -> None:
        self.table, self.dims = table, list(dims)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        for text in texts:
            v = np.zeros(len(self.dims) + 1, dtype=np.float32)
            mix = self.table.get(text)
            if mix is None and text in self.dims:
                mix = {text: 1.0}
            if mix is None:
                v[-1] = 1.0
            else:
                for dim, weight in mix.items():
                    v[self.dims.index(dim)] = weight
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


NAMES = ["singer", "singer id", "name", "country", "stadium", "stadium id", "capacity", "concert", "concert id"]


def test_candidate_words_leave_out_schema_words_their_forms_values_and_question_words() -> None:
    words = candidate_words("How many vocalists from 'New Town' named Bob, with stadiums of larger capacities, "
                            "perform in Africa?", SCHEMA)
    # "stadiums"/"capacities" are forms of schema words, "named" of "name" ("sing" would be one of "singer");
    # quoted and capitalised words are values, which value selection links; "larger" is a question word.
    assert words == ["vocalists", "perform"]
    assert candidate_words("Vocalists: how many?", SCHEMA) == ["Vocalists"]  # a capital at the start is no name


def test_a_word_links_to_the_closest_name_above_the_threshold() -> None:
    emb = TableEmbedder({"vocalists": {"singer": 0.8, "concert": 0.2}, "perform": {"singer": 0.5, "stadium": 0.5}},
                        NAMES)
    links = link_terms("How many vocalists perform?", SCHEMA, emb, threshold=0.6, margin=0.05)
    assert [(link.word, link.table, link.column) for link in links] == [("vocalists", "singer", None)]
    assert links[0].score == pytest.approx(0.8 / np.hypot(0.8, 0.2), abs=1e-3)
    # "perform" is as close to singer as to stadium: no margin, no link, whatever the threshold.
    assert all(link.word != "perform" for link in link_terms("perform", SCHEMA, emb, threshold=0.1, margin=0.05))
    # Above the threshold only.
    assert link_terms("How many vocalists perform?", SCHEMA, emb, threshold=0.99) == []


def test_a_column_and_its_own_table_do_not_compete() -> None:
    emb = TableEmbedder({"seats": {"capacity": 0.9, "stadium": 0.8}}, NAMES)
    (link,) = link_terms("How many seats?", SCHEMA, emb, threshold=0.5, margin=0.05)
    assert (link.table, link.column) == ("stadium", "Capacity") and str(link) == '"seats" = column stadium.Capacity'


def test_a_name_that_holds_the_best_names_words_does_not_compete() -> None:
    schema = Schema("x", (*SCHEMA.tables, Table("singer_in_concert", (Column("Singer_ID"),))))
    emb = TableEmbedder({"vocalists": {"singer": 0.75, "singer in concert": 0.7},
                         "singer in concert": {"singer in concert": 1.0}}, [*NAMES, "singer in concert"])
    (link,) = link_terms("How many vocalists?", schema, emb, threshold=0.5, margin=0.1)
    assert (link.table, link.column) == ("singer", None)
    # Another table that is as close blocks the link: the word could mean either.
    emb.table["vocalists"] = {"singer": 0.75, "stadium": 0.7}
    assert link_terms("How many vocalists?", schema, emb, threshold=0.5, margin=0.1) == []


def test_links_are_capped_closest_first() -> None:
    emb = TableEmbedder({"vocalists": {"singer": 1.0}, "arenas": {"stadium": 0.9, "concert": 0.3},
                         "gigs": {"concert": 0.8, "singer": 0.4}}, NAMES)
    links = link_terms("Which vocalists played gigs in arenas?", SCHEMA, emb, threshold=0.5, max_links=2)
    assert [link.word for link in links] == ["vocalists", "arenas"]
    assert links_text(links) == '- "vocalists" = table singer\n- "arenas" = table stadium'
    assert link_terms("Which vocalists?", SCHEMA, emb, max_links=0) == []


def test_the_stage_puts_the_links_in_the_prompt_and_the_trace(singer_db: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    emb = TableEmbedder({"vocalists": {"singer": 1.0}}, NAMES)
    monkeypatch.setattr("sqlweave.retrieval.dense.get_embedder", lambda *a, **k: emb)
    pipe = Pipeline("linked", (CheckQuestion(), RenderSchema(), LinkSchema(), GenerateSQL(), ExtractSQL(),
                               ExecuteSQL()))
    llm = FakeLLM(["SELECT count(*) FROM singer"])
    answer = pipe.run("How many vocalists are there?", Database.open(singer_db), llm)
    user = llm.calls[0][0][1].content
    assert f'{LINKS_HEADER}\n- "vocalists" = table singer\n\nQuestion: How many vocalists are there?' in user
    entry = next(e for e in answer.trace if e.stage == "link_schema")
    assert entry.notes["links"] == [{"word": "vocalists", "table": "singer", "column": None, "score": 1.0}]
    # No link, no block: the prompt is the plain one.
    llm2 = FakeLLM(["SELECT count(*) FROM singer"])
    pipe.run("How many singers are there?", Database.open(singer_db), llm2)
    assert LINKS_HEADER not in llm2.calls[0][0][1].content


def test_without_embeddings_the_stage_links_nothing_and_says_why(singer_db: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(*_: object, **__: object) -> None:
        raise MissingDependencyError("sentence-transformers is not installed", hint="pip install 'sqlweave[embed]'")

    monkeypatch.setattr("sqlweave.retrieval.dense.get_embedder", missing)
    llm = FakeLLM(["SELECT count(*) FROM singer"])
    answer = build_pipeline("zero-shot+link").run("How many vocalists are there?", Database.open(singer_db), llm)
    assert answer.sql == "SELECT count(*) FROM singer" and answer.error is None
    entry = next(e for e in answer.trace if e.stage == "link_schema")
    assert entry.notes["links"] == [] and "sentence-transformers" in entry.notes["skipped"]
    assert LINKS_HEADER not in llm.calls[0][0][1].content


def test_a_question_in_another_language_is_not_linked(singer_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    emb = TableEmbedder({"chanteurs": {"singer": 1.0}}, NAMES)
    monkeypatch.setattr("sqlweave.retrieval.dense.get_embedder", lambda *a, **k: emb)
    llm = FakeLLM(["SELECT count(*) FROM singer"])
    answer = build_pipeline("zero-shot+link").run("Combien de chanteurs y a-t-il dans la base ?",
                                                  Database.open(singer_db), llm)
    entry = next(e for e in answer.trace if e.stage == "link_schema")
    assert entry.notes["links"] == [] and entry.notes["skipped"] == "the question is in French"
    assert LINKS_HEADER not in llm.calls[0][0][1].content and answer.sql == "SELECT count(*) FROM singer"


def test_the_addon_goes_after_the_schema_is_rendered() -> None:
    names = [s.name for s in build_pipeline("default+link").stages]
    assert names.index("link_schema") == names.index("render_schema") + 1 < names.index("generate")
    with pytest.raises(ConfigurationError, match="render_schema"):
        build_pipeline("agent+link")
    with pytest.raises(ConfigurationError):
        LinkSchema(max_links=-1)


def test_link_prints_as_the_prompt_shows_it() -> None:
    assert str(SchemaLink("dead", "death", "killed", 0.76)) == '"dead" = column death.killed'
    assert SchemaLink("dead", "death", "killed", 0.76123).as_dict()["score"] == 0.761


@needs_embeddings
def test_real_embeddings_link_spider_syn_words(singer_db: Path) -> None:
    schema = Database.open(singer_db).schema()
    links = link_terms("How many vocalists do we have?", schema)
    assert [(link.word, link.table, link.column) for link in links] == [("vocalists", "singer", None)]
    # Spider's own wording names the schema: nothing to link.
    assert link_terms("How many singers do we have?", schema) == []
