"""What retrieval builds per schema is kept by the resources asked, bounded, and keyed by the schema itself."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from sqlweave.config import Settings
from sqlweave.database import Database
from sqlweave.db.demo import demo_database_path
from sqlweave.llm.fake import FakeLLM
from sqlweave.pipeline import State
from sqlweave.question import LANGUAGE_IDENTIFIER, detect_language
from sqlweave.resources import Resources
from sqlweave.retrieval.budget_fit import KEY_GRAPH, TABLE_INDEX, rank_schema
from sqlweave.retrieval.schema_retriever import COLUMN_INDEX, SCHEMA_INDEXES, column_index, prune
from sqlweave.schema import Column, Schema, Table
from sqlweave.stages.render_schema import RENDERING, RENDERINGS, _table_costs


def _resources(tmp_path: Path) -> Resources:
    return Resources(Settings.from_env({"SQLWEAVE_CACHE_DIR": str(tmp_path)}))


def _schema(i: int) -> Schema:
    return Schema(f"db{i}", (Table("singer", (Column("id", primary_key=True), Column(f"name_{i}"))),
                             Table("concert", (Column("id", primary_key=True), Column("singer_id")))))


def test_fifty_databases_leave_at_most_the_bound_of_each_index(tmp_path: Path) -> None:
    res = _resources(tmp_path)
    schemas = [_schema(i) for i in range(50)]
    for s in schemas:
        prune(s, "How many singers?", resources=res)
        rank_schema(s, "How many singers?", dense=False, resources=res)
    assert SCHEMA_INDEXES < 50
    for kind in (COLUMN_INDEX, TABLE_INDEX, KEY_GRAPH):
        assert len(res.items(kind)) == SCHEMA_INDEXES, kind
    held = {c for index in res.items(COLUMN_INDEX) for _, c in index.columns if c.startswith("name_")}
    assert held == {f"name_{i}" for i in range(50 - SCHEMA_INDEXES, 50)}  # the least recently used went first
    last = res.items(COLUMN_INDEX)[-1]
    assert column_index(schemas[-1], res) is last
    column_index(schemas[0], res)  # built again, and the oldest left goes
    assert len(res.items(COLUMN_INDEX)) == SCHEMA_INDEXES
    assert ("singer", f"name_{50 - SCHEMA_INDEXES}") not in {c for i in res.items(COLUMN_INDEX) for c in i.columns}


def test_two_resources_or_two_views_of_a_schema_never_share_an_index(tmp_path: Path) -> None:
    mine, theirs = _resources(tmp_path / "a"), _resources(tmp_path / "b")
    whole = _schema(0)
    narrowed = Schema("db0", (whole.tables[0],))  # same name, what a policy hiding ``concert`` shows
    assert column_index(whole, mine) is column_index(whole, mine)
    assert column_index(whole, mine) is not column_index(whole, theirs)
    assert column_index(narrowed, mine) is not column_index(whole, mine)
    assert column_index(narrowed, mine).columns == (("singer", "id"), ("singer", "name_0"))
    assert len(theirs.items(COLUMN_INDEX)) == 1 and len(mine.items(COLUMN_INDEX)) == 2


def test_schema_renderings_are_kept_by_the_state_resources_and_bounded(tmp_path: Path) -> None:
    res = _resources(tmp_path)
    db = Database.open(demo_database_path())
    for i in range(RENDERINGS + 4):
        s = _schema(i)
        state = State("How many singers?", db, FakeLLM(), s, s, resources=res)
        costs = _table_costs(state, s, "create_table")
        assert set(costs) == {"singer", "concert"} and _table_costs(state, s, "create_table") is costs
    assert len(res.items(RENDERING)) == RENDERINGS


def test_the_language_model_is_held_by_the_resources_asked(tmp_path: Path) -> None:
    res = _resources(tmp_path)
    assert detect_language("Wie viele Hunde gibt es?", resources=res) == "German"
    shared_models = Resources(res.settings, models=res.models)
    assert detect_language("Combien de chiens ?", resources=shared_models) == "French"
    assert len(res.items(LANGUAGE_IDENTIFIER)) == 1 and res.items(LANGUAGE_IDENTIFIER) == \
        shared_models.items(LANGUAGE_IDENTIFIER)


class _Model:
    """Stands for a sentence-transformers model: a text's token vectors are its length in ones."""

    max_seq_length = 256

    def encode(self, texts: list[str], **_: object) -> list[np.ndarray]:
        return [np.ones((len(t) + 2, 4), dtype=np.float32) for t in texts]


def test_token_vectors_in_memory_stop_at_their_bound_in_bytes(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    from sqlweave.retrieval import late_interaction

    monkeypatch.setattr(late_interaction, "TOKEN_MEMORY_BYTES", 1000)
    embedder = SimpleNamespace(model=_Model(), model_id="fake", batch_size=8)
    te = late_interaction.TokenEmbedder(embedder, cache=False, settings=Settings.from_env(  # type: ignore[arg-type]
        {"SQLWEAVE_CACHE_DIR": str(tmp_path)}))
    texts = [f"column {i:03d}" for i in range(50)]  # 10 tokens of 4 float32: 160 bytes each
    vecs = te.encode(texts)
    assert [v.shape for v in vecs] == [(10, 4)] * 50
    assert te._memory.size <= 1000 and len(te._memory) == 6
    assert te._memory.keys() == [te._key(t) for t in texts[-6:]]  # the last ones used
