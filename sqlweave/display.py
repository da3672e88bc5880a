"""The terminal door: untrusted text shown literally, never as console markup or control sequences.

Everything here returns rich renderables built from :class:`rich.text.Text`, which rich never parses as
markup, from strings that went through :func:`sqlweave.text.visible` first (so no ESC, BEL, bidi
override or other hidden character reaches the terminal). Only sqlweave's own labels carry styles.

>>> from rich.console import Console
>>> from sqlweave.db.connection import QueryResult
>>> console = Console(width=60, color_system=None, force_terminal=False)
>>> result = QueryResult("SELECT", ("name",), (("[red]x[/red]",), ("a\\x1b[2Jb",), (None,)), False, 0.0)
>>> with console.capture() as cap:
...     console.print(result_table(result))
>>> print(cap.get().rstrip())
┏━━━━━━━━━━━━━━┓
┃ name         ┃
┡━━━━━━━━━━━━━━┩
│ [red]x[/red] │
│ a\\x1b[2Jb    │
│ NULL         │
└──────────────┘
     3 rows
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.panel import Panel
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from .cells import text_cell
from .text import DEFAULT_MAX_CHARS, visible

if TYPE_CHECKING:
    from .db.connection import QueryResult
    from .errors import SqlweaveError
    from .pipeline import Answer


def data(value: Any, *, style: str = "", max_chars: int | None = DEFAULT_MAX_CHARS,
         keep_newlines: bool = False) -> Text:
    """One untrusted value as a :class:`Text`: shown exactly as written, hidden characters as escapes."""
    return Text(visible(value, max_chars=max_chars, keep_newlines=keep_newlines), style=style)


def label(own: str, *parts: Any, style: str = "") -> Text:
    """sqlweave's own words ``own`` followed by untrusted ``parts`` (each shown literally).

    >>> label("columns like ", "[bold]x").plain
    'columns like [bold]x'
    """
    text = Text(own, style=style)
    for p in parts:
        text.append(visible(p, keep_newlines=True))
    return text


def sql(text: str | None) -> RenderableType:
    """SQL (from the model or the user) highlighted, with hidden characters made visible."""
    return Syntax(visible(text or "", max_chars=None, keep_newlines=True), "sql", word_wrap=True)


def cell(value: Any) -> Any:
    """A result value as a table shows it: a float to 15 significant digits, as SQLite's shell prints it, so a sum
    of prices reads ``3501.5`` rather than the binary rounding ``3501.4999999999995``; arrays, structs, intervals,
    decimals and bytes as :func:`~sqlweave.cells.text_cell` writes them. Text, integers and ``NULL`` as they are.
    JSON, MCP and exported files keep every digit.

    >>> cell(0.1 + 0.2), cell(3501.4999999999995), cell(3.0), cell(1e-07), cell(float("nan")), cell(7), cell("0.1")
    ('0.3', '3501.5', '3.0', '1e-07', 'NaN', 7, '0.1')
    >>> cell([1.5, None]), cell({"a": "b"})
    ('[1.5, null]', '{"a": "b"}')
    """
    if value is None or isinstance(value, (str, int)):
        return value
    if not isinstance(value, float) or not math.isfinite(value):
        return text_cell(value)
    shown = format(value, ".15g")
    return shown if any(ch in shown for ch in ".e") else shown + ".0"  # still reads as a float: 3.0, not 3


def result_table(result: "QueryResult", limit: int = 50, max_chars: int = 200) -> Table:
    """The first ``limit`` rows as a table; column names and values shown literally (floats by :func:`cell`), long
    values cut."""
    table = Table(show_lines=False, header_style="bold cyan")
    for c in result.columns:
        table.add_column(data(c, max_chars=max_chars))
    for row in result.rows[:limit]:
        table.add_row(*(data(cell(v), max_chars=max_chars) for v in row))
    shown = min(limit, result.row_count)
    if result.row_count > limit or result.truncated:
        table.caption = f"{result.row_count} rows{' (capped)' if result.truncated else ''}; first {shown} shown"
    else:
        table.caption = f"{result.row_count} row{'s' if result.row_count != 1 else ''}"
    return table


def result_view(console: Console, result: "QueryResult", limit: int = 50, max_chars: int = 200) -> RenderableType:
    """:func:`result_table`, or, when its columns would not fit ``console``'s width (each squeezed to a sliver, values
    wrapped letter by letter), every row as a list of ``column  value`` lines, as psql's expanded display.

    >>> from sqlweave.db.connection import QueryResult
    >>> wide = QueryResult("", tuple(f"column_{i}" for i in range(12)), ((1,) * 12,), False, 0.0)
    >>> narrow = Console(width=60, file=__import__("io").StringIO(), color_system=None)
    >>> narrow.print(result_view(narrow, wide)); print(narrow.file.getvalue().splitlines()[:3])
    ['────────────────────────── row 1 ───────────────────────────', 'column_0    1', 'column_1    1']
    """
    table = result_table(result, limit, max_chars)
    natural = Measurement.get(console, console.options.update(width=1_000_000), table).maximum  # measure() clamps
    if len(result.columns) < 3 or natural <= console.width:
        return table
    parts: list[RenderableType] = []
    for i, row in enumerate(result.rows[:limit], 1):
        parts.append(Rule(f"row {i}", style="dim"))
        grid = Table.grid(padding=(0, 3))
        grid.add_column(style="bold cyan", no_wrap=False)
        grid.add_column()
        for name, value in zip(result.columns, row):
            grid.add_row(data(name, max_chars=max_chars), data(cell(value), max_chars=max_chars))
        parts.append(grid)
    parts.append(Text(str(table.caption or ""), style="dim"))
    return Group(*parts)


def records_table(rows: Iterable[Mapping[str, Any]], title: str | Text = "", max_chars: int = 200) -> Table:
    """Dictionaries (tool results, examples) as a table, every key and value shown literally."""
    rows = list(rows)
    table = Table(title=title if isinstance(title, Text) else Text(title))
    for key in (rows[0] if rows else {}):
        table.add_column(data(key))
    for r in rows:
        table.add_row(*(data(v, max_chars=max_chars) for v in r.values()))
    return table


def print_error(console: Console, err: "SqlweaveError") -> None:
    """``Error: message`` and ``Hint: hint``; paths, URLs, names and driver messages shown exactly."""
    console.print(Text.assemble(("Error: ", "bold red"), visible(err.message, max_chars=4000, keep_newlines=True)))
    if err.hint:
        console.print(Text.assemble(("Hint: ", "yellow"), visible(err.hint, max_chars=4000, keep_newlines=True)))


def trace_table(answer: "Answer") -> Table:
    """One row per stage: seconds, tokens and notes (notes hold model and database text: shown literally)."""
    table = Table(title="Trace", header_style="bold magenta")
    for col in ("stage", "seconds", "prompt tok", "output tok", "notes"):
        table.add_column(col)
    for e in answer.trace:
        notes = Text()
        if e.error:
            notes.append(visible(e.error, max_chars=500), style="red")
            notes.append(" ")
        notes.append(visible(", ".join(f"{k}={v}" for k, v in e.notes.items() if k != "sql"), max_chars=500))
        table.add_row(data(e.stage), f"{e.seconds:.3f}", str(e.usage.prompt_tokens),
                      str(e.usage.completion_tokens), notes)
    table.caption = (f"total {answer.seconds:.2f} s, {answer.model_calls} model call(s), "
                     f"{answer.usage.prompt_tokens} prompt + {answer.usage.completion_tokens} output tokens")
    return table


def model_calls(answer: "Answer") -> list[Panel]:
    """Every prompt and model output of the answer, as panels (prompts carry schema values: shown literally)."""
    panels: list[Panel] = []
    for e in answer.trace:
        for i, call in enumerate(e.calls):
            prompt = "\n\n".join(f"[{m.role}]\n{m.content}" for m in call.messages)
            panels.append(Panel(data(prompt, max_chars=None, keep_newlines=True),
                                title=label(f"prompt {i + 1} of ", e.stage), border_style="dim"))
            output = "\n---\n".join(call.outputs)
            panels.append(Panel(data(output, max_chars=None, keep_newlines=True),
                                title=label(f"model output {i + 1}{' (cached)' if call.cached else ''} of ", e.stage),
                                border_style="dim"))
    return panels
