"""The cache holds what sqlweave read from the user's databases (schema samples, value indexes, questions and
answers): every folder it creates there is readable by the user alone, whatever the umask."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Iterator

import pytest

from sqlweave.files import append_jsonl, private_folder


@pytest.fixture
def loose_umask() -> Iterator[None]:
    previous = os.umask(0o022)  # the common default: folders made 0755, files 0644
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_folder_sqlweave_makes_in_a_new_cache_is_private(
        tmp_path: Path, singer_db: Path, monkeypatch: pytest.MonkeyPatch, loose_umask: None) -> None:
    from sqlweave.conversation import ConversationStore, default_store_url
    from sqlweave.db import Database
    from sqlweave.db.demo import build_demo_database
    from sqlweave.llm.cache import CachedLLM
    from sqlweave.llm.base import Message
    from sqlweave.llm.fake import FakeLLM
    from sqlweave.retrieval.pool import user_pool_file
    from sqlweave.retrieval.values import ValueIndex

    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    cache = home / ".cache" / "sqlweave"  # neither folder exists yet
    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(cache))

    db = Database.open(singer_db)
    db.schema()  # kept on disk, with sample values
    ValueIndex.build(db)  # every text value, per table
    CachedLLM(FakeLLM(["SELECT 1"]), cache / "responses" / "llm.sqlite").complete(
        [Message("user", "How many singers?")])
    ConversationStore(default_store_url())
    append_jsonl(user_pool_file(), [{"question": "q", "sql": "SELECT 1"}])
    build_demo_database(cache / "demo" / "shop.sqlite")

    folders = [cache.parent] + [p for p in cache.rglob("*") if p.is_dir()] + [cache]
    assert {p.relative_to(cache).parts[0] for p in cache.rglob("*") if p.is_dir()} >= {
        "schemas", "values", "responses", "pool", "demo"}
    assert {str(p.relative_to(home)): oct(_mode(p)) for p in folders if _mode(p) != 0o700} == {}
    assert _mode(home) == 0o755  # a folder that was there keeps its permissions


def test_a_folder_that_exists_keeps_its_permissions_and_a_file_in_the_way_is_an_error(
        tmp_path: Path, loose_umask: None) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o775)
    os.chmod(shared, 0o775)  # an administrator's shared cache
    made = private_folder(shared / "sqlweave" / "schemas")
    assert (_mode(shared), _mode(shared / "sqlweave"), _mode(made)) == (0o775, 0o700, 0o700)
    assert private_folder(made) == made  # again: nothing to do
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError):
        private_folder(tmp_path / "file" / "below")


def test_a_cache_folder_that_cannot_be_made_costs_the_caches_never_an_answer(
        tmp_path: Path, singer_db: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # a read-only file system, or a file where the folder should be: caches are skipped, said once; what needs a
    # place of its own (the demo database, the server's conversations) is a clear error before any model time
    from typer.testing import CliRunner

    from sqlweave.cli import app
    from sqlweave.llm.fake import FakeLLM
    from sqlweave.llm.registry import BACKENDS

    (tmp_path / "in-the-way").write_text("a file, not a folder")
    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(tmp_path / "in-the-way" / "cache"))
    asked: list[int] = []

    def model(arg: str, **kw: object) -> FakeLLM:
        asked.append(1)
        return FakeLLM(responder=lambda m, o: "```sql\nSELECT COUNT(*) FROM singer WHERE Country = 'France'\n```")

    monkeypatch.setitem(BACKENDS, "cache-fake", model)
    runner = CliRunner()
    for pipeline in ("default", "default+values"):  # the response cache, the schema cache, the value index
        r = runner.invoke(app, ["ask", "--db", str(singer_db), "--model", "cache-fake", "-p", pipeline, "--json",
                                "How many singers are from France?"])
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["result"]["rows"] == [[4]]
        assert "answers are given without it" in caplog.text and "Traceback" not in r.output  # said, on stderr
    for command, says in ((["serve", "--demo"], "the demo database cannot be written"),
                          (["serve", "--db", f"cs={singer_db}"], "the conversation store's folder cannot be made")):
        asked.clear()
        r = runner.invoke(app, [*command, "--model", "cache-fake"])
        assert r.exit_code == 2 and says in " ".join(r.output.split()) and not asked, r.output
