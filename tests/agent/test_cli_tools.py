"""`sqlweave tool ...`: the agent's tools from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sqlweave.cli import app

runner = CliRunner()


def test_shortest_path_json(singer_db: Path) -> None:
    out = runner.invoke(app, ["tool", "shortest-path", "singer.Name", "stadium.Name", "--db", str(singer_db), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["tables"] == ["singer", "singer_in_concert", "concert", "stadium"]
    assert data["from_clause"].startswith("FROM singer JOIN")


def test_search_value_json(singer_db: Path) -> None:
    out = runner.invoke(app, ["tool", "search-value", "netherland", "--db", str(singer_db), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)[0]["value"] == "Netherlands"


@pytest.mark.extra("embed")
def test_search_column_json(singer_db: Path) -> None:
    out = runner.invoke(app, ["tool", "search-column", "capacity of a stadium", "--db", str(singer_db), "-k", "2", "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert len(rows) == 2 and ("stadium", "Capacity") in {(r["table"], r["column"]) for r in rows}


def test_tool_errors_are_messages_not_tracebacks(singer_db: Path, tmp_path: Path) -> None:
    out = runner.invoke(app, ["tool", "shortest-path", "singer.Nope", "stadium.Name", "--db", str(singer_db)])
    assert out.exit_code == 2 and "has no column 'Nope'" in out.output and "Traceback" not in out.output
    out = runner.invoke(app, ["tool", "search-value", "x", "--db", str(tmp_path / "missing.sqlite")])
    assert out.exit_code == 2 and "no database file" in out.output
