"""CSV export that a spreadsheet cannot turn into a formula (OWASP's CSV injection guidance).

A cell whose text starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read as a formula
by Excel, LibreOffice and Google Sheets (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``). By default such a
cell is prefixed with a single quote, which spreadsheets show as text and do not evaluate; ``raw=True``
keeps every cell exactly as stored (for programs, not spreadsheets). Numbers are written as numbers, so
``-3`` stays a number; ``NULL`` is an empty cell. JSON output elsewhere stays exact: this is only for CSV.

>>> print(to_csv(("name", "note"), [("=1+1", "-3"), ("Ann", None), ("@SUM(A1)", -3)]).replace("\\r", ""), end="")
name,note
'=1+1,'-3
Ann,
'@SUM(A1),-3
>>> to_csv(("name",), [("=1+1",)], raw=True)
'name\\r\\n=1+1\\r\\n'
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from typing import Any, Iterable, Sequence

from .cells import text_cell
from .text import well_formed

#: First characters that make a spreadsheet read a cell as a formula.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise(cell: str) -> str:
    """``cell`` with a leading ``'`` when a spreadsheet would read it as a formula.

    >>> neutralise("=A1"), neutralise("plain"), neutralise("\\t=A1")
    ("'=A1", 'plain', "'\\t=A1")
    """
    return "'" + cell if cell.startswith(FORMULA_PREFIXES) else cell


def _cell(value: Any, raw: bool) -> Any:
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = well_formed(text_cell(value, max_bytes=None))  # every digit and every byte; arrays as JSON
    return text if raw or isinstance(value, (float, Decimal)) else neutralise(text)


def to_csv(columns: Sequence[Any], rows: Iterable[Sequence[Any]], *, raw: bool = False) -> str:
    """The result as CSV text (RFC 4180: quoting, ``\\r\\n`` line ends); formula-like cells neutralised unless ``raw``.

    Column names are cells too and get the same treatment. Text that held undecodable bytes is written
    with U+FFFD in their place (a CSV file is UTF-8).
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")  # RFC 4180; a cell holding \r or \n is then quoted
    writer.writerow([_cell(c, raw) for c in columns])
    for row in rows:
        writer.writerow([_cell(v, raw) for v in row])
    return buf.getvalue()
