"""A database value as every door writes it: one rule for JSON (HTTP, MCP, ``--json``), one for text (tables, CSV).

Drivers return more than numbers and text: PostgreSQL and DuckDB give arrays and lists, ``jsonb`` and structs,
exact decimals, intervals, UUIDs, ranges and addresses; SQLite gives blobs. Each door used to write them its own
way (a numeric array showed as ``[Decimal('1.5'), None]``, a NaN made ``--json`` print JSON no parser reads).
Here they are written once:

- :func:`json_cell`: a value JSON carries without loss where it can. Finite numbers stay numbers; a decimal whose
  digits a float would change stays text with every digit; NaN and infinities are the strings ``"NaN"``,
  ``"Infinity"``, ``"-Infinity"`` (as PostgreSQL prints them; JSON has no such numbers); arrays, lists and
  structs stay arrays and objects; dates and times are ISO 8601, intervals ISO 8601 durations; bytes are a hex
  literal ``X'...'``; anything else is its text.
- :func:`text_cell`: the same value as one line of text: arrays and structs as their JSON, so a cell never
  shows Python's notation.

>>> from decimal import Decimal
>>> json_cell([Decimal("1.5"), None, float("nan")])
[1.5, None, 'NaN']
>>> text_cell({"k": [1, 2]}), text_cell(b"\\x00\\xff"), text_cell(Decimal("1.10"))
('{"k": [1, 2]}', "X'00ff'", '1.10')
"""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any

from .text import SHOWN_BYTES, as_text, hex_literal, well_formed

#: Decimals with fewer integer digits than this are written as JSON integers (exact in every parser's int64).
_EXACT_INT_DIGITS = 18


def _non_finite(value: float | Decimal) -> str:
    if value.is_nan() if isinstance(value, Decimal) else math.isnan(value):  # a signalling NaN too
        return "NaN"
    return "-Infinity" if value < 0 else "Infinity"


def iso_duration(value: dt.timedelta) -> str:
    """An interval as an ISO 8601 duration in days and time (``P1DT2H``), which JSON clients and pandas read back.

    Days are never folded into months or years: drivers have already turned a month into 30 days (DuckDB) or
    a year into 365 (psycopg), and a ``P2Y`` would claim a calendar length the value does not have.

    >>> iso_duration(dt.timedelta(days=730)), iso_duration(-dt.timedelta(seconds=90)), iso_duration(dt.timedelta())
    ('P730D', '-PT1M30S', 'PT0S')
    >>> iso_duration(dt.timedelta(days=1, hours=2, microseconds=500))
    'P1DT2H0.0005S'
    """
    sign = "-" if value < dt.timedelta(0) else ""
    value = abs(value)
    hours, rest = divmod(value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    second = f"{seconds}.{value.microseconds:06d}".rstrip("0") if value.microseconds else str(seconds)
    clock = "".join(f"{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M")) if n)
    clock += f"{second}S" if seconds or value.microseconds else ""
    shown = (f"{value.days}D" if value.days else "") + (f"T{clock}" if clock else "")
    return f"{sign}P{shown or 'T0S'}"


def _decimal(value: Decimal) -> int | float | str:
    if not value.is_finite():
        return _non_finite(value)
    if value == value.to_integral_value() and value.adjusted() < _EXACT_INT_DIGITS:
        return int(value)
    as_float = float(value)
    # A float that reads back as the same number keeps it a number; otherwise every digit, as text.
    return as_float if math.isfinite(as_float) and Decimal(repr(as_float)) == value else str(value)


def json_cell(value: Any, *, max_bytes: int | None = None, exact_text: bool = False) -> Any:
    """``value`` as JSON can carry it (module docstring), recursively for arrays, lists and structs.

    Text is made well-formed (an undecodable byte becomes U+FFFD) unless ``exact_text``, which keeps it as
    stored (lone surrogates, which ``json.dumps`` writes as ``\\udcXX`` escapes). The result always passes
    ``json.dumps(..., allow_nan=False)``.

    >>> import datetime as dt
    >>> [json_cell(v) for v in (7, 2.5, float("inf"), Decimal("12.50"), Decimal("12345678901234567.89"))]
    [7, 2.5, 'Infinity', 12.5, '12345678901234567.89']
    >>> json_cell({"at": dt.datetime(2024, 1, 2, 3, 4), "took": dt.timedelta(hours=2), 1: b"\\x01"})
    {'at': '2024-01-02T03:04:00', 'took': 'PT2H', '1': "X'01'"}
    """
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _non_finite(value)
    if isinstance(value, str):
        return value if exact_text else well_formed(value)
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return hex_literal(value, max_bytes)
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return iso_duration(value)
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else text_cell(k, max_bytes=max_bytes)):
                json_cell(v, max_bytes=max_bytes, exact_text=exact_text) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_cell(v, max_bytes=max_bytes, exact_text=exact_text) for v in value]
    text = as_text(value)  # UUIDs, ranges, network addresses, geometric types: the driver's text
    return text if exact_text else well_formed(text)


def text_cell(value: Any, *, max_bytes: int | None = SHOWN_BYTES) -> str:
    """``value`` as the text of one cell: ``NULL``, numbers as written (decimals with every digit), arrays and
    structs as their JSON, intervals as ISO 8601 durations, bytes as ``X'...'``. Never raises.

    >>> [text_cell(v) for v in (None, True, 3, float("nan"), ["a", "b c"], (1, None), dt.timedelta(days=3))]
    ['NULL', 'True', '3', 'NaN', '["a", "b c"]', '[1, null]', 'P3D']
    """
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else _non_finite(value)
    if isinstance(value, Decimal):
        return str(value) if value.is_finite() else _non_finite(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return hex_literal(value, max_bytes)
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        return json.dumps(json_cell(value, max_bytes=max_bytes), ensure_ascii=False, allow_nan=False)
    if isinstance(value, dt.timedelta):
        return iso_duration(value)
    return as_text(value)


__all__ = ["iso_duration", "json_cell", "text_cell"]
