"""The pool's normalised SQL: derived once, cached with the other fields, re-derived when POOL_VERSION changes."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from sqlweave.retrieval import pool as pool_mod
from sqlweave.retrieval.pool import ExamplePool, PoolExample

TRAIN = [
    {"db_id": "pets", "question": "Name of the oldest pet?", "query": "SELECT T1.name FROM pets AS T1 ORDER BY T1.age DESC LIMIT 1"},
    {"db_id": "pets", "question": "Broken one", "query": "SELEC nothing FROM ("},
]


def test_normalised_sql_is_derived_cached_and_rederived_after_a_version_bump(tmp_path: Path, monkeypatch) -> None:
    train = tmp_path / "train.json"
    train.write_text(json.dumps(TRAIN))
    pool = ExamplePool.from_spider(train)
    assert [e.normalized_sql for e in pool.examples] == ["SELECT _ FROM _ ORDER BY _ DESC LIMIT ?", ""]
    cache = Path(os.environ["SQLWEAVE_CACHE_DIR"]) / "pool" / "derived.jsonl"
    assert all("normalized_sql" in json.loads(line) for line in cache.read_text().splitlines())

    calls = []
    real = pool_mod.derive
    monkeypatch.setattr(pool_mod, "derive", lambda *a, **k: calls.append(a) or real(*a, **k))
    ExamplePool.from_spider(train)
    assert calls == []  # same version: everything comes from the cache
    monkeypatch.setattr(pool_mod, "POOL_VERSION", pool_mod.POOL_VERSION + 1)
    ExamplePool.from_spider(train)
    assert len(calls) == 2  # a new version derives every pair again


def test_user_pairs_written_before_the_field_existed_get_it(tmp_path: Path) -> None:
    train = tmp_path / "train.json"
    train.write_text(json.dumps(TRAIN[:1]))
    old = asdict(PoolExample("Count robots", "SELECT count(*) FROM robots AS r", "lab", "Count _", "SELECT COUNT(*) FROM _",
                             "user"))
    del old["normalized_sql"]
    user = Path(os.environ["SQLWEAVE_CACHE_DIR"]) / "pool" / "user.jsonl"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(json.dumps(old) + "\n")
    pool = ExamplePool.from_spider(train)
    assert pool.examples[-1].normalized_sql == "SELECT COUNT(*) FROM _"
