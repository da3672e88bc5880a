"""Resources owned by whoever holds them, settings read once: the sharing is explicit."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import sqlweave
from sqlweave.config import Settings
from sqlweave.llm import FakeLLM
from sqlweave.resources import Resources, Store, shared_resources
from sqlweave.retrieval.pool import load_pool, user_pool_file


def _train_file(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"db_id": "shop", "question": "How many orders are there?", "query": "SELECT count(*) FROM orders"},
            {"db_id": "shop", "question": "List the customers.", "query": "SELECT name FROM customers"}]
    path = folder / "train.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def test_settings_come_from_the_environment_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.delenv("SQLWEAVE_MODEL_DIR", raising=False)
    monkeypatch.setenv("SQLWEAVE_EXAMPLES", str(tmp_path / "train.json"))
    res = Resources()
    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(tmp_path / "b"))  # later changes do not reach it
    assert res.settings.cache_dir == tmp_path / "a" and res.settings.model_dir == tmp_path / "a" / "models"
    assert res.settings.examples == tmp_path / "train.json"
    with pytest.raises(AttributeError):
        res.settings.cache_dir = tmp_path  # type: ignore[misc]
    assert Settings.from_env({"XDG_CACHE_HOME": "/x"}).cache_dir == Path("/x/sqlweave")


def test_a_user_example_reaches_only_the_pools_of_the_engine_it_was_taught_to(tmp_path: Path) -> None:
    from sqlweave.db.demo import demo_database_path

    train = _train_file(tmp_path / "data")
    mine = Resources(Settings.from_env({"SQLWEAVE_CACHE_DIR": str(tmp_path / "mine")}))
    theirs = Resources(Settings.from_env({"SQLWEAVE_CACHE_DIR": str(tmp_path / "theirs")}))
    my_pool, their_pool = load_pool(train, mine), load_pool(train, theirs)
    assert my_pool is not their_pool and len(my_pool) == len(their_pool) == 2
    engine = sqlweave.connect(demo_database_path(), llm=FakeLLM([]), pipeline="zero-shot", resources=mine)
    engine.add_example("How many products?", "SELECT count(*) FROM products")
    assert len(my_pool) == 3 and len(their_pool) == 2
    assert user_pool_file(mine.settings).is_file() and not user_pool_file(theirs.settings).exists()
    assert load_pool(train, mine) is my_pool  # loaded once per resources
    assert load_pool(train, shared_resources()) is not my_pool


def test_engines_share_the_process_resources_unless_given_their_own() -> None:
    from sqlweave.db.demo import demo_database_path

    a = sqlweave.connect(demo_database_path(), llm=FakeLLM([]), pipeline="zero-shot")
    b = sqlweave.connect(demo_database_path(), llm=FakeLLM([]), pipeline="zero-shot")
    own = sqlweave.connect(demo_database_path(), llm=FakeLLM([]), pipeline="zero-shot", resources=Resources())
    assert a.resources is b.resources is shared_resources() and own.resources is not a.resources
    assert a.bind({}).resources is a.resources


def test_the_pipeline_passes_the_engines_resources_to_its_stages() -> None:
    from sqlweave.db.demo import demo_database_path
    from sqlweave.pipeline import Pipeline
    from sqlweave.presets import build_pipeline

    seen = []

    class Spy:
        name = "spy"
        recovers = False
        requires: tuple[str, ...] = ()
        provides: tuple[str, ...] = ()

        def __call__(self, state) -> None:  # type: ignore[no-untyped-def]
            seen.append(state.resources)

    pipe = Pipeline("spied", (*build_pipeline("zero-shot").stages, Spy()))
    res = Resources()
    engine = sqlweave.connect(demo_database_path(), llm=FakeLLM(responder=lambda m, o: "SELECT 1"), pipeline=pipe,
                              resources=res)
    engine.run("How many?")
    pipe.run("How many?", engine.db, engine.llm)
    assert seen == [res, shared_resources()]


def test_a_store_builds_each_thing_once_even_under_concurrency() -> None:
    store, builds = Store(), []

    def build() -> object:
        builds.append(1)
        time.sleep(0.05)
        return object()

    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(store.get("kind", "key", build))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len({id(g) for g in got}) == 1


def test_keep_bounds_a_kind_least_recently_used_first_and_close_frees_everything() -> None:
    closed: list[str] = []

    class Thing:
        def __init__(self, name: str) -> None:
            self.name = name

        def close(self) -> None:
            closed.append(self.name)

    store = Store()
    for name in "abc":
        store.get("index", name, lambda n=name: Thing(n), keep=2)
    store.get("index", "b", lambda: Thing("again"), keep=2)  # a was dropped; using b makes c the oldest
    store.get("index", "d", lambda: Thing("d"), keep=2)
    assert sorted(t.name for t in store.items("index")) == ["b", "d"]
    store.close()
    assert sorted(closed) == ["b", "d"] and store.items("index") == []


def test_models_can_be_shared_between_resources_with_different_settings(tmp_path: Path) -> None:
    models = Store()
    one = Resources(Settings.from_env({"SQLWEAVE_CACHE_DIR": str(tmp_path / "1")}), models=models)
    two = Resources(Settings.from_env({"SQLWEAVE_CACHE_DIR": str(tmp_path / "2")}), models=models)
    weights = one.get("llama", "k", object)
    assert two.get("llama", "k", object) is weights  # weights in memory: shared
    assert one.get("pool", "p", object) is not two.get("pool", "p", object)  # data: each its own


def test_a_bounded_map_keeps_its_bounds_in_entries_and_in_size() -> None:
    from sqlweave.resources import BoundedMap

    by_count: BoundedMap[int, str] = BoundedMap(entries=3)
    for i in range(10):
        by_count.put(i, str(i))
        by_count.get(0)  # used again each time: never the least recently used
    assert by_count.keys() == [8, 9, 0] and len(by_count) == 3
    by_size: BoundedMap[str, bytes] = BoundedMap(max_size=100, size=len)
    for i in range(10):
        by_size.put(f"k{i}", bytes(30))
    assert by_size.size == 90 and by_size.keys() == ["k7", "k8", "k9"]
    by_size.put("k9", bytes(60))  # replacing an item counts its new size only
    assert by_size.size == 90 and by_size.keys() == ["k8", "k9"]
    by_size.put("huge", bytes(101))
    assert by_size.get("huge") is None and by_size.size == 90
    with pytest.raises(ValueError):
        BoundedMap()


def test_a_hashed_key_is_equal_to_an_equal_value_and_hashes_it_once() -> None:
    from sqlweave.resources import HashedKey

    class Counted:
        hashes = 0

        def __hash__(self) -> int:
            Counted.hashes += 1
            return 7

    value = Counted()
    key = HashedKey(value)
    store = {("kind", key): 1}
    assert store[("kind", key)] == 1 and ("kind", HashedKey(value)) in store
    assert Counted.hashes == 2  # once per HashedKey made, never per look-up
    assert HashedKey((1, 2)) == HashedKey((1, 2)) and HashedKey((1, 2)) != HashedKey((2, 1))
