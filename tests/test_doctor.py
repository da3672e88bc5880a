"""`sqlweave doctor`: what the installation can do, what is wrong, and what to do about it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sqlweave.cli import app
from sqlweave.config import Settings
from sqlweave.doctor import run_checks

runner = CliRunner()


def _by_name(checks):  # type: ignore[no-untyped-def]
    return {c.name: c for c in checks}


def test_the_cache_folder_is_checked_writable_and_private(tmp_path: Path) -> None:
    fresh = _by_name(run_checks(settings=Settings(cache_dir=tmp_path / "new", model_dir=tmp_path / "m")))
    assert fresh["cache folder"].ok is True and "yours alone" in fresh["cache folder"].found
    assert list((tmp_path / "new").iterdir()) == []  # the probe file is gone
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    loose = _by_name(run_checks(settings=Settings(cache_dir=shared, model_dir=tmp_path / "m")))["cache folder"]
    assert loose.ok is False and f"chmod 700 {shared}" in loose.todo
    (tmp_path / "in-the-way").write_text("a file")
    blocked = _by_name(run_checks(settings=Settings(cache_dir=tmp_path / "in-the-way" / "c",
                                                    model_dir=tmp_path / "m")))["cache folder"]
    assert blocked.ok is False and "SQLWEAVE_CACHE_DIR" in blocked.todo


def test_every_extra_is_listed_with_how_to_install_it_when_missing() -> None:
    import importlib.util

    from sqlweave.doctor import EXTRAS

    checks = _by_name(run_checks())
    for extra, (modules, _) in EXTRAS.items():
        check = checks[f"extra {extra}"]
        installed = all(importlib.util.find_spec(m) is not None for m in modules)
        assert check.ok is (True if installed else None), extra
        assert installed or check.todo == f"pip install 'sqlweave[{extra}]'"
    assert checks["model local:1.5b"].ok is not None  # the default model is needed: found, or a problem


def test_the_cli_checks_a_database_shows_names_as_data_and_exits_1_on_a_problem(tmp_path: Path,
                                                                               singer_db: Path) -> None:
    odd = tmp_path / "[red]shop\x1b[2J.sqlite"
    shutil.copy(singer_db, odd)
    r = runner.invoke(app, ["doctor", "--db", str(odd), "--json"])
    checks = {c["name"]: c for c in json.loads(r.stdout)}
    assert checks["database"]["ok"] is True and "4 tables, 21 columns" in checks["database"]["found"]
    assert r.exit_code == (1 if any(c["ok"] is False for c in checks.values()) else 0)
    table = runner.invoke(app, ["doctor", "--db", str(odd)], env={"COLUMNS": "300"}, terminal_width=300)
    assert "[red]shop\\x1b[2J (sqlite)" in table.output and "\x1b" not in table.output  # shown as data
    missing = runner.invoke(app, ["doctor", "--db", str(tmp_path / "nope.sqlite"), "--json"])
    broken = {c["name"]: c for c in json.loads(missing.stdout)}["database"]
    assert missing.exit_code == 1 and broken["ok"] is False and "no database file" in broken["found"]
    assert broken["todo"]  # what to do


def test_the_database_check_names_the_tables_an_earlier_schema_hides(tmp_path: Path) -> None:
    from tests.extras import duckdb_file

    path = duckdb_file(tmp_path / "wh.duckdb",
                       "CREATE SCHEMA marts; CREATE TABLE main.kpi (y INTEGER); CREATE TABLE marts.kpi (x INTEGER)")
    r = runner.invoke(app, ["doctor", "--db", str(path), "--json"])
    check = {c["name"]: c for c in json.loads(r.stdout)}["database"]
    assert check["ok"] is True and check["found"].endswith("an earlier schema has a table of the same name: marts.kpi")
    assert "--schemas" in check["todo"]


@pytest.mark.parametrize("as_json", [True, False])
def test_doctor_never_fails_with_a_traceback(as_json: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(tmp_path / "f" / "cache"))
    r = runner.invoke(app, ["doctor", *(["--json"] if as_json else [])])
    assert r.exit_code == 1 and (r.exception is None or isinstance(r.exception, SystemExit))
    assert "Traceback" not in r.output and "cache folder" in r.output
