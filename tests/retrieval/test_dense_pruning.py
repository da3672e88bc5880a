"""RB-SQL's dense Table- and Column-Retrievers (MaxSim late interaction and cosine), and the new pruning methods."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sqlweave.database import Database
from sqlweave.errors import ConfigurationError
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.retrieval.schema_retriever import METHODS, dense_keep, dense_scores, prune, prune_stats, table_text
from sqlweave.stages import CheckQuestion, ExecuteSQL, ExtractSQL, GenerateSQL, RenderSchema
from sqlweave.stages.prune_schema import PruneSchema

needs_embeddings = pytest.mark.extra("embed")


def test_unknown_method_and_scoring_are_typed_errors(singer_db: Path) -> None:
    s = Database.open(singer_db).schema()
    with pytest.raises(ConfigurationError):
        prune(s, "How many singers?", method="colbert")
    assert {"dense", "dense-table", "hybrid-dense"} <= set(METHODS)


def test_existing_methods_unchanged(singer_db: Path) -> None:
    # bm25 / hybrid must keep giving today's sub-schemas.
    s = Database.open(singer_db).schema()
    kept = prune(s, "What is the capacity of each stadium?", k=3)
    assert kept.table_names == ("stadium",)
    columns = kept.table("stadium").column_names
    assert columns[:2] == ("Stadium_ID", "Capacity") and len(columns) == 3
    # The third column is one the question does not name: a tie, broken by an order seeded with the question, so the
    # same on every call (and every machine).
    assert prune(s, "What is the capacity of each stadium?", k=3).table("stadium").column_names == columns


@needs_embeddings
def test_maxsim_scores_prefer_the_right_table(singer_db: Path) -> None:
    from sqlweave.retrieval.late_interaction import TokenEmbedder

    te = TokenEmbedder()
    q = te.question_tokens("How many singers are there?")
    assert len(q) >= 1 and np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-3)
    singer, stadium = te.encode(["name: singer || Name: text | Age: int", "name: stadium || Capacity: int"])
    assert te.maxsim(q, singer) > te.maxsim(q, stadium)
    # Cached: a second encoder reads the vectors back from disk.
    again = TokenEmbedder().encode(["name: stadium || Capacity: int"])[0]
    assert np.allclose(again, stadium, atol=1e-2)


@needs_embeddings
@pytest.mark.parametrize("scoring", ["maxsim", "cosine"])
def test_dense_pruning_keeps_what_the_question_needs(singer_db: Path, scoring: str) -> None:
    s = Database.open(singer_db).schema()
    tables, columns = dense_scores(s, "What is the average capacity of the stadiums?", scoring=scoring)
    assert max(tables, key=tables.get) == "stadium"
    kept = prune(s, "What is the average capacity of the stadiums?", method="dense", k=2, scoring=scoring)
    assert kept.has_table("stadium") and kept.table("stadium").has_column("Capacity")
    recall, shortening = prune_stats(s, kept, "SELECT avg(capacity) FROM stadium")
    assert recall and shortening > 0.3


@needs_embeddings
def test_dense_table_keeps_whole_tables_and_join_keys(singer_db: Path) -> None:
    s = Database.open(singer_db).schema()
    keep = dense_keep(s, "Show the names of singers and the names of the concerts they sang in.", tables_only=True,
                      theta=0.0)
    assert len(keep) == 1 and all(cols == set(s.table(t).column_names) for t, cols in keep.items())
    kept = prune(s, "Show the names of singers and the names of concerts they sang in.", method="dense-table",
                 theta=1.0)
    assert kept.table_names == s.table_names  # a wide margin keeps every table
    kept = prune(s, "Show the singer names and the concert names.", method="dense", theta=0.0, k=1)
    # Whatever two tables the retrievers keep, the bridge table and the join keys come along.
    if kept.has_table("singer") and kept.has_table("concert"):
        assert kept.has_table("singer_in_concert")
        assert {"Singer_ID", "concert_ID"} <= set(kept.table("singer_in_concert").column_names)


@needs_embeddings
def test_wide_tables_are_shortened_before_table_scoring() -> None:
    from sqlweave.schema import Column, Schema, Table

    wide = Table("measurements", tuple(Column(f"sensor_reading_number_{i}", "REAL") for i in range(120))
                 + (Column("station_name", "TEXT"),))
    s = Schema("w", (wide, Table("station", (Column("id", "INT", primary_key=True), Column("city", "TEXT")))))
    from sqlweave.retrieval.late_interaction import get_token_embedder

    assert get_token_embedder().count_tokens(table_text(s, "measurements")) > 256
    tables, _ = dense_scores(s, "Which station name has readings?", mu_coarse=0.05)
    assert set(tables) == {"measurements", "station"}
    kept = prune(s, "Which station name has readings?", method="dense", k=3)
    assert len(kept.table("measurements").columns) < 40 if kept.has_table("measurements") else True


@needs_embeddings
def test_hybrid_dense_is_a_superset_of_bm25(singer_db: Path) -> None:
    s = Database.open(singer_db).schema()
    q = "What are the names of singers from France ordered by age?"
    lexical = prune(s, q, method="bm25", k=4)
    both = prune(s, q, method="hybrid-dense", k=4)
    for t in lexical.tables:
        assert both.has_table(t.name) and set(t.column_names) <= set(both.table(t.name).column_names)


@needs_embeddings
def test_prune_stage_with_dense_method(singer_db: Path) -> None:
    llm = FakeLLM(["SELECT avg(Capacity) FROM stadium"])
    pipe = Pipeline("p", (CheckQuestion(), PruneSchema(method="dense"), RenderSchema(), GenerateSQL(), ExtractSQL(),
                          ExecuteSQL()))
    answer = pipe.run("What is the average capacity of the stadiums?", Database.open(singer_db), llm)
    assert answer.ok
    note = next(e for e in answer.trace if e.stage == "prune_schema").notes
    assert note["method"] == "dense" and "stadium" in note["tables"]


@needs_embeddings
def test_loading_the_embedding_model_draws_no_progress_bar(capfd: pytest.CaptureFixture[str]) -> None:
    # transformers draws "Loading weights: 100%|..." on stderr, which would land inside the CLI's output.
    from sqlweave.config import Settings
    from sqlweave.retrieval.dense import _resolve_model, load_sentence_transformer

    model_dir, _ = _resolve_model(None, Settings.from_env())
    model = load_sentence_transformer(model_dir)
    assert model.encode(["vocalists"]).shape == (1, 384)
    out, err = capfd.readouterr()
    assert "Loading weights" not in err and "%|" not in err


@needs_embeddings
def test_counting_a_long_texts_word_pieces_prints_nothing() -> None:
    # The retrievers count a table's word pieces to learn that it is longer than the encoder reads; the tokenizer
    # would say so on stderr ("Token indices sequence length is longer ..."), inside the CLI's output.
    import logging

    from sqlweave.config import Settings
    from sqlweave.retrieval.dense import Embedder, _resolve_model, load_sentence_transformer

    said: list[str] = []

    class Heard(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    heard = Heard()
    logging.getLogger("transformers").addHandler(heard)
    try:
        model = load_sentence_transformer(_resolve_model(None, Settings.from_env())[0])  # a tokenizer never warned
        embedder = Embedder(load=lambda: model, cache=False)
        text = " ".join(f"sensor_reading_{i}" for i in range(150))
        pieces = embedder.word_pieces(text)
        assert embedder.count_tokens(text) == len(pieces) > 256
        assert not any("Token indices" in m for m in said)
        assert model.tokenizer.tokenize(text) == pieces  # the pieces the tokenizer's own tokenize() gives ...
        assert any("Token indices" in m for m in said)  # ... which is what would have been printed
    finally:
        logging.getLogger("transformers").removeHandler(heard)


@needs_embeddings
def test_a_broken_embeddings_cache_is_set_aside_and_the_vectors_still_come(tmp_path: Path) -> None:
    import numpy as np

    from sqlweave.config import Settings
    from sqlweave.retrieval.dense import Embedder

    class Fake:
        calls = 0

        def encode(self, texts, **_):  # type: ignore[no-untyped-def]
            Fake.calls += 1
            return np.ones((len(texts), 4), dtype=np.float32) / 2

    settings = Settings(cache_dir=tmp_path, model_dir=tmp_path / "models")
    (tmp_path / "embeddings.sqlite").write_bytes(b"not sqlite " * 100)  # was: "file is not a database"
    vectors = Embedder(load=Fake, settings=settings).encode(["orders", "customers"])
    assert vectors.shape == (2, 4) and (tmp_path / "embeddings.sqlite.broken").exists()
    Embedder(load=Fake, settings=settings).encode(["orders"])  # from the new file: the model is not asked
    assert Fake.calls == 1
