"""The hostile-input corpus (tests/security/corpus.py) on SQLite, DuckDB, PostgreSQL and MariaDB: every case reaches the
outcome it must (refused, answered safely, or stopped by the time limit), leaves the database and its folder
byte-for-byte unchanged, and shows no hidden table, column or value in any output or prompt."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ..extras import has_extra, need_engine
from . import corpus
from .conftest import MariaDBServer, PostgresServer
from .hostile_run import (
    Outcome,
    build_file,
    folder_state,
    mysql_state,
    mysql_statements,
    open_corpus,
    postgres_script,
    postgres_state,
    run_case,
)

CASES = corpus.cases()


def test_the_corpus_is_large_and_covers_every_kind_on_every_engine() -> None:
    assert len(CASES) >= 300
    per = Counter((c.kind, c.engine) for c in CASES)
    assert all(per[(k, e)] > 0 for k in corpus.KINDS for e in corpus.ENGINES), per
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.fixture(scope="module")
def corpus_dbs(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    out = {}
    for engine in ("sqlite", "duckdb"):
        if not has_extra("duckdb") and engine == "duckdb":
            continue
        folder = tmp_path_factory.mktemp(f"corpus-{engine}") / "db"
        target = str(build_file(engine, folder))
        out[engine] = (open_corpus(target, engine, folder), folder, target, lambda f=folder: folder_state(f))
    if has_extra("postgres"):
        pg_server: PostgresServer = request.getfixturevalue("pg_server")
        pg_server.admin("DROP DATABASE IF EXISTS corpus")
        pg_server.admin("CREATE DATABASE corpus")
        pg_server.admin(postgres_script(), "corpus")
        folder = tmp_path_factory.mktemp("corpus-postgres")
        url = pg_server.url("corpus")
        digest = postgres_state(url)
        out["postgres"] = (open_corpus(url, "postgres", folder), folder, url,
                           lambda: (digest(), folder_state(folder)))
    if has_extra("mysql"):
        server: MariaDBServer = request.getfixturevalue("mariadb_server")
        server.admin("DROP DATABASE IF EXISTS corpus")
        server.admin("CREATE DATABASE corpus CHARACTER SET utf8mb4")
        for stmt in mysql_statements():
            server.admin(stmt, "corpus")
        # a folder the server's own user could write to: an INTO OUTFILE that ran would show there
        my_folder = tmp_path_factory.mktemp("corpus-mysql")
        my_folder.chmod(0o777)
        url = server.url("corpus")
        my_digest = mysql_state(url)
        out["mysql"] = (open_corpus(url, "mysql", my_folder), my_folder, url,
                        lambda: (my_digest(), folder_state(my_folder)))
    yield out
    for db, *_ in out.values():
        db.close()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: corpus.Case, request: pytest.FixtureRequest) -> None:
    need_engine(case.engine)
    db, folder, target, state = request.getfixturevalue("corpus_dbs")[case.engine]
    result: Outcome = run_case(case, db, folder, target, state=state)
    assert result.unchanged, f"{case.sql!r} changed the database"
    assert not result.leaks, f"{result.leaks} in the output of {case.id}"
    assert result.seen, "the model was never shown the injected text: the case tests nothing"
    assert result.outcome == case.expect, f"{case.sql!r}: {result.outcome} ({result.error}) {result.detail}"
