"""Killed with SIGKILL mid-work, nothing is lost: a real process is killed while it builds a value index, derives an
example pool, assembles model weights or writes conversation turns; the rerun (or the next reader) finds every
finished piece intact, finishes the rest, and the user's database is unchanged. (Evaluation runs: see
tests/eval/test_runner.py.)"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[2]


def kill_when(script: str, ready: Callable[[], bool], tmp_path: Path, *args: str, limit_s: float = 120) -> None:
    """Run ``script`` in a fresh Python process and SIGKILL it as soon as ``ready()`` holds."""
    path = tmp_path / "work.py"
    path.write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n" + textwrap.dedent(script))
    env = {**os.environ, "SQLWEAVE_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, str(path), *args], env=env)
    deadline = time.time() + limit_s
    try:
        while time.time() < deadline and proc.poll() is None and not ready():
            time.sleep(0.02)
        assert proc.poll() is None, "the work finished before it could be interrupted: the test tests nothing"
        assert ready(), f"the work did not reach the point to interrupt within {limit_s:g} s"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_value_index_build_killed_keeps_finished_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlweave.config import Settings
    from sqlweave.database import Database
    from sqlweave.retrieval.values import ValueIndex

    db_path = tmp_path / "many.sqlite"
    with sqlite3.connect(db_path) as conn:
        for t in range(40):
            conn.execute(f"CREATE TABLE t{t} (id INTEGER PRIMARY KEY, name TEXT, city TEXT)")
            conn.executemany(f"INSERT INTO t{t} (name, city) VALUES (?, ?)",
                             [(f"name {t}-{i}", f"city {i % 7}") for i in range(50)])
    before = digest(db_path)
    folder = tmp_path / "cache" / "values"
    kill_when(f"""
        import time
        from sqlweave.database import Database
        from sqlweave.retrieval.values import ValueIndex
        ValueIndex.build(Database.open({str(db_path)!r}), progress=lambda done, total: time.sleep(0.1))
    """, lambda: folder.exists() and len(list(folder.rglob("*.json"))) >= 5, tmp_path)
    kept = {p: p.read_bytes() for p in folder.rglob("*.json")}
    assert 5 <= len(kept) < 40
    for content in kept.values():
        json.loads(content)  # every table file on disk is whole (written to a temporary name, then renamed)
    index = ValueIndex.build(Database.open(db_path), settings=Settings.from_env({"SQLWEAVE_CACHE_DIR": str(tmp_path / "cache")}))
    fresh = ValueIndex.build(Database.open(db_path), persist=False)
    assert sorted(index.entries) == sorted(fresh.entries) and len(index.entries) == 40 * (50 + 7)
    assert all(p.read_bytes() == content for p, content in kept.items())  # finished tables were reused as they were
    assert len(list(folder.rglob("*.json"))) == 40
    assert digest(db_path) == before


def test_pool_derivation_killed_keeps_what_it_derived(tmp_path: Path) -> None:
    from sqlweave.config import Settings
    from sqlweave.retrieval.pool import DERIVED_CHECKPOINT, ExamplePool

    rows = [{"db_id": f"db{i % 9}", "question": f"How many rows of kind {i} are there?",
             "query": f"SELECT count(*) FROM t{i % 13} WHERE kind = {i} AND name LIKE '%{i}%'"} for i in range(3000)]
    train = tmp_path / "train.json"
    train.write_text(json.dumps(rows), encoding="utf-8")
    derived = tmp_path / "cache" / "pool" / "derived.jsonl"
    kill_when(f"""
        import time
        from sqlweave.retrieval.pool import ExamplePool
        ExamplePool.from_spider({str(train)!r}, progress=lambda done, total: time.sleep(0.002))
    """, lambda: derived.exists() and derived.read_bytes().count(b"\n") >= DERIVED_CHECKPOINT, tmp_path)
    saved = len(derived.read_text(encoding="utf-8").splitlines())
    assert DERIVED_CHECKPOINT <= saved < len(rows)
    settings = Settings.from_env({"SQLWEAVE_CACHE_DIR": str(tmp_path / "cache")})
    pool = ExamplePool.from_spider(train, settings=settings, include_user=False)
    assert len(pool) == len(rows)
    lines = [json.loads(line) for line in derived.read_text(encoding="utf-8").splitlines() if line.strip()
             and line.endswith("}")]
    assert len({line["key"] for line in lines}) == len(rows)  # each derived once: what was saved was not redone
    again = ExamplePool.from_spider(train, settings=settings, include_user=False)
    assert [e.sql_skeleton for e in again.examples] == [e.sql_skeleton for e in pool.examples]


def test_weights_assembly_killed_is_never_taken_for_verified_weights(tmp_path: Path) -> None:
    parts = []
    for i in range(3):
        part = tmp_path / f"part{i}.bin"
        part.write_bytes(os.urandom(1 << 20) * 24)  # 24 MB each
        parts.append(part)
    sha = hashlib.sha256(b"".join(p.read_bytes() for p in parts)).hexdigest()
    modules = tmp_path / "mods"
    modules.mkdir()
    for i, part in enumerate(parts, 1):
        (modules / f"crashtest_part{i}.py").write_text(f"def get_part_path():\n    return {str(part)!r}\n")
    setup = f"""
        import sys, time
        sys.path.insert(0, {str(modules)!r})
        from sqlweave.llm import weights
        weights.MODELS["crash"] = weights.WeightSpec(key="crash", name="crash test", filename="crash.gguf",
                                                     module_prefix="crashtest_part", parts=3, sha256={sha!r})
    """
    target = tmp_path / "models" / "crash.gguf"
    kill_when(setup + f"""
        weights.ensure_weights("crash", progress=lambda done, total: time.sleep(0.05),
                               directory=__import__("pathlib").Path({str(target.parent)!r}))
    """, lambda: any(target.parent.glob("*.part")) and any(p.stat().st_size > (4 << 20)
                                                          for p in target.parent.glob("*.part")), tmp_path)
    sys.path.insert(0, str(modules))
    try:
        from sqlweave.llm import weights

        spec = weights.WeightSpec(key="crash", name="crash test", filename="crash.gguf", module_prefix="crashtest_part",
                                  parts=3, sha256=sha)
        assert not target.exists() and not weights.is_assembled(spec, target.parent)
        weights.MODELS["crash"] = spec
        assert list(target.parent.glob("*.part"))  # what the killed process left
        path = weights.ensure_weights("crash", directory=target.parent)
        assert path == target and weights.is_assembled(spec, target.parent)
        assert hashlib.sha256(target.read_bytes()).hexdigest() == sha
        assert not list(target.parent.glob("*.part"))  # the next assembler removed it
    finally:
        weights.MODELS.pop("crash", None)
        sys.path.remove(str(modules))


def test_conversation_writes_killed_keep_every_finished_turn(tmp_path: Path) -> None:
    from sqlweave.conversation import ConversationStore

    store_url = f"sqlite:///{tmp_path / 'conversations.sqlite'}"
    log = tmp_path / "written.txt"
    kill_when(f"""
        from sqlweave.conversation import ConversationStore
        from sqlweave.pipeline import Answer
        store = ConversationStore({store_url!r})
        conv = store.create("shop", "crash test")
        with open({str(log)!r}, "w") as log:
            log.write(conv.id + "\\n"); log.flush()
            for i in range(100000):
                store.append(conv.id, f"question {{i}}?", Answer(question=f"question {{i}}?", sql=f"SELECT {{i}}",
                             result=None, trace=()))
                log.write(f"{{i}}\\n"); log.flush()
    """, lambda: log.exists() and len(log.read_text().splitlines()) > 50, tmp_path)
    lines = log.read_text().splitlines()
    conv_id, written = lines[0], len(lines) - 1
    store = ConversationStore(store_url)
    turns = store.turns(conv_id)
    assert written <= len(turns) <= written + 1  # the turn being written when killed is there whole or not at all
    assert [t.question for t in turns] == [f"question {i}?" for i in range(len(turns))]
    assert all(t.sql == f"SELECT {i}" for i, t in enumerate(turns))
    from sqlweave.pipeline import Answer

    store.append(conv_id, "after the crash?", Answer(question="after the crash?", sql="SELECT 1", result=None, trace=()))
    assert store.turns(conv_id)[-1].question == "after the crash?"


def test_repeated_kills_at_random_moments_then_a_full_index(tmp_path: Path) -> None:
    """Killed again and again at random moments (seeded), each run resuming from what the last one kept: the
    index that finally completes equals one built in a single go."""
    import random

    from sqlweave.config import Settings
    from sqlweave.database import Database
    from sqlweave.retrieval.values import ValueIndex

    db_path = tmp_path / "many.sqlite"
    with sqlite3.connect(db_path) as conn:
        for t in range(30):
            conn.execute(f"CREATE TABLE t{t} (id INTEGER PRIMARY KEY, label TEXT)")
            conn.executemany(f"INSERT INTO t{t} (label) VALUES (?)", [(f"label {t}-{i}",) for i in range(40)])
    folder = tmp_path / "cache" / "values"
    rng = random.Random(7)
    kept_counts = []
    for _ in range(3):
        start, delay = time.time(), rng.uniform(0.3, 1.5)
        kill_when(f"""
            import time
            from sqlweave.database import Database
            from sqlweave.retrieval.values import ValueIndex
            ValueIndex.build(Database.open({str(db_path)!r}), progress=lambda done, total: time.sleep(0.1))
        """, lambda: time.time() - start > delay, tmp_path)
        kept_counts.append(len(list(folder.rglob("*.json"))) if folder.exists() else 0)
    assert kept_counts == sorted(kept_counts) and kept_counts[-1] < 30  # each run kept at least what it found
    index = ValueIndex.build(Database.open(db_path),
                             settings=Settings.from_env({"SQLWEAVE_CACHE_DIR": str(tmp_path / "cache")}))
    assert sorted(index.entries) == sorted(ValueIndex.build(Database.open(db_path), persist=False).entries)
