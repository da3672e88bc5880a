"""Untrusted text is data at the terminal door: the hostile-values fixture through every CLI command.

The rule (sqlweave.text.visible, sqlweave.display): values, names, SQL, paths and messages are shown as
written, never as console markup; hidden characters are visible escapes; no ESC or BEL byte that the
renderer did not put there reaches the terminal; nothing raises.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from sqlweave import display
from sqlweave.cli import app
from sqlweave.database import Database, QueryResult
from sqlweave.errors import DatabaseNotFoundError, MissingDependencyError
from sqlweave.export import to_csv
from sqlweave.llm.fake import FakeLLM
from sqlweave.llm.registry import BACKENDS, register_backend
from sqlweave.logs import configure_json_logging, log_event
from sqlweave.text import visible, well_formed
from tests.conftest import file_digest
from tests.hostile import (
    HOSTILE_COLUMNS,
    HOSTILE_TABLE,
    HOSTILE_VALUES,
    INVALID_UTF8,
    MEGABYTE,
    build_hostile_db,
    stored_values,
)

runner = CliRunner()
WIDE = {"COLUMNS": "400", "LINES": "100", "TERM": "xterm-256color"}


@pytest.fixture
def hostile_db(tmp_path: Path) -> Path:
    return build_hostile_db(tmp_path / "hostile.sqlite")


def _no_raw_controls(output: str) -> None:
    """No ESC, BEL or other control byte, bidi override or zero-width character in plain (uncoloured) output."""
    bad = [hex(ord(ch)) for ch in output if ch not in "\n" and unicodedata.category(ch) in ("Cc", "Cf", "Cs")]
    assert not bad, f"hidden characters reached the terminal: {sorted(set(bad))}"


def _squash(text: str) -> str:
    """Output with table borders and padding removed, so a value wrapped in a cell can still be found."""
    return re.sub(r"[\s│┃|]+", "", text)


# --- the rule itself ---------------------------------------------------------------------------------------


def test_visible_escapes_every_hidden_character() -> None:
    for label, value in HOSTILE_VALUES:
        shown = visible(value, max_chars=None)
        _no_raw_controls(shown)
        # every run of ordinary characters of the value is still there, unchanged
        for run in re.split(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]", value):
            assert run in shown, (label, run)
    assert visible("\x1b]0;pwned\x07") == "\\x1b]0;pwned\\x07"
    assert visible("a\u202eb\u200bc\u2066d") == "a\\u202eb\\u200bc\\u2066d"
    assert visible("a\x00b") == "a\\x00b"
    assert visible("c1\x9b2J") == "c1\\x9b2J"
    assert visible(b"\xff".decode("utf-8", "surrogateescape")) == "\\udcff"


def test_visible_truncates_with_a_marker() -> None:
    shown = visible(MEGABYTE, max_chars=100)
    assert shown.startswith("M" * 100) and shown.endswith(f"… ({len(MEGABYTE) - 100} more characters)")


def test_well_formed_matches_replace_decoding() -> None:
    kept = INVALID_UTF8.decode("utf-8", "surrogateescape")
    assert well_formed(kept) == INVALID_UTF8.decode("utf-8", "replace")
    assert well_formed("plain") == "plain"
    assert well_formed("\ud800 lone").encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=300))
def test_terminal_renderer_never_raises_and_adds_no_foreign_bytes(text: str) -> None:
    console = Console(width=120, force_terminal=True, color_system="truecolor", markup=False, legacy_windows=False)
    result = QueryResult("SELECT", (text, "b"), ((text, None), (1, text)), False, 0.0)
    with console.capture() as cap:
        console.print(display.result_table(result))
        console.print(display.sql(text))
        console.print(display.label("Question: ", text, style="bold"))
        console.print(display.data(text))
    out = cap.get()
    # remove the style sequences the renderer itself writes (SGR: ESC [ ... m); nothing else may remain
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    _no_raw_controls(plain)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=200))
def test_a_single_line_is_shown_exactly_as_visible_says(text: str) -> None:
    console = Console(width=10_000, color_system=None, markup=False, force_terminal=False)
    with console.capture() as cap:
        console.print(display.data(text), soft_wrap=True)
    assert cap.get() == visible(text) + "\n"


# --- the CLI over the fixture -----------------------------------------------------------------------------


def test_sql_table_shows_every_value_as_written(hostile_db: Path) -> None:
    before = file_digest(hostile_db)
    r = runner.invoke(app, ["sql", "--db", str(hostile_db), "SELECT label, value FROM hostile ORDER BY id"], env=WIDE)
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output
    _no_raw_controls(r.stdout)
    squashed = _squash(r.stdout)
    for label, value in HOSTILE_VALUES:
        assert _squash(visible(value, max_chars=200)) in squashed, label
    assert _squash(visible(INVALID_UTF8.decode("utf-8", "surrogateescape"))) in squashed
    assert "… (" in r.stdout  # the megabyte value is cut with a marker
    assert file_digest(hostile_db) == before


def test_sql_json_is_exact_to_the_byte(hostile_db: Path) -> None:
    r = runner.invoke(app, ["sql", "--db", str(hostile_db), "SELECT label, value FROM hostile", "--json"])
    assert r.exit_code == 0, r.output
    _no_raw_controls(r.stdout)  # JSON escapes every control character
    rows = {label: value for label, value in json.loads(r.stdout)["rows"]}
    stored = stored_values(hostile_db)
    assert set(rows) == set(stored)
    for label, raw in stored.items():
        assert rows[label].encode("utf-8", "surrogateescape") == raw, label


def test_hostile_names_in_schema_and_tables(hostile_db: Path) -> None:
    r = runner.invoke(app, ["schema", "--db", str(hostile_db)], env=WIDE)
    assert r.exit_code == 0, r.output
    _no_raw_controls(r.stdout)
    for name in (HOSTILE_TABLE, *HOSTILE_COLUMNS):
        assert visible(name) in r.stdout, name
    r = runner.invoke(app, ["schema", "--db", str(hostile_db), "--json"])
    names = {t["name"] for t in json.loads(r.stdout)["tables"]}
    assert HOSTILE_TABLE in names
    quoted = '"' + HOSTILE_TABLE.replace('"', '""') + '"'
    r = runner.invoke(app, ["sql", "--db", str(hostile_db), f"SELECT * FROM {quoted}"], env=WIDE)
    assert r.exit_code == 0, r.output
    _no_raw_controls(r.stdout)
    for name in HOSTILE_COLUMNS:
        assert visible(name) in r.stdout


def test_ask_when_the_model_selects_hostile_values(hostile_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sql = "SELECT label, value FROM hostile WHERE id <= 12 ORDER BY id"
    monkeypatch.setitem(BACKENDS, "hostile-fake", lambda arg, **kw: FakeLLM(responder=lambda m, o: f"```sql\n{sql}\n```"))
    r = runner.invoke(app, ["ask", "--db", str(hostile_db), "--model", "hostile-fake", "--no-cache", "--trace",
                            "Show the odd values"], env=WIDE)
    assert r.exit_code == 0, r.output
    _no_raw_controls(r.stdout)
    squashed = _squash(r.stdout)
    for label, value in HOSTILE_VALUES[:12]:
        assert _squash(visible(value, max_chars=200)) in squashed, label
    # the prompt panel shows the schema's sample values literally too
    assert "prompt 1 of" in r.stdout


def test_errors_show_paths_and_hints_exactly(tmp_path: Path) -> None:
    missing = tmp_path / "[x]" / "a.sqlite"
    r = runner.invoke(app, ["sql", "--db", str(missing), "SELECT 1"], env=WIDE)
    assert r.exit_code == 2
    assert str(missing) in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["sql", "--db", "/tmp/\x1b]0;t\x07.sqlite", "SELECT 1"], env=WIDE)
    assert r.exit_code == 2
    _no_raw_controls(r.output)
    assert "\\x1b]0;t\\x07" in r.output


def test_driver_hint_names_the_extra() -> None:
    console = Console(width=200, color_system=None, markup=False)
    err = MissingDependencyError("no driver installed for 'postgresql' databases",
                                 hint="Install it with: pip install 'sqlweave[postgres]'")
    with console.capture() as cap:
        display.print_error(console, err)
    assert "pip install 'sqlweave[postgres]'" in cap.get()
    with console.capture() as cap:
        display.print_error(console, DatabaseNotFoundError("no database file at '/tmp/[/bold]/a.sqlite'"))
    assert "/tmp/[/bold]/a.sqlite" in cap.get()


def test_markup_in_a_cell_does_not_raise_or_vanish(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "m.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (v TEXT)")
    conn.executemany("INSERT INTO t VALUES (?)", [("[/bold] closing",), ("a[b]c",), ("[bold]",)])
    conn.commit()
    conn.close()
    r = runner.invoke(app, ["sql", "--db", str(path), "SELECT v FROM t"], env=WIDE)
    assert r.exit_code == 0, r.output
    for v in ("[/bold] closing", "a[b]c", "[bold]"):
        assert v in r.stdout


def test_a_result_too_wide_for_the_terminal_is_shown_row_by_row_and_still_as_data(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "wide.sqlite"
    names = [f"measurement_{i}" for i in range(9)]
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE t ({', '.join(n + ' TEXT' for n in names)})")
        conn.execute(f"INSERT INTO t VALUES ({', '.join('?' * len(names))})",
                     ["[bold]kept[/bold]", "esc \x1b[31mred"] + [f"value number {i}" for i in range(7)])
    sql = "SELECT * FROM t"
    narrow = runner.invoke(app, ["sql", "--db", str(path), sql], env={"COLUMNS": "80"})
    assert narrow.exit_code == 0, narrow.output
    lines = narrow.stdout.splitlines()
    assert "row 1" in lines[0] and "1 row" in lines[-1]
    assert any(line.split() == ["measurement_8", "value", "number", "6"] for line in lines)  # whole, not cut to m…
    assert "[bold]kept[/bold]" in narrow.stdout and "esc \\x1b[31mred" in narrow.stdout and "\x1b" not in narrow.stdout
    wide = runner.invoke(app, ["sql", "--db", str(path), sql], env={"COLUMNS": "400"})
    assert "row 1" not in wide.stdout and "┃ measurement_0" in wide.stdout  # it fits: one table


# --- CSV and logs ---------------------------------------------------------------------------------------------


def test_csv_neutralises_formulas_and_raw_keeps_them(hostile_db: Path) -> None:
    import csv
    import io

    r = runner.invoke(app, ["sql", "--db", str(hostile_db), "SELECT label, value FROM hostile WHERE label <> 'megabyte'",
                            "--csv"])
    assert r.exit_code == 0, r.output
    cells = {row[0]: row[1] for row in csv.reader(io.StringIO(r.stdout_bytes.decode(), newline=""))}
    for label, value in HOSTILE_VALUES:
        if value.startswith(("=", "+", "-", "@", "\t", "\r")):
            assert cells[label] == "'" + value, label
        else:
            assert cells[label] == value, label
    assert cells["invalid-utf8"] == INVALID_UTF8.decode("utf-8", "replace")
    r = runner.invoke(app, ["sql", "--db", str(hostile_db), "SELECT label, value FROM hostile WHERE label <> 'megabyte'",
                            "--raw-csv"])
    raw = {row[0]: row[1] for row in csv.reader(io.StringIO(r.stdout_bytes.decode(), newline=""))}
    assert raw["formula-equals"] == dict(HOSTILE_VALUES)["formula-equals"]


def test_csv_keeps_numbers_as_numbers() -> None:
    assert to_csv(("n", "s"), [(-3, "-3"), (1.5, None)]) == "n,s\r\n-3,'-3\r\n1.5,\r\n"


def test_json_log_lines_cannot_be_forged() -> None:
    import io

    stream = io.StringIO()
    logger = configure_json_logging(stream=stream, name="sqlweave.test-forge")
    for label, value in HOSTILE_VALUES:
        log_event(logger, "ask", question=value, label=label, name="clashing field")
    lines = stream.getvalue().split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(HOSTILE_VALUES)
    for (label, value), line in zip(HOSTILE_VALUES, lines):
        entry = json.loads(line)
        assert entry["question"] == value and entry["label"] == label and entry["field_name"] == "clashing field"
        assert all(ch.isprintable() or ch == " " for ch in line)


def test_database_values_reach_the_model_well_formed(hostile_db: Path) -> None:
    seen: list[str] = []

    def respond(messages, options) -> str:
        seen.append("\n".join(m.content for m in messages))
        return "SELECT COUNT(*) FROM hostile"

    from sqlweave.presets import build_pipeline

    db = Database.open(hostile_db)
    answer = build_pipeline("zero-shot").run("How many values?", db, FakeLLM(responder=respond))
    assert answer.ok, answer.error
    assert seen and all(text.encode("utf-8") for text in seen)  # no lone surrogate reaches a prompt


def test_floats_show_fifteen_significant_digits_in_the_result_table() -> None:
    # A sum of prices is stored as its binary rounding; the table shows it as SQLite's shell does.
    values = ((3501.4999999999995, 3.0, 7, "3501.4999999999995"), (0.1 + 0.2, 1e-07, None, "x"))
    result = QueryResult("SELECT", ("total", "mean", "n", "label"), values, False, 0.0)
    console = Console(width=200, color_system=None, force_terminal=False)
    with console.capture() as cap:
        console.print(display.result_table(result))
    rows = [line.strip("│ ").split("│") for line in cap.get().splitlines() if line.startswith("│")]
    assert [[c.strip() for c in r] for r in rows] == [["3501.5", "3.0", "7", "3501.4999999999995"],
                                                      ["0.3", "1e-07", "NULL", "x"]]  # text stays as written
