"""Data files asked about like a database: a CSV, TSV, Parquet, JSON or Excel file, or a folder of them.

DuckDB reads each file into a table (its type detection: numbers, dates, quoted fields, the delimiter) of a DuckDB
database built in sqlweave's cache, ``<cache>/datafiles/``, which :class:`~sqlweave.db.Database` then opens
read-only like any DuckDB file: a query reads only that copy (DuckDB's external access is off), and the files
themselves are never written. A table is named after its file (``sales 2024.csv`` -> ``sales_2024``), and the
keys its data shows are declared on it (:mod:`sqlweave.db.infer_keys`: ``customers.customer_id`` a primary key,
``orders.customer_id`` a foreign key to it). An Excel workbook (``.xlsx``, read by openpyxl: the values its cells
hold, first row the column names) gives a table per sheet with data: named after the file when it has one,
``<file>_<sheet>`` when it has more. A column whose values far down break the type DuckDB guessed from the first
rows is typed from every row.

The copy is built again when a file is added, removed or changed (its size or modification time), and the copy it
replaces is deleted. It is written under a temporary name and renamed when whole, so an interrupted build leaves
nothing that a later run would take for a database.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "sales 2024.csv").write_text("region,amount\\nNorth,10.5\\nSouth,4\\n")
>>> [f.name for f in data_files(folder)]
['sales 2024.csv']
>>> path = data_database(folder, cache=folder / "cache")
>>> import duckdb
>>> duckdb.connect(str(path), read_only=True).execute("SELECT SUM(amount) FROM sales_2024").fetchone()
(14.5,)
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from ..errors import DatabaseError, DatabaseNotFoundError, MissingDependencyError
from ..files import private_file, private_folder
from .infer_keys import declare_keys, infer_keys

#: File name endings read as data, and the DuckDB reader of each.
READERS = {
    ".csv": "read_csv", ".tsv": "read_csv", ".txt": "read_csv", ".csv.gz": "read_csv", ".tsv.gz": "read_csv",
    ".parquet": "read_parquet", ".json": "read_json", ".jsonl": "read_json", ".ndjson": "read_json",
    ".json.gz": "read_json", ".jsonl.gz": "read_json", ".xlsx": "xlsx",
}
_KINDS = "CSV, TSV, Parquet, JSON or Excel (.xlsx)"
#: How the copies are built: a copy built another way (an earlier sqlweave) is built again.
_BUILD = 4


#: The endings, longest first (``.csv.gz`` is tried before ``.csv``).
_ENDINGS = sorted(READERS, key=len, reverse=True)


def _ending(path: Path) -> str | None:
    """The data file ending of ``path``'s name (case ignored), when the name is more than the ending."""
    name = path.name.lower()
    return next((e for e in _ENDINGS if name.endswith(e) and len(name) > len(e)), None)


def _reader(path: Path) -> str | None:
    ending = _ending(path)
    return READERS[ending] if ending else None


def _stem(path: Path) -> str:
    ending = _ending(path)
    return path.name[: -len(ending)] if ending else path.stem


def reads_as_data(source: str | Path) -> bool:
    """Whether ``source`` is taken for data files rather than a database file: a folder, or a name with a data
    file's ending (``.csv``, ``.parquet``, ...), whether or not it exists yet."""
    path = Path(source).expanduser()
    return path.is_dir() or _reader(path) is not None


def data_name(source: str | Path) -> str:
    """The database's name for ``source``: the file's name without its ending, or the folder's name."""
    path = Path(source).expanduser()
    return path.name if path.is_dir() else _stem(path)


def data_files(source: str | Path) -> list[Path]:
    """The data files ``source`` names: itself, or the data files directly in the folder, sorted by name (``.txt``
    files count only when named on their own)."""
    path = Path(source).expanduser()
    if path.is_file():
        return [path] if _reader(path) else []
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and _reader(p) and not p.name.endswith(".txt")
                      and not p.name.startswith("."))
    return []


def table_names(files: list[Path]) -> dict[Path, str]:
    """A table name for each file: its name without the ending, every run of other characters than letters,
    digits and ``_`` made one ``_``; a name taken twice gets ``_2``, ``_3``, ...

    >>> list(table_names([Path("a/sales 2024.csv"), Path("b/Sales-2024.parquet"), Path("3rd.json")]).values())
    ['sales_2024', 'Sales_2024_2', 't_3rd']
    """
    return dict(zip(files, _unique_names([_stem(f) for f in files])))


def _unique_names(bases: list[str]) -> list[str]:
    names: list[str] = []
    taken: set[str] = set()
    for text in bases:
        base = re.sub(r"\W+", "_", text, flags=re.UNICODE).strip("_") or "data"
        if base[0].isdigit():
            base = f"t_{base}"
        name, n = base, 2
        while name.lower() in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name.lower())
        names.append(name)
    return names


def _sheets(path: Path) -> list[tuple[str, list[tuple]]]:
    """(sheet name, rows) of each sheet of workbook ``path`` that holds any value; rows are the cells' values
    (what Excel last computed for a formula), the first the header."""
    try:
        import openpyxl
    except ImportError as err:
        raise MissingDependencyError("reading Excel files needs openpyxl",
                                     hint="Install it with: pip install 'sqlweave[duckdb]'") from err
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as err:  # noqa: BLE001 - zipfile, XML and openpyxl errors alike mean "not a workbook"
        raise DatabaseError(f"cannot read {str(path)!r} as an Excel (.xlsx) file: {err}",
                            hint="Check the file's format, or leave it out of the folder.") from err
    try:
        out = []
        for sheet in book.worksheets:
            rows = [r for r in sheet.iter_rows(values_only=True) if any(v is not None for v in r)]
            if rows:
                out.append((sheet.title, rows))
        return out
    finally:
        book.close()


