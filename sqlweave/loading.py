"""Copy a database into PostgreSQL, DuckDB or SQLite: tables, rows, primary and foreign keys, comments.

Spider's and BIRD's SQLite files are loose: a column declared ``INT`` holds text, a ``DATE`` column holds
"June 5, 2012", text is not always valid UTF-8, and foreign keys point at columns that are not keys or at
rows that do not exist. The loader reads what is stored and gives each column the strictest type every value
fits (integer, double, date, timestamp, varchar(n), text; a column of numbers with a few empty strings keeps
its number type, the empty strings becoming NULL), replaces invalid UTF-8 and NUL characters, and keeps
every primary and foreign key the data allows (a foreign key to a column that is unique in the data gets a
UNIQUE constraint on it; one the rows violate is kept ``NOT VALID`` on PostgreSQL and left out on DuckDB,
which would refuse the rows). Names are lower-cased on PostgreSQL, where unquoted names fold to lower case,
so that ``SELECT Name FROM Singer`` runs there as it does on SQLite, and whole numbers stored as text ('2014')
become integers on PostgreSQL and DuckDB, which refuse to compare text with numbers (``year = 2014``) where
SQLite converts. The report says what was changed.

Other sources (a DuckDB file, a PostgreSQL URL) are read read-only through :class:`~sqlweave.db.Database`.

>>> import tempfile, pathlib
>>> from sqlweave.db.demo import demo_database_path
>>> out = pathlib.Path(tempfile.mkdtemp()) / "demo.sqlite"
>>> report = load_database(demo_database_path(), out)
>>> report.tables["customers"] > 0, len(report.foreign_keys) >= 5
(True, True)

Command line: ``python -m sqlweave.loading SOURCE TARGET [--descriptions FILE] [--keep-case]``, where TARGET is
a SQLAlchemy URL (``postgresql+psycopg://...``) or a ``.duckdb`` / ``.sqlite`` path (replaced if it exists).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import re
import sqlite3
import sys
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from .errors import DatabaseError, DatabaseNotFoundError, MissingDependencyError

_CHUNK = 1000
_INT64 = 2**63 - 1
_INT32 = 2**31 - 1
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?$")
_VARCHAR = re.compile(r"(?:VAR)?CHAR(?:ACTER)?(?: VARYING)?\s*\(\s*(\d+)\s*\)", re.IGNORECASE)


@dataclass
class LoadReport:
    """What was loaded: rows per table, the foreign keys kept, and every change made on the way."""

    target: str
    tables: dict[str, int] = field(default_factory=dict)
    foreign_keys: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"loaded {len(self.tables)} tables ({sum(self.tables.values())} rows) and "
                 f"{len(self.foreign_keys)} foreign keys into {self.target}"]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


@dataclass
class _SourceTable:
    name: str
    columns: list[tuple[str, str]]  # (name, declared type)
    primary_key: list[str]
    foreign_keys: list[tuple[list[str], str, list[str]]]  # (columns, referred table, referred columns)
    uniques: list[list[str]]
    rows: list[tuple[Any, ...]]
    description: str = ""
    column_descriptions: dict[str, str] = field(default_factory=dict)


# --- reading -------------------------------------------------------------------------------------


def _is_sqlite_file(source: str | Path) -> bool:
    p = Path(str(source)).expanduser()
    if "://" in str(source) or not p.is_file():
        return False
    with p.open("rb") as fh:
        return fh.read(16).startswith(b"SQLite format 3")


def _read_sqlite(path: Path) -> list[_SourceTable]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode("utf-8", errors="replace")
    try:
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]
        out = []
        for name in names:
            q = '"' + name.replace('"', '""') + '"'
            info = conn.execute(f"PRAGMA table_info({q})").fetchall()
            columns = [(r[1], r[2] or "") for r in info]
            pk = [r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])]
            fks: dict[int, tuple[list[str], str, list[str]]] = {}
            for r in conn.execute(f"PRAGMA foreign_key_list({q})"):
                cols, ref, refcols = fks.setdefault(r[0], ([], r[2], []))
                cols.append(r[3])
                refcols.append(r[4] or "")
            uniques = []
            for idx in conn.execute(f"PRAGMA index_list({q})"):
                if idx[2] and idx[3] != "pk":
                    iq = '"' + idx[1].replace('"', '""') + '"'
                    uniques.append([r[2] for r in conn.execute(f"PRAGMA index_info({iq})") if r[2]])
            rows = conn.execute(f"SELECT * FROM {q}").fetchall()
            out.append(_SourceTable(name, columns, pk, list(fks.values()), uniques, rows))
        return out
    finally:
        conn.close()


def _read_database(source: str | Path) -> list[_SourceTable]:
    """Any database sqlweave opens (DuckDB file, PostgreSQL URL), read-only, with its keys and comments."""
    from .database import Database

    db = Database.open(source, timeout_s=600)
    try:
        schema = db.schema()
        out = []
        for t in schema.tables:
            rows = db.trusted_read(f"SELECT * FROM {db.quote(t.name)}", timeout_s=600, max_rows=10**9).rows
            fks = [([fk.column], fk.ref_table, [fk.ref_column]) for fk in schema.foreign_keys_of(t.name)]
            out.append(_SourceTable(t.name, [(c.name, c.type) for c in t.columns], list(t.primary_key), fks, [],
                                    list(rows), t.description,
                                    {c.name: c.description for c in t.columns if c.description}))
        return out
    finally:
        db.close()


# --- column types --------------------------------------------------------------------------------


@dataclass
class _Plan:
    kind: str  # int, float, decimal, bool, date, datetime, text, blob
    type: Any
    convert: Callable[[Any], Any]


def _affinity(decl: str) -> str:
    """SQLite's type affinity rules (section 3.1 of its datatype documentation)."""
    d = decl.upper()
    if "INT" in d:
        return "int"
    if any(k in d for k in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if "BLOB" in d or not d:
        return "none"
    if any(k in d for k in ("REAL", "FLOA", "DOUB")):
        return "float"
    return "numeric"


def _text(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, (bytes, bytearray, memoryview)):
        v = bytes(v).decode("utf-8", errors="replace")
    return str(v).replace("\x00", "")


def _plan(decl: str, values: list[Any], notes: list[str], where: str) -> _Plan:
    """The strictest type every stored value of a column fits, and the function converting values to it."""
    values = [_text(v) if isinstance(v, str) else v for v in values]
    present = [v for v in values if v is not None]
    aff = _affinity(decl)
    blank = [v for v in present if isinstance(v, str) and not v.strip()]
    solid = [v for v in present if not (isinstance(v, str) and not v.strip())]
    kinds = {type(v) for v in solid}
    upper = decl.upper()

    def numbers_with_blanks(plan: _Plan) -> _Plan:
        if blank:
            notes.append(f"{where}: {len(blank)} empty string(s) in a number column stored as NULL")
            conv = plan.convert
            return _Plan(plan.kind, plan.type, lambda v: None if isinstance(v, str) and not v.strip() else conv(v))
        return plan

    if not solid:
        if aff == "int":
            return _Plan("int", sa.BigInteger(), lambda v: None)
        if aff in ("float", "numeric"):
            return _Plan("float", sa.Float(53), lambda v: None)
        return _Plan("text", sa.Text(), _text)
    if kinds <= {bool}:
        return _Plan("bool", sa.Boolean(), lambda v: v)
    if kinds <= {int, bool}:
        big = max(abs(int(v)) for v in solid)
        if big > _INT64:
            notes.append(f"{where}: integers beyond 64 bits stored as text")
            return _Plan("text", sa.Text(), _text)
        return numbers_with_blanks(_Plan("int", sa.Integer() if big <= _INT32 else sa.BigInteger(),
                                         lambda v: None if v is None else int(v)))
    if kinds <= {int, float, bool}:
        return numbers_with_blanks(_Plan("float", sa.Float(53), lambda v: None if v is None else float(v)))
    if kinds <= {int, Decimal}:
        return numbers_with_blanks(_Plan("decimal", sa.Numeric(), lambda v: v))
    if kinds <= {int, float, Decimal}:
        return numbers_with_blanks(_Plan("float", sa.Float(53), lambda v: None if v is None else float(v)))
    if kinds <= {dt.time}:
        return _Plan("time", sa.Time(), lambda v: v)
    if kinds <= {dt.date}:
        return _Plan("date", sa.Date(), lambda v: v)
    if kinds <= {dt.datetime, dt.date}:
        return _Plan("datetime", sa.DateTime(), lambda v: v)
    if kinds <= {bytes, bytearray, memoryview}:
        return _Plan("blob", sa.LargeBinary(), lambda v: None if v is None else bytes(v))
    if kinds <= {str} and any(k in upper for k in ("DATE", "TIME")):
        if all(_ISO_DATE.match(v) for v in solid) and _all_parse(solid, dt.date.fromisoformat):
            return _Plan("date", sa.Date(), lambda v: None if v is None or not str(v).strip() else dt.date.fromisoformat(v))
        if all(_ISO_DATETIME.match(v) or _ISO_DATE.match(v) for v in solid) and _all_parse(solid, dt.datetime.fromisoformat):
            return _Plan("datetime", sa.DateTime(),
                         lambda v: None if v is None or not str(v).strip() else dt.datetime.fromisoformat(v))
    if aff != "text" and not kinds <= {str}:
        notes.append(f"{where}: declared {decl or 'without a type'} but holds text; stored as text")
    elif aff in ("int", "float", "numeric") and kinds <= {str}:
        notes.append(f"{where}: declared {decl} but holds only text; stored as text")
    m = _VARCHAR.search(decl)
    if m and kinds <= {str}:
        n = int(m.group(1))
        if n > 0 and all(len(v) <= n for v in present):
            return _Plan("text", sa.String(n), _text)
    return _Plan("text", sa.Text(), _text)


def _int_like(values: Iterable[Any]) -> bool:
    """True when every value is NULL or the text of an integer written as Python writes it ('12', not '012')."""
    for v in values:
        if v is None:
            continue
        if not isinstance(v, str) or not re.fullmatch(r"-?\d{1,18}", v.strip()) or str(int(v)) != v.strip():
            return False
    return True


def _all_parse(values: Iterable[str], parse: Callable[[str], Any]) -> bool:
    try:
        for v in values:
            parse(v)
    except ValueError:
        return False
    return True


_COMPATIBLE = {"int": "int", "float": "float", "decimal": "decimal", "bool": "bool", "date": "date",
               "datetime": "datetime", "time": "time", "text": "text", "blob": "blob"}


# --- writing -------------------------------------------------------------------------------------


def _target_url(target: str | Path) -> tuple[str, Path | None]:
    text = str(target)
    if "://" in text:
        from .db.opening import with_installed_driver

        try:
            return with_installed_driver(text), None
        except ArgumentError as err:
            raise DatabaseNotFoundError(f"not a database URL: {text!r}") from err
    path = Path(text).expanduser().resolve()
    if path.suffix.lower() in (".duckdb", ".ddb"):
        return f"duckdb:///{path}", path
    return f"sqlite:///{path}", path


def _unique_names(names: list[str], lower: bool) -> dict[str, str]:
    """Source name -> target name (lower-cased when asked, unless that would merge two names)."""
    if not lower:
        return {n: n for n in names}
    counts: dict[str, int] = {}
    for n in names:
        counts[n.lower()] = counts.get(n.lower(), 0) + 1
    return {n: (n.lower() if counts[n.lower()] == 1 else n) for n in names}


def load_database(
    source: str | Path,
    target: str | Path,
    *,
    lower_names: bool | None = None,
    numbers_from_text: bool | None = None,
    descriptions: str | Path | None = None,
    replace: bool = True,
) -> LoadReport:
    """Copy every table of ``source`` into ``target`` (a SQLAlchemy URL or a ``.duckdb``/``.sqlite`` path).

    ``lower_names`` defaults to True for PostgreSQL targets; ``numbers_from_text`` (whole numbers stored as text
    become integers) to True for targets other than SQLite. ``descriptions`` (a side file in any format
    :func:`~sqlweave.knowledge.load_descriptions` reads) become table and column comments. With
    ``replace``, tables of the same names are dropped first (a target file is removed).

    Raises:
        DatabaseNotFoundError: the source does not exist or the target cannot be reached.
        MissingDependencyError: the target's driver is not installed.
        DatabaseError: the target refused the tables or the rows.
    """
    if _is_sqlite_file(source):
        tables = _read_sqlite(Path(str(source)).expanduser())
    else:
        tables = _read_database(source)
    if descriptions:
        from .knowledge import load_descriptions

        side = load_descriptions(Path(descriptions))
        for t in tables:
            info = side.get(t.name.lower(), {})
            t.description = info.get("description") or t.description
            for c, _ in t.columns:
                if info.get("columns", {}).get(c.lower()):
                    t.column_descriptions[c] = info["columns"][c.lower()]

    url, path = _target_url(target)
    if path is not None and replace and path.exists():
        path.unlink()
        Path(str(path) + ".wal").unlink(missing_ok=True)
    try:
        engine = sa.create_engine(url)
    except (ImportError, SQLAlchemyError) as err:
        backend = make_url(url).get_backend_name()
        extra = {"postgresql": "postgres", "duckdb": "duckdb"}.get(backend, backend)
        raise MissingDependencyError(f"no driver installed for {backend!r} databases",
                                     hint=f"Install it with: pip install 'sqlweave[{extra}]'") from err
    backend = engine.dialect.name
    if lower_names is None:
        lower_names = backend == "postgresql"
    if numbers_from_text is None:
        numbers_from_text = backend != "sqlite"
    report = LoadReport(target=make_url(url).render_as_string(hide_password=True))
    try:
        _write(engine, tables, report, lower_names=lower_names, replace=replace, numbers_from_text=numbers_from_text)
    except SQLAlchemyError as err:
        raise DatabaseError(f"cannot load into {report.target}: {str(err).strip().splitlines()[0]}") from err
    finally:
        engine.dispose()
    return report


def _write(engine: sa.Engine, tables: list[_SourceTable], report: LoadReport, *, lower_names: bool,
           replace: bool, numbers_from_text: bool) -> None:
    backend = engine.dialect.name
    tnames = _unique_names([t.name for t in tables], lower_names)
    by_lower = {t.name.lower(): t for t in tables}
    plans: dict[str, list[_Plan]] = {}
    cnames: dict[str, dict[str, str]] = {}
    converted: dict[str, list[tuple[Any, ...]]] = {}
    for t in tables:
        cnames[t.name] = _unique_names([c for c, _ in t.columns], lower_names)
        plans[t.name] = [_plan(decl, [r[i] for r in t.rows], report.notes, f"{t.name}.{c}")
                         for i, (c, decl) in enumerate(t.columns)]
        converted[t.name] = [tuple(p.convert(v) for p, v in zip(plans[t.name], r)) for r in t.rows]

    def col_index(t: _SourceTable, name: str) -> int | None:
        for i, (c, _) in enumerate(t.columns):
            if c.lower() == name.lower():
                return i
        return None

    def col_indices(t: _SourceTable, names: list[str]) -> list[int] | None:
        """The positions of the named columns in t, or None when one of them is not found."""
        found = [col_index(t, c) for c in names]
        return [i for i in found if i is not None] if None not in found else None

    # Whole numbers stored as text ('2014') become integers on engines that, unlike SQLite, do not compare text
    # with numbers ("year = 2014" fails on a text column there); codes with leading zeros stay text.
    if numbers_from_text:
        for t in tables:
            for k, (c, _) in enumerate(t.columns):
                values = [r[k] for r in converted[t.name]]
                if plans[t.name][k].kind == "text" and any(v is not None for v in values) and _int_like(values):
                    big = max(abs(int(v)) for v in values if v is not None)
                    plans[t.name][k] = _Plan("int", sa.Integer() if big <= _INT32 else sa.BigInteger(),
                                             lambda v: None if v is None else int(v))
                    converted[t.name] = [r[:k] + (None if r[k] is None else int(r[k]),) + r[k + 1:]
                                         for r in converted[t.name]]
                    report.notes.append(f"{t.name}.{c}: whole numbers stored as text, stored as integers")

    # A key column of numbers stored as text ('1', '2') on one side of a foreign key and integers on the other
    # becomes integers, so that the key can be declared and joined on without casts.
    for t in tables:
        for cols, ref_name, ref_cols in t.foreign_keys:
            ref = by_lower.get(ref_name.lower())
            if ref is None or len(cols) != len(ref_cols):
                continue
            for c, rc in zip(cols, ref_cols):
                i, j = col_index(t, c), col_index(ref, rc or "")
                if i is None or j is None:
                    continue
                for (tt, k), (ot, ok) in (((t, i), (ref, j)), ((ref, j), (t, i))):
                    if plans[tt.name][k].kind == "text" and plans[ot.name][ok].kind == "int" \
                            and _int_like(r[k] for r in converted[tt.name]):
                        plans[tt.name][k] = _Plan("int", plans[ot.name][ok].type, lambda v: None if v is None else int(v))
                        converted[tt.name] = [r[:k] + (None if r[k] is None else int(r[k]),) + r[k + 1:]
                                              for r in converted[tt.name]]
                        report.notes.append(f"{tt.name}.{tt.columns[k][0]}: numbers stored as text, stored as "
                                            f"integers to match the foreign key to {ot.name}.{ot.columns[ok][0]}")

    def unique_in_data(t: _SourceTable, idx: list[int]) -> bool:
        keys = [tuple(r[i] for i in idx) for r in converted[t.name]]
        return all(None not in k for k in keys) and len(set(keys)) == len(keys)

    # Keys: a primary key the rows violate is dropped; unique keys are kept where the rows allow.
    keys: dict[str, list[tuple[str, ...]]] = {}  # table -> unique column tuples (PK first), source names
    pks: dict[str, list[str]] = {}
    for t in tables:
        pk_idx = col_indices(t, t.primary_key)
        if t.primary_key and pk_idx is not None and unique_in_data(t, pk_idx):
            pks[t.name] = [t.columns[i][0] for i in pk_idx]
            keys[t.name] = [tuple(pks[t.name])]
        else:
            pks[t.name] = []
            keys[t.name] = []
            if t.primary_key:
                report.notes.append(f"{t.name}: primary key ({', '.join(t.primary_key)}) not unique in the data; left out")
        for u in t.uniques:
            idx = col_indices(t, u)
            if idx is not None and unique_in_data(t, idx):
                key_cols = tuple(t.columns[i][0] for i in idx)
                if key_cols not in keys[t.name]:
                    keys[t.name].append(key_cols)

    # Foreign keys: resolved case-insensitively; the referred columns must be a key (or unique in the data).
    fks: list[tuple[_SourceTable, list[str], _SourceTable, list[str], bool]] = []
    pairs: list[tuple[_Plan, _Plan]] = []  # the two ends of each foreign key column
    for t in tables:
        for cols, ref_name, ref_cols in t.foreign_keys:
            ref = by_lower.get(ref_name.lower())
            label = f"{t.name}({', '.join(cols)}) -> {ref_name}({', '.join(c or '?' for c in ref_cols)})"
            if ref is None:
                report.notes.append(f"foreign key {label}: no table {ref_name}; left out")
                continue
            if not any(ref_cols) or not all(col_index(ref, c) is not None for c in ref_cols if c):
                if len(ref_cols) == len(pks[ref.name]) and pks[ref.name]:
                    ref_cols = list(pks[ref.name])  # "REFERENCES t" or a misspelt column: the key
                else:
                    report.notes.append(f"foreign key {label}: referred columns not found; left out")
                    continue
            src_idx = col_indices(t, cols)
            ref_idx = col_indices(ref, ref_cols)
            if src_idx is None or ref_idx is None:
                report.notes.append(f"foreign key {label}: columns not found; left out")
                continue
            ref_tuple = tuple(ref.columns[i][0] for i in ref_idx)
            src_tuple = [t.columns[i][0] for i in src_idx]
            if any(_COMPATIBLE[plans[t.name][i].kind] != _COMPATIBLE[plans[ref.name][j].kind]
                   for i, j in zip(src_idx, ref_idx)):
                report.notes.append(f"foreign key {label}: column types differ in the data; left out")
                continue
            if ref_tuple not in keys[ref.name]:
                if unique_in_data(ref, ref_idx):
                    keys[ref.name].append(ref_tuple)
                    report.notes.append(f"{ref.name}({', '.join(ref_tuple)}): UNIQUE added for a foreign key")
                else:
                    report.notes.append(f"foreign key {label}: referred columns not unique; left out")
                    continue
            pairs += [(plans[t.name][i], plans[ref.name][j]) for i, j in zip(src_idx, ref_idx)]
            present = {tuple(r[j] for j in ref_idx) for r in converted[ref.name]}
            valid = all(None in k or k in present
                        for k in (tuple(r[i] for i in src_idx) for r in converted[t.name]))
            fks.append((t, src_tuple, ref, list(ref_tuple), valid))

    # Both ends of a key get the same type (DuckDB insists): integers of both sizes become BIGINT, texts TEXT.
    changed = True
    while changed:
        changed = False
        for a, b in pairs:
            if repr(a.type) != repr(b.type) and a.kind == b.kind and a.kind in ("int", "text"):
                a.type = b.type = sa.BigInteger() if a.kind == "int" else sa.Text()
                changed = True

    if backend in _MYSQL:
        fks = _indexable_keys(tables, plans, converted, keys, pks, fks, report)

    # DuckDB checks foreign keys on insert and cannot add them later: keep the valid, acyclic ones.
    inline_fks = backend != "postgresql"
    order = [t.name for t in tables]
    if backend == "duckdb":
        kept = []
        for fk in fks:
            t, cols, ref, ref_cols, valid = fk
            label = f"{t.name}({', '.join(cols)}) -> {ref.name}({', '.join(ref_cols)})"
            if not valid:
                report.notes.append(f"foreign key {label}: rows refer to missing rows; left out on DuckDB")
            elif t is ref:
                report.notes.append(f"foreign key {label}: refers to its own table; left out on DuckDB")
            else:
                kept.append(fk)
        fks, order = _acyclic(kept, order, report)

    md = sa.MetaData()
    sa_tables: dict[str, sa.Table] = {}
    for t in tables:
        cn = cnames[t.name]
        sa_cols = [sa.Column(cn[c], plans[t.name][i].type, primary_key=c in pks[t.name], autoincrement=False,
                             nullable=c not in pks[t.name], comment=t.column_descriptions.get(c) or None)
                   for i, (c, _) in enumerate(t.columns)]
        extra: list[Any] = [sa.UniqueConstraint(*[cn[c] for c in u]) for u in keys[t.name][1 if pks[t.name] else 0:]]
        if inline_fks:
            for src, cols_, ref, ref_cols, _ in fks:
                if src is t:
                    extra.append(sa.ForeignKeyConstraint(
                        [cn[c] for c in cols_], [f"{tnames[ref.name]}.{cnames[ref.name][c]}" for c in ref_cols]))
        sa_tables[t.name] = sa.Table(tnames[t.name], md, *sa_cols, *extra, comment=t.description or None)

    prep = engine.dialect.identifier_preparer
    with engine.begin() as conn, _no_pandas_lookups(backend):
        if backend in _MYSQL:
            # Tables are created in source order and rows may refer to missing rows: the foreign keys are
            # declared, not checked, as PostgreSQL's NOT VALID ones are.
            conn.exec_driver_sql("SET FOREIGN_KEY_CHECKS = 0")
        if replace:
            for name in reversed(order):
                cascade = " CASCADE" if backend == "postgresql" else ""
                conn.exec_driver_sql(f"DROP TABLE IF EXISTS {prep.quote(tnames[name])}{cascade}")
        for name in order:
            sa_tables[name].create(conn)
            _comments(conn, backend, sa_tables[name])
            rows = converted[name]
            keys_ = [c.key for c in sa_tables[name].columns]
            for start in range(0, len(rows), _CHUNK):
                conn.execute(sa_tables[name].insert(), [dict(zip(keys_, r)) for r in rows[start:start + _CHUNK]])
            report.tables[tnames[name]] = len(rows)
        for src, cols_, ref, ref_cols, valid in fks:
            text = (f"{tnames[src.name]}({', '.join(cnames[src.name][c] for c in cols_)}) -> "
                    f"{tnames[ref.name]}({', '.join(cnames[ref.name][c] for c in ref_cols)})")
            if backend in _MYSQL and not valid:
                report.notes.append(f"foreign key {text}: rows refer to missing rows; kept, not checked")
            if backend == "postgresql":
                conn.exec_driver_sql(
                    f"ALTER TABLE {prep.quote(tnames[src.name])} ADD FOREIGN KEY "
                    f"({', '.join(prep.quote(cnames[src.name][c]) for c in cols_)}) REFERENCES "
                    f"{prep.quote(tnames[ref.name])} ({', '.join(prep.quote(cnames[ref.name][c]) for c in ref_cols)})"
                    + ("" if valid else " NOT VALID"))
                if not valid:
                    report.notes.append(f"foreign key {text}: rows refer to missing rows; kept NOT VALID")
            report.foreign_keys.append(text)


#: SQLAlchemy's names for the MySQL family's dialects.
_MYSQL = ("mysql", "mariadb")
#: The longest text MySQL and MariaDB index whole (3,072 bytes of utf8mb4).
_INDEXABLE = 768


def _indexable_keys(tables: list[_SourceTable], plans: dict[str, list[_Plan]],
                    converted: dict[str, list[tuple[Any, ...]]], keys: dict[str, list[tuple[str, ...]]],
                    pks: dict[str, list[str]], fks: list, report: LoadReport) -> list:
    """On MySQL and MariaDB a key over a ``TEXT`` column needs a length: every text column of a key or a foreign
    key becomes ``VARCHAR(255)`` (longer when its values are); a key over longer texts than can be indexed is
    left out, with the foreign keys through it. Returns the foreign keys kept."""
    index = {t.name: {c: i for i, (c, _) in enumerate(t.columns)} for t in tables}

    def fits(table: str, column: str) -> bool:
        i = index[table][column]
        plan = plans[table][i]
        if plan.kind != "text" or (isinstance(plan.type, sa.String) and not isinstance(plan.type, sa.Text)
                                   and (plan.type.length or 0) <= _INDEXABLE):
            return True
        longest = max((len(str(r[i])) for r in converted[table] if r[i] is not None), default=0)
        if longest > _INDEXABLE:
            return False
        plan.type = sa.String(255 if longest <= 255 else _INDEXABLE)
        return True

    for t in tables:
        for key in list(keys[t.name]):
            if not all(fits(t.name, c) for c in key):
                keys[t.name].remove(key)
                if list(key) == pks[t.name]:
                    pks[t.name] = []
                report.notes.append(f"{t.name}({', '.join(key)}): texts too long to index; key left out")
    kept = []
    for fk in fks:
        src, cols, ref, ref_cols, _ = fk
        if tuple(ref_cols) in keys[ref.name] and all(fits(src.name, c) for c in cols):
            kept.append(fk)
        else:
            report.notes.append(f"foreign key {src.name}({', '.join(cols)}) -> {ref.name}: texts too long to "
                                "index; left out")
    # both ends of a foreign key get one type
    for src, cols, ref, ref_cols, _ in kept:
        for c, rc in zip(cols, ref_cols):
            a, b = plans[src.name][index[src.name][c]], plans[ref.name][index[ref.name][rc]]
            if a.kind == b.kind == "text" and repr(a.type) != repr(b.type):
                a.type = b.type = sa.String(max(a.type.length or 0, b.type.length or 0))
    return kept


@contextlib.contextmanager
def _no_pandas_lookups(backend: str) -> Iterator[None]:
    """DuckDB's Python client looks for pandas for every parameter it binds; without pandas installed each
    look-up searches the whole import path (100 times slower inserts). Mark it missing for the load."""
    if backend != "duckdb" or "pandas" in sys.modules or importlib.util.find_spec("pandas") is not None:
        yield
        return
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("pandas", 0) is None:
            del sys.modules["pandas"]


def _comments(conn: sa.Connection, backend: str, table: sa.Table) -> None:
    """Table and column comments, where the dialect's CREATE TABLE did not write them."""
    if backend not in ("duckdb",):
        return  # PostgreSQL gets them from SQLAlchemy's DDL; SQLite has none
    prep = conn.dialect.identifier_preparer

    def lit(s: str) -> str:
        return "'" + s.replace("'", "''") + "'"

    if table.comment:
        conn.exec_driver_sql(f"COMMENT ON TABLE {prep.quote(table.name)} IS {lit(table.comment)}")
    for c in table.columns:
        if c.comment:
            conn.exec_driver_sql(f"COMMENT ON COLUMN {prep.quote(table.name)}.{prep.quote(c.name)} IS {lit(c.comment)}")


def _acyclic(fks: list, order: list[str], report: LoadReport) -> tuple[list, list[str]]:
    """Tables in an order where every referred table comes first; foreign keys closing a cycle are dropped."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(order)
    kept = []
    for fk in fks:
        src, ref = fk[0].name, fk[2].name
        g.add_edge(ref, src)
        if not nx.is_directed_acyclic_graph(g):
            g.remove_edge(ref, src)
            report.notes.append(f"foreign key {src} -> {ref}: closes a cycle; left out on DuckDB")
            continue
        kept.append(fk)
    return kept, list(nx.lexicographical_topological_sort(g, key=order.index))


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    from .errors import SqlweaveError

    ap = argparse.ArgumentParser(prog="python -m sqlweave.loading",
                                 description="Copy a database (a SQLite or DuckDB file, or a URL) into another.")
    ap.add_argument("source")
    ap.add_argument("target", help="a SQLAlchemy URL, or a .duckdb / .sqlite path (replaced)")
    ap.add_argument("--descriptions", help="table and column descriptions to store as comments")
    ap.add_argument("--keep-case", action="store_true", help="keep names' case on PostgreSQL")
    ap.add_argument("--keep-text", action="store_true", help="keep whole numbers stored as text as text")
    args = ap.parse_args(argv)
    try:
        report = load_database(args.source, args.target, descriptions=args.descriptions,
                               lower_names=False if args.keep_case else None,
                               numbers_from_text=False if args.keep_text else None)
    except SqlweaveError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(report.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
