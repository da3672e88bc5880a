"""Data files asked about like a database: a CSV, TSV, Parquet or JSON file, or a folder of them.

DuckDB reads each file into a table (its type detection: numbers, dates, quoted fields, the delimiter) of a DuckDB
database built in sqlweave's cache, ``<cache>/datafiles/``, which :class:`~sqlweave.db.Database` then opens
read-only like any DuckDB file: a query reads only that copy (DuckDB's external access is off), and the files
themselves are never written. A table is named after its file (``sales 2024.csv`` -> ``sales_2024``).

The copy is built again when a file is added, removed or changed (its size or modification time), and the copy it
replaces is deleted. It is written under a temporary name and renamed when whole, so an interrupted build leaves
nothing that a later run would take for a database.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "sales 2024.csv").write_text("region,amount\\nNorth,10.5\\nSouth,4\\n")
>>> is_data_source(folder / "sales 2024.csv"), is_data_source(folder)
(True, True)
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

#: File name endings read as data, and the DuckDB reader of each.
READERS = {
    ".csv": "read_csv", ".tsv": "read_csv", ".txt": "read_csv", ".csv.gz": "read_csv", ".tsv.gz": "read_csv",
    ".parquet": "read_parquet", ".json": "read_json", ".jsonl": "read_json", ".ndjson": "read_json",
    ".json.gz": "read_json", ".jsonl.gz": "read_json",
}
_KINDS = "CSV, TSV, Parquet or JSON"


def _reader(path: Path) -> str | None:
    name = path.name.lower()
    for ending in sorted(READERS, key=len, reverse=True):
        if name.endswith(ending) and len(name) > len(ending):
            return READERS[ending]
    return None


def _stem(path: Path) -> str:
    name = path.name
    for ending in sorted(READERS, key=len, reverse=True):
        if name.lower().endswith(ending):
            return name[: -len(ending)]
    return path.stem


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


def is_data_source(source: str | Path) -> bool:
    """Whether ``source`` is a data file, or a folder holding at least one, that :func:`data_database` reads."""
    return bool(data_files(source))


def table_names(files: list[Path]) -> dict[Path, str]:
    """A table name for each file: its name without the ending, every run of other characters than letters,
    digits and ``_`` made one ``_``; a name taken twice gets ``_2``, ``_3``, ...

    >>> list(table_names([Path("a/sales 2024.csv"), Path("b/Sales-2024.parquet"), Path("3rd.json")]).values())
    ['sales_2024', 'Sales_2024_2', 't_3rd']
    """
    names: dict[Path, str] = {}
    taken: set[str] = set()
    for f in files:
        base = re.sub(r"\W+", "_", _stem(f), flags=re.UNICODE).strip("_") or "data"
        if base[0].isdigit():
            base = f"t_{base}"
        name, n = base, 2
        while name.lower() in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name.lower())
        names[f] = name
    return names


def data_database(source: str | Path, *, cache: Path | None = None) -> Path:
    """The DuckDB database holding ``source``'s data files as tables (built now if it is missing or out of date).

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
    stats = [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files]
    state = hashlib.sha256(repr((duckdb.__version__, stats)).encode()).hexdigest()[:16]
    built = folder / f"{place}-{state}.duckdb"
    if built.is_file():
        return built
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{built.name}.{os.getpid()}.partial"
    partial.unlink(missing_ok=True)
    try:
        with duckdb.connect(str(partial)) as con:
            for f, table in table_names(files).items():
                quoted = '"' + table.replace('"', '""') + '"'
                try:
                    con.execute(f"CREATE TABLE {quoted} AS SELECT * FROM {_reader(f)}(?)", [str(f)])
                except duckdb.Error as err:
                    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                    raise DatabaseError(f"cannot read {str(f)!r} as a {_KINDS} file: {first}",
                                        hint="Check the file's format, or leave it out of the folder.") from err
        os.replace(partial, built)
    finally:
        partial.unlink(missing_ok=True)
        Path(f"{partial}.wal").unlink(missing_ok=True)
    for old in folder.glob(f"{place}-*.duckdb"):
        if old != built:
            old.unlink(missing_ok=True)
    return built
