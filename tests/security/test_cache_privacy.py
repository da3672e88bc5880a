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
    from sqlweave.database import Database
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
        assert json.loads(r.stdout)["rows"] == [[4]]
        assert "answers are given without it" in caplog.text and "Traceback" not in r.output  # said, on stderr
    for command, says in ((["serve", "--demo"], "the demo database cannot be written"),
                          (["serve", "--db", f"cs={singer_db}"], "the conversation store's folder cannot be made")):
        asked.clear()
        r = runner.invoke(app, [*command, "--model", "cache-fake"])
        assert r.exit_code == 2 and says in " ".join(r.output.split()) and not asked, r.output


def test_a_cache_file_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """A write that fails (a full disk) leaves neither a half file nor its temporary (the schema cache left its
    ``.tmp`` behind), and writers of the same file at once (two servers indexing one table's values, which shared one
    fixed ``.tmp`` name) leave one writer's whole content."""
    import threading

    from sqlweave.files import write_atomically

    path = tmp_path / "values" / "t.json"
    assert write_atomically(path, lambda fh: fh.write(b"old"))

    def full_disk(fh) -> None:
        fh.write(b"half")
        raise OSError(28, "No space left on device")

    assert write_atomically(path, full_disk) is False
    assert path.read_bytes() == b"old" and [p.name for p in path.parent.iterdir()] == ["t.json"]
    contents = [bytes([65 + i]) * 200_000 for i in range(8)]
    threads = [threading.Thread(target=write_atomically, args=(path, lambda fh, c=c: fh.write(c))) for c in contents]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert path.read_bytes() in contents and [p.name for p in path.parent.iterdir()] == ["t.json"]
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_schema_kept_on_a_full_disk_leaves_no_temporary_file(singer_db: Path, monkeypatch) -> None:
    from sqlweave.config import cache_dir
    from sqlweave.database import Database

    def no_space(src, dst) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    with Database.open(singer_db) as db:
        assert db.schema().table_names  # read, and not kept
    left = [p.name for p in (cache_dir() / "schemas").rglob("*")] if (cache_dir() / "schemas").exists() else []
    assert not [name for name in left if name.endswith(".tmp")], left


@pytest.fixture
def open_umask() -> Iterator[None]:
    previous = os.umask(0o000)  # the most permissive umask: files 0666, folders 0777 unless sqlweave says otherwise
    yield
    os.umask(previous)


def test_every_file_and_folder_in_a_new_cache_is_private_even_with_an_open_umask(
        tmp_path: Path, singer_db: Path, monkeypatch: pytest.MonkeyPatch, open_umask: None) -> None:
    from sqlweave.conversation import ConversationStore, default_store_url
    from sqlweave.database import Database
    from sqlweave.db.demo import build_demo_database
    from sqlweave.feedback import AnswerSeal, PendingExamples
    from sqlweave.llm.base import Message
    from sqlweave.llm.cache import CachedLLM
    from sqlweave.llm.fake import FakeLLM
    from sqlweave.pipeline import Answer
    from sqlweave.retrieval.pool import add_user_example
    from sqlweave.retrieval.values import ValueIndex
    from sqlweave.resources import Resources

    cache = tmp_path / "home" / ".cache" / "sqlweave"
    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(cache))
    db = Database.open(singer_db)
    db.schema()
    ValueIndex.build(db)
    CachedLLM(FakeLLM(["SELECT 1"]), cache / "responses" / "llm.sqlite").complete([Message("user", "How many?")])
    store = ConversationStore(default_store_url())
    conv = store.create("singers")
    store.append(str(conv.id), "How many singers?", Answer("How many singers?", "SELECT 1", None, ()), None)
    add_user_example("How many singers?", "SELECT count(*) FROM singer", db_id="concert_singer",
                     resources=Resources())  # settings read now, with this cache
    PendingExamples.of().propose("q", "SELECT 1", db_id="concert_singer", database="cs", origin="feedback:right")
    AnswerSeal.from_file(cache / "server" / "answer-key")
    build_demo_database(cache / "demo" / "shop.sqlite")

    made = [cache] + list(cache.rglob("*"))
    names = {p.name for p in made}
    assert {"conversations.sqlite", "llm.sqlite", "user.jsonl", "pending.jsonl", "answer-key", "shop.sqlite"} <= names
    loose = {str(p.relative_to(cache)): oct(_mode(p)) for p in made
             if _mode(p) != (0o700 if p.is_dir() else 0o600)}
    assert loose == {}


def test_a_cache_an_older_version_left_readable_is_made_private_at_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from typer.testing import CliRunner

    from sqlweave.cli import app
    import sqlweave.files as files

    cache = tmp_path / "sqlweave"
    (cache / "server").mkdir(parents=True)
    for path, mode in ((cache, 0o755), (cache / "server", 0o755)):
        os.chmod(path, mode)
    for name in ("conversations.sqlite", "responses.sqlite", "server/feedback.jsonl"):
        (cache / name).write_text("questions and answers")
        os.chmod(cache / name, 0o644)
    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(cache))
    monkeypatch.setattr(files, "_SECURED", set())
    r = CliRunner().invoke(app, ["presets", "--json"])  # any command: the check runs at start
    assert r.exit_code == 0, r.output
    assert {str(p.relative_to(cache)) or ".": oct(_mode(p)) for p in [cache, *cache.rglob("*")]} == {
        ".": "0o700", "server": "0o700", "conversations.sqlite": "0o600", "responses.sqlite": "0o600",
        "server/feedback.jsonl": "0o600"}
    assert "was readable by other users" in caplog.text and str(cache) in caplog.text
