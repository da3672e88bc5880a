"""A database value written the same way at every door (``sqlweave.cells``), and what each door does with it."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from sqlweave.cells import json_cell, text_cell
from sqlweave.db.connection import QueryResult
from sqlweave.display import result_table
from sqlweave.export import to_csv


def _strict_loads(text: str) -> Any:
    """JSON as a strict parser reads it: a bare NaN or Infinity is an error."""
    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.decimals(allow_nan=True, allow_infinity=True), st.text(), st.binary(max_size=40),
    st.datetimes(), st.dates(), st.times(), st.timedeltas(), st.uuids(),
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(st.one_of(st.text(max_size=5), st.integers()), inner, max_size=4)), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_every_value_is_strict_json_and_one_line_of_text(value: Any) -> None:
    _strict_loads(json.dumps(json_cell(value), allow_nan=False))
    _strict_loads(json.dumps(json_cell(value, exact_text=True), allow_nan=False))
    shown = text_cell(value)
    assert isinstance(shown, str)
    assert "Decimal(" not in shown and "datetime." not in shown  # never Python's notation
    if isinstance(value, (list, tuple, dict)):
        _strict_loads(shown)


@settings(max_examples=300, deadline=None)
@given(st.decimals(allow_nan=False, allow_infinity=False))
def test_a_decimal_keeps_its_value_whether_written_as_a_number_or_as_text(value: Decimal) -> None:
    written = json_cell(value)
    assert isinstance(written, (int, float, str))
    back = Decimal(repr(written)) if isinstance(written, float) else Decimal(written)
    assert back == value
    assert Decimal(text_cell(value)) == value


def test_the_forms_chosen() -> None:
    assert json_cell(Decimal("12.50")) == 12.5 and text_cell(Decimal("12.50")) == "12.50"
    assert json_cell(Decimal("12345678901234567.89")) == "12345678901234567.89"  # a float would drop digits
    assert json_cell(Decimal("1E+5000")) == "1E+5000"  # not an integer of 5,000 digits that json refuses to write
    assert json_cell(Decimal("-4200")) == -4200
    assert [json_cell(v) for v in (float("nan"), float("-inf"), Decimal("NaN"), Decimal("sNaN"))] == \
        ["NaN", "-Infinity", "NaN", "NaN"]
    assert json_cell(dt.timedelta(days=1, hours=2)) == "P1DT2H" == text_cell(dt.timedelta(days=1, hours=2))
    assert json_cell(b"\xde\xad") == "X'dead'" == text_cell(b"\xde\xad")
    assert json_cell(b"\x00" * 600, max_bytes=512).endswith("… (88 more bytes)")
    assert text_cell(["a", "b c", None]) == '["a", "b c", null]'
    assert text_cell({"k": [Decimal("1.5")], 3: "x"}) == '{"k": [1.5], "3": "x"}'
    assert json_cell("bad \udcff byte") == "bad \ufffd byte"
    assert json_cell("bad \udcff byte", exact_text=True) == "bad \udcff byte"
    assert text_cell(uuid.UUID(int=1)) == "00000000-0000-0000-0000-000000000001"


def _row_through_the_text_doors(columns: list[str], row: tuple[Any, ...]) -> tuple[dict[str, str], dict[str, str]]:
    result = QueryResult(sql="SELECT ...", columns=columns, rows=[row], truncated=False, elapsed_s=0.0)
    console = Console(file=io.StringIO(), width=400, color_system=None)
    console.print(result_table(result))
    lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    cells = [c.strip() for c in lines[3].split("│")[1:-1]]
    import csv

    csv_row = next(csv.reader(io.StringIO(to_csv(columns, [row]).splitlines()[1])))
    return dict(zip(columns, cells)), dict(zip(columns, csv_row))


def test_tables_and_csv_show_arrays_decimals_and_intervals_in_one_form() -> None:
    columns = ["tags", "prices", "doc", "price", "loss", "took", "ratio"]
    row = (["a", "b c"], [Decimal("1.50"), None], {"k": [1, 2]}, Decimal("12.50"), Decimal("-3.25"),
           dt.timedelta(hours=36), float("nan"))
    table, csv_cells = _row_through_the_text_doors(columns, row)
    expected = {"tags": '["a", "b c"]', "prices": "[1.5, null]", "doc": '{"k": [1, 2]}', "price": "12.50",
                "loss": "-3.25", "took": "P1DT12H", "ratio": "NaN"}
    assert table == expected  # was ['a', 'b c'], [Decimal('1.50'), None], 1 day, 12:00:00 and nan
    assert csv_cells == expected  # a negative decimal was written '-3.25, as a formula kept from running


def need_doors() -> None:
    from tests.extras import need_extra

    for extra in ("server", "mcp"):
        need_extra(extra)


def _duckdb_row(tmp_path: Path) -> tuple[str, str]:
    from tests.extras import duckdb_file, need_extra

    need_extra("duckdb")
    need_doors()
    path = duckdb_file(tmp_path / "types.duckdb",
                       "CREATE TABLE t AS SELECT ['a', 'b c'] AS tags, {'k': 1, 'v': [1.5, NULL]} AS doc, "
                       "MAP(['x'], [2]) AS m, 12345678901234567.891::DECIMAL(38,3) AS big, 1.10::DECIMAL(5,2) AS p, "
                       "INTERVAL 36 HOUR AS took, 'NaN'::DOUBLE AS ratio, '\\xDE\\xAD'::BLOB AS b, "
                       "170141183460469231731687303715884105727::HUGEINT AS huge")
    return str(path), "SELECT * FROM t"


EXPECTED_DUCKDB_JSON = {"tags": ["a", "b c"], "doc": {"k": 1, "v": [1.5, None]}, "m": {"x": 2},
                        "big": "12345678901234567.891", "p": 1.1, "took": "P1DT12H", "ratio": "NaN", "b": "X'dead'",
                        "huge": 170141183460469231731687303715884105727}


def test_duckdb_lists_structs_maps_and_decimals_through_the_cli_http_and_mcp(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from sqlweave.catalog import Catalog, DatabaseEntry
    from sqlweave.cli import app
    from sqlweave.llm import FakeLLM
    from sqlweave.mcp import SqlweaveTools

    path, sql = _duckdb_row(tmp_path)
    r = CliRunner().invoke(app, ["sql", "--db", path, "--json", sql])
    assert r.exit_code == 0, r.output
    out = _strict_loads(r.stdout)  # a NaN made this invalid JSON before
    assert dict(zip(out["columns"], out["rows"][0])) == EXPECTED_DUCKDB_JSON

    r = CliRunner().invoke(app, ["sql", "--db", path, "--csv", sql])
    assert r.exit_code == 0, r.output
    import csv

    header, row = list(csv.reader(io.StringIO(r.stdout)))
    assert dict(zip(header, row))["doc"] == '{"k": 1, "v": [1.5, null]}'  # was {'k': 1, 'v': [Decimal('1.5'), None]}

    catalog = Catalog({"types": DatabaseEntry("types", path)})
    try:
        tools = SqlweaveTools(catalog, FakeLLM([]))
        got = tools.run_sql("types", sql)
        assert dict(zip(got.columns, got.rows[0])) == EXPECTED_DUCKDB_JSON
        server_row_is(catalog, "types", sql, EXPECTED_DUCKDB_JSON, tmp_path)
    finally:
        catalog.close()


def server_row_is(catalog: Any, name: str, sql: str, expected: dict[str, Any], tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from sqlweave.llm import FakeLLM
    from sqlweave.server import ServerSettings, create_app

    settings = ServerSettings(catalog, llm=FakeLLM([]), api_key="", rate_limit_per_minute=0,
                              conversation_url=f"sqlite:///{tmp_path / 'c.sqlite'}")
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        r = client.post("/api/sql", json={"database": name, "sql": sql})
        assert r.status_code == 200, r.text
        body = _strict_loads(r.text)
        assert dict(zip(body["columns"], body["rows"][0])) == expected


@settings(max_examples=300, deadline=None)
@given(st.timedeltas())
def test_an_interval_reads_back_as_the_same_length_of_time(value: dt.timedelta) -> None:
    import re

    shown = json_cell(value)
    m = re.fullmatch(r"(-?)P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", shown)
    assert m, shown
    sign, days, hours, minutes, seconds = m.groups()
    total = (Decimal(days or 0) * 86400 + Decimal(hours or 0) * 3600 + Decimal(minutes or 0) * 60
             + Decimal(seconds or 0))
    expected = Decimal(value.days) * 86400 + value.seconds + Decimal(value.microseconds) / 10**6
    assert (-total if sign else total) == expected
    assert "Y" not in shown and "W" not in shown  # days are not folded into calendar years (pydantic says P2Y)


def test_prompts_show_result_values_as_json_carries_them_not_as_python_objects(tmp_path: Path) -> None:
    """The revision chain's feedback and the selector's preview read a DuckDB result's decimals and dates as the
    model can read them (they showed ``Decimal('1.50')`` and ``datetime.date(2024, 1, 2)``)."""
    from tests.extras import duckdb_file

    import sqlweave
    from sqlweave.llm import FakeLLM
    from sqlweave.stages.choose import preview

    path = duckdb_file(tmp_path / "sales.duckdb", "CREATE TABLE sale (price DECIMAL(6,2), day DATE, tags VARCHAR[]); "
                       "INSERT INTO sale VALUES (1.50, DATE '2024-01-02', ['a', 'b'])")
    llm = FakeLLM(responder=lambda *_: "SELECT price, day, tags FROM sale")
    answer = sqlweave.connect(path, llm=llm, pipeline="repair+revise", cache=False).ask("Prices and days of sales?")
    assert answer.result is not None and len(llm.calls) >= 2
    shown = "\n".join(m.content for messages, _ in llm.calls for m in messages)
    assert "row(s): (1.5, '2024-01-02', ['a', 'b'])" in shown
    assert "Decimal(" not in shown and "datetime." not in shown
    assert preview(answer.result) == '1 row (price, day, tags): (1.50, 2024-01-02, ["a", "b"])'
