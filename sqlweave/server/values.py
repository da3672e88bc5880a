"""Values as the HTTP door writes them: JSON-safe cells, rows, the chart, a stage's event, a stored time.

>>> json_value({"n": float("nan"), "b": b"ab"})
{'n': 'NaN', 'b': "X'6162'"}
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..cells import json_cell
from ..chart import NO_CHART, choose_chart
from ..db.connection import QueryResult
from ..pipeline import TraceEntry
from ..stages.labels import stage_label
from ..text import SHOWN_BYTES



def json_value(v: Any) -> Any:
    """A value as the HTTP door writes it: :func:`~sqlweave.cells.json_cell`, bytes cut as tables cut them."""
    return json_cell(v, max_bytes=SHOWN_BYTES)


def rows_out(result: QueryResult | None) -> list[list[Any]]:
    """A result's rows as JSON data (no rows for no result)."""
    return [] if result is None else [[json_value(v) for v in row] for row in result.rows]


def chart_out(result: QueryResult | None) -> dict[str, Any]:
    """The chart a result suggests, as JSON data (no chart when none fits, or choosing one fails)."""
    try:
        chart = choose_chart(result) if result is not None else NO_CHART
    except Exception:  # noqa: BLE001 - a chart is a nicety; never fail an answer over it
        chart = NO_CHART
    return chart.as_dict()


def stage_event(entry: TraceEntry) -> dict[str, Any]:
    """A finished stage as the stream's ``stage`` event carries it."""
    d = entry.as_dict()
    return json_value({"label": stage_label(entry.stage), **{k: d[k] for k in (
        "stage", "seconds", "error", "sql", "notes", "prompt_tokens", "completion_tokens")}})


def stamp(v: Any) -> str:
    """A stored time as ISO 8601 text (a number is seconds since the epoch, UTC); ``""`` for none."""
    if v is None:
        return ""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return dt.datetime.fromtimestamp(v, dt.timezone.utc).isoformat()
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    return str(v)
