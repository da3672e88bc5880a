"""The example pool sqlweave ships (Spider's training pairs, derived ahead) and the bundle format it comes in."""

import gzip
import json
from pathlib import Path

import pytest

from sqlweave.config import Settings
from sqlweave.errors import ConfigurationError
from sqlweave.retrieval.pool import BUNDLED_POOL, POOL_VERSION, ExamplePool, derive, load_pool, write_bundle
from sqlweave.stages import select_examples


def settings(tmp_path: Path) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", model_dir=tmp_path / "models")


def test_the_bundled_pool_is_current_and_derives_nothing(tmp_path: Path) -> None:
    """Every derived field in the bundle is what this code derives (re-run scripts/bundle_pool.py when not)."""
    pool = ExamplePool.from_bundle(settings=settings(tmp_path))
    assert len(pool) == 7000 and len({e.db_id for e in pool.examples}) == 140
    assert not (tmp_path / "cache" / "pool" / "derived.jsonl").exists()  # used as shipped
    with gzip.open(BUNDLED_POOL, "rt", encoding="utf-8") as fh:
        meta = json.load(fh)
    assert meta["pool_version"] == POOL_VERSION and "CC BY-SA 4.0" in meta["license"] and "Spider" in meta["source"]
    assert (BUNDLED_POOL.parent / "SPIDER-LICENSE.md").is_file()
    for ex in pool.examples[::70]:  # 100 pairs spread over the file
        assert ex == derive(ex.question, ex.sql, ex.db_id, pool.names[ex.db_id])
    assert sum(bool(e.sql_skeleton) for e in pool.examples) > 6990


TRAIN = [
    {"db_id": "pets", "question": "How many pets are older than 3?", "query": "SELECT count(*) FROM pets WHERE age > 3"},
    {"db_id": "shop", "question": "What is the average price of products?", "query": "SELECT avg(price) FROM products"},
]
TABLES = [
    {"db_id": "pets", "table_names_original": ["pets"], "column_names_original": [[-1, "*"], [0, "age"]]},
    {"db_id": "shop", "table_names_original": ["products"], "column_names_original": [[-1, "*"], [0, "price"]]},
]


def test_a_bundle_reads_back_as_written_and_an_older_one_is_derived_again(tmp_path: Path) -> None:
    (tmp_path / "train.json").write_text(json.dumps(TRAIN))
    (tmp_path / "tables.json").write_text(json.dumps(TABLES))
    pool = ExamplePool.from_spider(tmp_path / "train.json", settings=settings(tmp_path))
    pool.add("mine", "SELECT 1")  # the user's pairs stay out of a bundle
    bundle = tmp_path / "pool.json.gz"
    assert write_bundle(pool, bundle, source="test", license="CC0") == 2
    fresh = settings(tmp_path / "other")
    assert ExamplePool.from_file(bundle, settings=fresh).examples == pool.examples[:2]
    assert ExamplePool.from_file(bundle, settings=fresh).names == {"pets": ["pets", "age"], "shop": ["products", "price"]}

    with gzip.open(bundle, "rt", encoding="utf-8") as fh:
        old = json.load(fh)
    old["pool_version"] = POOL_VERSION - 1
    old["examples"][0][3] = "stale skeleton"  # question_skeleton as an older version derived it
    with gzip.open(bundle, "wt", encoding="utf-8") as fh:
        json.dump(old, fh)
    again = ExamplePool.from_bundle(bundle, settings=fresh)
    assert again.examples[0].question_skeleton == "How many _ are older than _?"
    assert (tmp_path / "other" / "cache" / "pool" / "derived.jsonl").exists()  # derived once, cached


@pytest.mark.parametrize("content", [b"not gzip", gzip.compress(b"{oops"), gzip.compress(b'{"examples": []}'),
                                     gzip.compress(b'{"pool_version": 2, "names": {}, "examples": [["too few"]]}')])
def test_an_unreadable_bundle_is_a_clear_error(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "pool.json.gz").write_bytes(content)
    with pytest.raises(ConfigurationError, match="cannot read the example bundle") as info:
        ExamplePool.from_file(tmp_path / "pool.json.gz", settings=settings(tmp_path))
    assert "--examples" in info.value.hint


def test_without_a_pool_given_the_bundled_one_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlweave.resources import Resources

    assert select_examples.default_pool_path(Settings.from_env({})) == BUNDLED_POOL
    given = tmp_path / "train.json"
    assert select_examples.default_pool_path(Settings.from_env({"SQLWEAVE_EXAMPLES": str(given)})) == given
    res = Resources(settings(tmp_path))
    assert len(load_pool(BUNDLED_POOL, res)) == 7000 and load_pool(BUNDLED_POOL, res) is load_pool(BUNDLED_POOL, res)
    monkeypatch.setattr(select_examples, "BUNDLED_POOL", tmp_path / "gone.json.gz")
    with pytest.raises(ConfigurationError, match="no example pool given") as info:
        select_examples.default_pool_path(Settings.from_env({}))
    assert "--examples" in info.value.hint and "reinstall" in info.value.hint


def test_a_vote_with_the_examples_view_and_no_pool_given_shows_bundled_pairs(singer_db: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlweave.database import Database
    from sqlweave.llm import FakeLLM
    from sqlweave.pipeline import Pipeline
    from sqlweave.presets import build_pipeline, zero_shot
    from sqlweave.stages.vote import SelfConsistency

    monkeypatch.delenv("SQLWEAVE_EXAMPLES", raising=False)
    votes = [s for s in build_pipeline("best+examples").stages if isinstance(s, SelfConsistency)]
    assert votes and {v.examples_pool for v in votes} == {str(BUNDLED_POOL)}
    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=1, examples=2, view_samples=0),))
    llm = FakeLLM(["SELECT Name FROM singer ORDER BY Age DESC LIMIT 1"] * 3)
    answer = pipe.run("Who is the oldest singer?", Database.open(singer_db), llm)
    assert answer.ok
    shown = answer.trace[-1].notes["examples"]
    pool = ExamplePool.from_bundle()
    pairs = {e.question: e for e in pool.examples}
    # by the skeleton's English words, hundreds of pairs tie (SELECT _ FROM _ and SELECT _, _ FROM _ alike), and
    # which of them come first is the seeded tie order's pick: only what they share is asserted
    assert len(shown) == 2 and all("ORDER BY _ DESC LIMIT _" in pairs[q].sql_skeleton for q in shown)
    assert all(q in llm.calls[-1][0][-1].content for q in shown)