def _sheet_csv(rows: list[tuple], target: Path) -> None:
    """``rows`` as a CSV file DuckDB reads with its types: the header's empty or repeated names filled in."""
    import csv

    width = max(len(r) for r in rows)
    header, seen = [], set()
    for i, v in enumerate(list(rows[0]) + [None] * (width - len(rows[0])), 1):
        name = str(v).strip() if v is not None and str(v).strip() else f"column_{i}"
        while name.lower() in seen:
            name = f"{name}_{i}"
        seen.add(name.lower())
        header.append(name)
    with target.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for r in rows[1:]:
            writer.writerow([_cell(v) for v in list(r) + [None] * (width - len(r))])
    private_file(target)


def _cell(value: object) -> object:
    """A cell's value as CSV text DuckDB types back: Excel keeps a date as a datetime at midnight."""
    import datetime as dt

    if value is None:
        return ""
    if isinstance(value, dt.datetime) and value.time() == dt.time(0):
        return value.date().isoformat()
    return value


def source_state(source: str | Path) -> tuple[tuple[str, int, int], ...]:
    """What a copy of ``source`` is built from: each data file's path, size and time (empty when there is none).

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.csv").write_text("x\\n1\\n")
    >>> [(pathlib.Path(f).name, size) for f, size, _ in source_state(folder)]
    [('a.csv', 4)]
    """
    return _state(data_files(source))


def _state(files: list[Path]) -> tuple[tuple[str, int, int], ...]:
    state = []
    for f in files:
        try:
            st = f.stat()
        except OSError:  # removed while the folder was read
            continue
        state.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(state)


def data_database(source: str | Path, *, cache: Path | None = None, keys: bool = True) -> Path:
    """The DuckDB database holding ``source``'s data files as tables (built now if it is missing or out of date),
    with the keys their data shows unless ``keys`` is false.

    Raises :class:`~sqlweave.errors.DatabaseNotFoundError` when ``source`` holds no data file,
    :class:`~sqlweave.errors.DatabaseError` when DuckDB cannot read one (the message names it), and
    :class:`~sqlweave.errors.MissingDependencyError` without DuckDB.
    """
    path = Path(source).expanduser().resolve()
    files = data_files(path)
    if not files:
        if not path.exists():
            raise DatabaseNotFoundError(f"no data file at {str(source)!r}")
        what = "a folder without" if path.is_dir() else "not one of the"
        raise DatabaseNotFoundError(f"{str(source)!r} is {what} data files sqlweave reads ({_KINDS})")
    try:
        import duckdb
    except ImportError as err:
        raise MissingDependencyError(
            "reading data files needs DuckDB", hint="Install it with: pip install 'sqlweave[duckdb]'") from err
    if cache is None:
        from ..config import cache_dir

        cache = cache_dir()
    folder = cache / "datafiles"
    place = hashlib.sha256(str(path).encode()).hexdigest()[:16]
    stats = list(_state(files))
    state = hashlib.sha256(repr((_BUILD, keys, duckdb.__version__, stats)).encode()).hexdigest()[:16]
    variant = f"{place}-{'keys' if keys else 'nokeys'}-"  # a copy of this source, with or without keys
    built = folder / f"{variant}{state}.duckdb"
    if built.is_file():
        return built
    private_folder(folder)
    partial = folder / f".{built.name}.{os.getpid()}.partial"
    partial.unlink(missing_ok=True)
    sheet_csv = folder / f".{built.name}.{os.getpid()}.sheet.csv"
    try:
        # (file, sheet rows or None, name before it is made unique): a table each
        pieces: list[tuple[Path, list[tuple] | None, str]] = []
        for f in files:
            if _reader(f) != "xlsx":
                pieces.append((f, None, _stem(f)))
                continue
            sheets = _sheets(f)
            pieces += [(f, rows, _stem(f) if len(sheets) == 1 else f"{_stem(f)}_{title}") for title, rows in sheets]
        tables = _unique_names([base for _, _, base in pieces])
        with duckdb.connect(str(partial)) as con:
            for (f, rows, _), table in zip(pieces, tables):
                quoted = '"' + table.replace('"', '""') + '"'
                if rows is None:
                    reader, options, source = _reader(f), "", f
                else:  # a sheet, through a CSV file whose first row is always its header
                    _sheet_csv(rows, sheet_csv)
                    reader, options, source = "read_csv", ", header = true", sheet_csv
                try:
                    try:
                        con.execute(f"CREATE TABLE {quoted} AS SELECT * FROM {reader}(?{options})", [str(source)])
                    except duckdb.ConversionException:
                        if reader == "read_parquet":
                            raise
                        # a value far down that the types guessed from the first rows do not hold (a lap time
                        # in a column of speeds): the types are read from every row instead
                        con.execute(f"CREATE TABLE {quoted} AS SELECT * FROM {reader}(?{options}, sample_size = -1)",
                                    [str(source)])
                except duckdb.Error as err:
                    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                    raise DatabaseError(f"cannot read {str(f)!r} as a {_KINDS} file: {first}",
                                        hint="Check the file's format, or leave it out of the folder.") from err
            if keys:
                declare_keys(con, infer_keys(con, tables))
        os.replace(partial, built)
    finally:
        partial.unlink(missing_ok=True)
        sheet_csv.unlink(missing_ok=True)
        Path(f"{partial}.wal").unlink(missing_ok=True)
    for old in folder.glob(f"{variant}*.duckdb"):
        if old != built:
            old.unlink(missing_ok=True)
    return built
