"""Read a database's schema into the immutable :class:`~sqlweave.schema.Schema` model.

Tables, columns, types, primary and foreign keys come from SQLAlchemy's
inspector; descriptions from the database's comments or a side file; sample
values and statistics from bounded queries (at most ``STATS_SAMPLE`` rows per table).

>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> schema = introspect(Database.open(demo_database_path()))
>>> "customers" in schema.table_names
True
"""

from __future__ import annotations

import re
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from ..errors import QueryTimeoutError, SchemaError, SqlweaveError
from ..knowledge import load_descriptions
from ..schema import Column, ColumnStats, ForeignKey, Schema, Table, is_composite_type
from .opening import schemas_note, schemas_with_tables

if TYPE_CHECKING:
    from .protocol import Reader

SAMPLE_VALUES = 3
SAMPLE_ROWS = 3
STATS_SAMPLE = 10_000
_MAX_SAMPLE_TEXT = 60

# SQLAlchemy warns on stderr, quoting the table's names, when a SQLite table declares one foreign key twice (as
# Spider's dog_kennels does); the key is still read, once, from SQLite's own list, and a name read from the
# database is not printed raw.
warnings.filterwarnings("ignore", message=".*SQL-parsed foreign key constraint", category=sa.exc.SAWarning)


def introspect(db: "Reader", progress: "Callable[[int, int], None] | None" = None) -> Schema:
    """Read tables, columns, keys, descriptions, samples and statistics of ``db`` (on one connection: a round trip
    to a server fewer for each of its hundreds of queries); ``progress(done, total)`` is called as each table's
    data has been read."""
    with db.one_connection() as conn:
        return _introspect(db, conn, progress)


def _introspect(db: "Reader", conn: sa.Connection, progress: "Callable[[int, int], None] | None") -> Schema:
    try:
        inspector = sa.inspect(conn)
        owner, shadowed = _tables_by_schema(inspector, db.schemas,
                                            _partitions(db) if db.backend == "postgresql" else set())
    except SQLAlchemyError as err:
        raise SchemaError(f"cannot read the schema of {db.name!r}: {str(err).splitlines()[0]}") from err
    names = list(owner)
    if not names:
        elsewhere = schemas_with_tables(db.engine, db.connection.kind) if db.schemas else []
        if elsewhere:
            raise SchemaError(f"database {db.name!r} has no tables in {', '.join(db.schemas)}; its tables are in "
                              f"{schemas_note(elsewhere)}",
                              hint=f"Name the schemas to read: --schemas {','.join(n for n, _ in elsewhere)} "
                                   "(--schemas NAME=... for one of several databases served; schemas=[...] in "
                                   "Python, schemas = [...] in a config file).")
        raise SchemaError(f"database {db.name!r} has no tables")
    side = load_descriptions(db.descriptions) if db.descriptions else {}
    policy = getattr(db, "policy", None)
    if policy is not None:  # a hidden table is never read (its name only checks the policy's spelling)
        hidden_tables = [n for n in names if policy.hides_table(n)]
        names = [n for n in names if not policy.hides_table(n)]
        if not names:
            raise SchemaError(f"database {db.name!r} has no tables its access policy shows")
        shadowed = [(home, n) for home, n in shadowed if not policy.hides_table(n)]
    all_columns: dict[str, list[str]] = {}
    unreadable = _unreadable_columns(db) if db.backend == "postgresql" else {}

    tables: list[Table] = []
    fks: list[ForeignKey] = []
    duck_keys = _duckdb_keys(db) if db.backend == "duckdb" else None
    duck_types = _duckdb_types(db) if db.backend == "duckdb" else {}
    pre = _reflected_together(inspector, conn, {n: owner[n] for n in names}) if db.backend == "postgresql" else None
    for done, name in enumerate(names):
        if progress is not None:
            progress(done, len(names))
        schema = owner[name]
        granted = False  # read from what the role was granted of some columns (MySQL, MariaDB)
        cols: list[Any]
        try:
            with warnings.catch_warnings():  # a type the driver does not know is read below, not warned about
                warnings.simplefilter("ignore", sa.exc.SAWarning)
                cols = pre["columns"][(schema, name)] if pre else inspector.get_columns(name, schema=schema)
            if pre:
                pk = set((pre["pk"].get((schema, name)) or {}).get("constrained_columns") or [])
                raw_fks = [dict(fk) for fk in pre["fks"].get((schema, name)) or []
                           if fk.get("referred_table") in owner
                           and fk.get("referred_schema") in (None, owner[fk["referred_table"]])]
            elif duck_keys is not None:
                pk, raw_fks = duck_keys.get((schema or "main", name), (set(), []))
                # a key to a table of its schema whose name an earlier schema's table took refers to none read
                raw_fks = [fk for fk in raw_fks if owner.get(fk["referred_table"], "") == schema]
            else:
                pk = set((inspector.get_pk_constraint(name, schema=schema) or {}).get("constrained_columns") or [])
                raw_fks = [dict(fk) for fk in inspector.get_foreign_keys(name, schema=schema)
                           if fk.get("referred_table") in owner
                           and fk.get("referred_schema") in (None, owner[fk["referred_table"]])]
            try:
                comment = ((pre["comment"].get((schema, name)) if pre else
                            inspector.get_table_comment(name, schema=schema)) or {}).get("text") or ""
            except NotImplementedError:
                comment = ""
        except SQLAlchemyError as err:
            if db.dialect != "mysql" or _mysql_code(err) not in _MYSQL_DENIED:
                raise SchemaError(f"cannot read table {name!r}: {str(err).splitlines()[0]}") from err
            # a role granted some columns of the table may not read its definition: the columns it may read
            cols, pk, raw_fks, comment = _granted_columns(db, name)
            granted = True
            if not cols:
                continue
        side_t = side.get(name.lower(), {})
        all_columns[name] = [c["name"] for c in cols]
        if policy is not None:  # hidden columns are never read, described or linked by a key
            cols = [c for c in cols if c["name"].lower() not in policy.hidden_columns_of(name)]
        denied = unreadable.get((schema or (db.schemas[0] if db.schemas else ""), name))
        if denied:  # what the connection's role may not read is not shown: a query naming it would fail
            cols = [c for c in cols if c["name"] not in denied]
            if not cols:
                continue
        columns = []
        for c in cols:
            type_, labels = _type_name(c["type"], db.engine.dialect), _labels(c["type"])
            duck_type = duck_types.get((schema or "main", name, c["name"]), "")
            if duck_type and type_ in ("", "ENUM"):
                # DuckDB's own name of a type its driver does not know (INTEGER[], STRUCT(a INTEGER), an enum's)
                type_, labels = _type_name(duck_type), _labels(duck_type)
            description = side_t.get("columns", {}).get(c["name"].lower(), "") or (c.get("comment") or "")
            columns.append(Column(name=c["name"], type=type_, primary_key=c["name"] in pk,
                                  nullable=bool(c.get("nullable", True)), description=_with_labels(description, labels)))
        for fk in raw_fks:
            ref = fk.get("referred_table")
            for src, dst in zip(fk.get("constrained_columns") or [], fk.get("referred_columns") or []):
                if ref and src and dst:
                    fks.append(ForeignKey(name, src, ref, dst))
        table = Table(name, tuple(columns), side_t.get("description", "") or comment)
        if policy is not None and policy.row_filter(name) is not None:
            tables.append(table)  # no counts, samples or statistics: they would come from every tenant's rows
        else:
            tables.append(_with_data(db, table, explicit=granted or len(cols) < len(all_columns[name])))
    if progress is not None:
        progress(len(names), len(names))
    if policy is not None:
        policy.validate({**all_columns, **{t: [] for t in hidden_tables}})
    declared = bool(fks)
    fks += _joins_as_keys(db, fks, tables)
    found: list[ForeignKey] = []
    if not declared and db.keys_from_data and len(tables) > 1:
        tables, found = _keys_from_data(db, tables, fks)
    return Schema(name=db.name, tables=tuple(tables), foreign_keys=_resolve_fks(fks + found, tables),
                  dialect=db.dialect, keys_from_data=bool(found),
                  schemas=db.schemas if len(db.schemas) > 1 else (),
                  shadowed=tuple(_qualified(db, home, name) for home, name in shadowed))


def _qualified(db: "Reader", schema: str, table: str) -> str:
    """``schema.table`` as the database's SQL names it, quoted only where needed (``"Hr Dept".staff``)."""
    quote = db.engine.dialect.identifier_preparer.quote
    return f"{quote(schema)}.{quote(table)}"


def _keys_from_data(db: "Reader", tables: list[Table],
                    fks: list[ForeignKey]) -> tuple[list[Table], list[ForeignKey]]:
    """The keys the data shows (:func:`~sqlweave.db.infer_keys.infer_database_keys`) of a database that declares
    no foreign key: a table that declares no primary key gets the one found, and each foreign key found is added
    unless its column already has one (a knowledge file's join). The database itself is not changed."""
    from .infer_keys import infer_database_keys

    keys = infer_database_keys(db, tables)
    marked = [t if t.primary_key or t.name not in keys.primary else
              replace(t, columns=tuple(replace(c, primary_key=c.name == keys.primary[t.name]) for c in t.columns))
              for t in tables]
    keyed = {(f.table.lower(), f.column.lower()) for f in fks}
    return marked, [ForeignKey(*fk) for fk in keys.foreign if (fk[0].lower(), fk[1].lower()) not in keyed]


def _joins_as_keys(db: "Reader", fks: list[ForeignKey], tables: list[Table]) -> list[ForeignKey]:
    """The preferred joins of the database's knowledge file as foreign keys, where the database declares none
    on that column: the keys a data file, or a database that declares none, cannot show (``orders.customer_id =
    customers.id``). The side that is its table's primary key is the one referred to (either may come first);
    a join whose columns are not both in the schema, or that names what an access policy hides, adds nothing."""
    from ..knowledge import knowledge_for

    known = knowledge_for(db)  # under an access policy, without what names a hidden part
    if known is None or not known.joins:
        return []
    by_name = {t.name.lower(): t for t in tables}
    keyed = {(f.table.lower(), f.column.lower()) for f in fks}
    out: list[ForeignKey] = []
    for j in known.joins:
        left, right = by_name.get(j.table.lower()), by_name.get(j.ref_table.lower())
        if left is None or right is None or not left.has_column(j.column) or not right.has_column(j.ref_column):
            continue
        key = ForeignKey(j.table, j.column, j.ref_table, j.ref_column)
        if right.primary_key != (right.column(j.ref_column).name,) and \
                left.primary_key == (left.column(j.column).name,):
            key = ForeignKey(j.ref_table, j.ref_column, j.table, j.column)
        if (key.table.lower(), key.column.lower()) not in keyed:
            keyed.add((key.table.lower(), key.column.lower()))
            out.append(key)
    return out


def _reflected_together(inspector: Any, conn: sa.Connection,
                        owner: dict[str, str | None]) -> dict[str, dict[tuple[str | None, str], Any]] | None:
    """PostgreSQL: the columns, primary key, foreign keys and comment of every table to read, by ``(schema,
    table)``, one query of each kind for each schema (SQLAlchemy's ``get_multi_*``, what its ``get_columns``
    and the others run for one table), where a query per table and kind was a round trip each to the server.
    ``None`` when a read fails or misses a table: the tables are then read one by one, as elsewhere."""
    from sqlalchemy.engine.reflection import ObjectKind

    by_schema: dict[str | None, list[str]] = {}
    for name, schema in owner.items():
        by_schema.setdefault(schema, []).append(name)
    out: dict[str, dict[tuple[str | None, str], Any]] = {"columns": {}, "pk": {}, "fks": {}, "comment": {}}
    reads = {"columns": inspector.get_multi_columns, "pk": inspector.get_multi_pk_constraint,
             "fks": inspector.get_multi_foreign_keys, "comment": inspector.get_multi_table_comment}
    try:
        with warnings.catch_warnings():  # a type the driver does not know is read later, not warned about
            warnings.simplefilter("ignore", sa.exc.SAWarning)
            for schema, names in by_schema.items():
                for kind, read in reads.items():
                    got = read(schema=schema, filter_names=names, kind=ObjectKind.ANY)
                    out[kind].update({(schema, key[1]): value for key, value in got.items()})
    except SQLAlchemyError:
        if conn.in_transaction():
            conn.rollback()
        return None
    if any((schema, name) not in out["columns"] for name, schema in owner.items()):
        return None
    return out


def _tables_by_schema(inspector: Any, schemas: tuple[str, ...],
                      partitions: set[tuple[str, str]]) -> tuple[dict[str, str | None], list[tuple[str, str]]]:
    """Each table and view to read (a PostgreSQL materialized view too; not a partition of a table, which is read
    as its table), with the schema it is read from: the first of ``schemas`` that has one of its name, as the
    database looks a name up (None: the connection's only schema, as SQLite and MySQL have); and, as ``(schema,
    table)``, the tables of a later schema that are not read because an earlier one took their name."""
    owner: dict[str, str | None] = {}
    shadowed: list[tuple[str, str]] = []
    postgres = inspector.dialect.name == "postgresql"
    # DuckDB's driver lists (and merges the columns of) every schema's tables when it is given none
    one = not schemas or (len(schemas) == 1 and schemas[0] == inspector.default_schema_name
                          and inspector.dialect.name != "duckdb")
    for schema in (None,) if one else schemas:
        names = inspector.get_table_names(schema=schema) + inspector.get_view_names(schema=schema)
        if postgres:
            names += inspector.get_materialized_view_names(schema=schema)
        home = schema or (schemas[0] if schemas else "")
        for name in names:
            if name.startswith("sqlite_") or (home, name) in partitions:
                continue
            if name in owner:
                shadowed.append((home, name))
            else:
                owner[name] = schema
    return owner, shadowed


#: MySQL's and MariaDB's errors for a table or a column the role may not read (ER_TABLEACCESS_DENIED_ERROR,
#: ER_COLUMNACCESS_DENIED_ERROR).
_MYSQL_DENIED = (1142, 1143)


def _mysql_code(err: SQLAlchemyError) -> int | None:
    args = getattr(getattr(err, "orig", None), "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _granted_columns(db: "Reader", table: str) -> tuple[list[dict[str, Any]], set[str], list[dict[str, Any]], str]:
    """A MySQL or MariaDB table's columns that the role was granted (``information_schema`` lists only those),
    with its primary key and foreign keys among them and its comment: what reflection reads from the table's
    definition, which such a role may not see."""
    where = "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s"
    with db.engine.connect() as con:
        rows = con.exec_driver_sql(
            f"SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY, COLUMN_COMMENT FROM information_schema.COLUMNS "
            f"WHERE {where} ORDER BY ORDINAL_POSITION", (table,)).fetchall()
        refs = con.exec_driver_sql(
            "SELECT COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE "
            f"WHERE {where} AND REFERENCED_TABLE_NAME IS NOT NULL", (table,)).fetchall()
        comment = con.exec_driver_sql(f"SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE {where}",
                                      (table,)).scalar()
    cols = [{"name": name, "type": str(ty) if _labels(str(ty)) else str(ty).upper(),  # an enum's labels keep their case
             "nullable": nullable == "YES", "comment": note or None} for name, ty, nullable, _, note in rows]
    pk = {name for name, _, _, key, _ in rows if key == "PRI"}
    fks = [{"constrained_columns": [c], "referred_table": ref, "referred_columns": [rc]} for c, ref, rc in refs]
    return cols, pk, fks, str(comment or "")


def _unreadable_columns(db: "Reader") -> dict[tuple[str, str], set[str]]:
    """The columns of the tables and views on PostgreSQL's search path that the connection's role may not select
    (no privilege on the table nor on the column), by schema and table; none when the server cannot say (a
    server that speaks PostgreSQL's protocol without its catalog)."""
    rows = catalog_rows(
        db, "SELECT n.nspname, c.relname, a.attname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON "
            "n.oid = c.relnamespace JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid WHERE a.attnum > 0 AND "
            "NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname = ANY "
            "(current_schemas(false)) AND NOT has_column_privilege(c.oid, a.attnum, 'SELECT')")
    out: dict[tuple[str, str], set[str]] = {}
    for schema, table, column in rows:
        out.setdefault((str(schema), str(table)), set()).add(str(column))
    return out


def _partitions(db: "Reader") -> set[tuple[str, str]]:
    """The partitions of PostgreSQL's partitioned tables, by schema and name: each is a table of its own to the
    catalog (``events_2024`` of ``events``), and a question asks of the table they make up."""
    rows = catalog_rows(db, "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                             "ON n.oid = c.relnamespace WHERE c.relispartition")
    return {(str(schema), str(name)) for schema, name in rows}


def _labels(t: Any) -> list[str]:
    """The labels of an enumerated type: SQLAlchemy's ``Enum`` (PostgreSQL, MySQL), or a type named as DuckDB and
    MySQL's ``information_schema`` write it, ``ENUM('a', 'b')`` (the labels' case kept)."""
    if isinstance(t, sa.Enum):
        return [str(x) for x in (t.enums or [])]
    if isinstance(t, str) and t.upper().startswith("ENUM("):
        return [m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", t)]
    return []


def _with_labels(description: str, labels: list[str], most: int = 25) -> str:
    """A column's description, with the labels of its enumerated type after it: ``one of 'sad', 'ok', 'happy'``
    (at most ``most``, each at most 40 characters), so a question's word can be matched to a label no sampled
    row holds."""
    if not labels:
        return description
    shown = ", ".join("'" + x[:40].replace("'", "''") + "'" for x in labels[:most])
    note = f"one of {shown}{', ...' if len(labels) > most else ''}"
    return f"{description}; {note}" if description else note


def _duckdb_types(db: "Reader") -> dict[tuple[str, str, str], str]:
    """Every column's type as DuckDB names it, by schema, table and column (its SQLAlchemy driver knows no list,
    struct or map, and no enum's labels)."""
    rows = db.trusted_read("SELECT schema_name, table_name, column_name, data_type FROM duckdb_columns() "
                           "WHERE database_name = current_database()", timeout_s=db.timeout_s, max_rows=1_000_000).rows
    return {(str(s), str(t), str(c)): str(ty) for s, t, c, ty in rows}


def catalog_rows(db: "Reader", sql: str) -> list[Any]:
    """The rows of a query of sqlweave's own on the database's catalog (read-only, to the database's time limit),
    or none when it fails (what it adds is then left out)."""
    try:
        return list(db.trusted_read(sql, timeout_s=db.timeout_s, max_rows=1_000_000).rows)
    except SqlweaveError:
        return []


def _duckdb_keys(db: "Reader") -> dict[tuple[str, str], tuple[set[str], list[dict[str, Any]]]]:
    """Primary and foreign keys from DuckDB's own catalog (its SQLAlchemy driver cannot reflect them), by schema
    and table (a foreign key refers to a table of its own schema)."""
    rows = db.trusted_read(
        "SELECT schema_name, table_name, constraint_type, constraint_column_names, referenced_table, "
        "referenced_column_names FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY') "
        "AND database_name = current_database()",
        timeout_s=db.timeout_s, max_rows=100_000,
    ).rows
    keys: dict[tuple[str, str], tuple[set[str], list[dict[str, Any]]]] = {}
    for schema, table, kind, cols, ref_table, ref_cols in rows:
        pk, fks = keys.setdefault((schema, table), (set(), []))
        if kind == "PRIMARY KEY":
            pk.update(cols)
        else:
            fks.append({"constrained_columns": list(cols), "referred_table": ref_table,
                        "referred_columns": list(ref_cols or [])})
    return keys


def _type_name(t: Any, dialect: Any = None) -> str:
    """A reflected type as the schema shows it: SQLAlchemy's generic spelling (``INTEGER``, ``VARCHAR(20)``), or
    an array's as PostgreSQL writes it (``TEXT[]``), the database's own where SQLAlchemy has no generic one, or
    the type's class name."""
    if isinstance(t, str):  # as DuckDB or MySQL's information_schema name it: INTEGER[], INT(11), ENUM('a', 'b')
        return "ENUM" if _labels(t) else t
    if isinstance(t, sa.types.NullType):
        return ""  # a SQLite column declared without a type (CREATE TABLE t AS SELECT ...): SQLAlchemy's "NULL"
    if isinstance(t, sa.Enum):
        return "ENUM"  # PostgreSQL's would say VARCHAR(n); its labels go to the description (_with_labels)
    if isinstance(t, sa.types.ARRAY):
        return _type_name(t.item_type, dialect) + "[]" * max(1, t.dimensions or 1)  # str() says "ARRAY"
    try:
        return str(t)
    except Exception:  # noqa: BLE001 - some reflected types compile only in their own dialect
        pass
    try:
        return str(t.compile(dialect=dialect))
    except Exception:  # noqa: BLE001
        return type(t).__name__.upper()


def _resolve_fks(fks: list[ForeignKey], tables: list[Table]) -> tuple[ForeignKey, ...]:
    """Keep foreign keys whose ends exist, with names spelled as in the schema (SQLite is case-insensitive)."""
    by_name = {t.name.lower(): t for t in tables}
    out: list[ForeignKey] = []
    for fk in fks:
        src, dst = by_name.get(fk.table.lower()), by_name.get(fk.ref_table.lower())
        if src is None or dst is None or not src.has_column(fk.column):
            continue
        ref_col = fk.ref_column
        if not dst.has_column(ref_col):
            if len(dst.primary_key) == 1:  # "REFERENCES t" with a misspelled column: point at the key
                ref_col = dst.primary_key[0]
            else:
                continue
        fixed = ForeignKey(src.name, src.column(fk.column).name, dst.name, dst.column(ref_col).name)
        if fixed not in out:
            out.append(fixed)
    return tuple(out)


def _with_data(db: "Reader", table: Table, explicit: bool = False) -> Table:
    """Add row count, sample rows, sample values and statistics, each from a bounded query (``explicit``: name
    the table's columns instead of ``*``, for a table some of whose columns are not to be read)."""
    q = db.quote
    t = q(table.name)
    if explicit and not table.columns:
        return table

    def short(v: Any) -> Any:
        return _short(v, postgres=db.backend == "postgresql")

    shown = ", ".join(q(c.name) for c in table.columns) if explicit else "*"
    try:
        count, sampled = _count_and_samples(db, table)
        rows = db.trusted_read(f"SELECT {shown} FROM {t} LIMIT {SAMPLE_ROWS}", timeout_s=db.timeout_s,
                       max_rows=SAMPLE_ROWS).rows
    except SqlweaveError:
        return table
    together = _stats_together(db, table)
    columns = []
    for col in table.columns:
        try:
            samples = sampled[col.name] if col.name in sampled else db.trusted_read(
                _samples_sql(db, table.name, col.name), timeout_s=db.timeout_s, max_rows=SAMPLE_VALUES).rows
            stats = together.get(col.name) or db.trusted_read(_stats_sql(db, table.name, [col.name]),
                                                              timeout_s=db.timeout_s, max_rows=1).rows[0]
        except SqlweaveError:
            columns.append(col)
            continue
        columns.append(
            replace(
                col,
                samples=tuple(short(v[0]) for v in samples),
                stats=ColumnStats(distinct=stats[0], nulls=int(stats[1] or 0),
                                  minimum=short(stats[2]), maximum=short(stats[3])),
            )
        )
    return replace(
        table,
        columns=tuple(columns),
        row_count=int(count),
        sample_rows=tuple(tuple(short(v) for v in r) for r in rows),
    )


#: Columns whose statistics (or, on PostgreSQL, sample values) one query reads at most.
_STATS_COLUMNS = 50


def _samples_sql(db: "Reader", table: str, column: str) -> str:
    """A column's first distinct values that are not NULL, among the table's first rows."""
    return first_values_sql(db, table, column, SAMPLE_VALUES, scan=STATS_SAMPLE)


def first_values_sql(db: "Reader", table: str, column: str, limit: int, *, scan: int | None = None) -> str:
    """A query for the first ``limit`` distinct values of a column that are not NULL (among the table's first
    ``scan`` rows when given), the same ones in every process. SQLite and MySQL give a DISTINCT's values in the
    order they first appear, PostgreSQL in its plan's order; DuckDB's DISTINCT runs on several threads and gives
    them in another order each time, so there the values are ordered by where they first appear, as on SQLite.

    >>> from types import SimpleNamespace
    >>> duck = SimpleNamespace(backend="duckdb", quote=lambda n: f'"{n}"')
    >>> first_values_sql(duck, "t", "c", 3)
    'SELECT "c" FROM (SELECT "c", row_number() OVER () AS n FROM "t") AS o WHERE "c" IS NOT NULL GROUP BY "c" ORDER BY min(n) LIMIT 3'
    """
    t, c = db.quote(table), db.quote(column)
    rows = f"(SELECT {c} FROM {t} LIMIT {scan}) AS s" if scan is not None else t
    if db.backend == "duckdb":
        return (f"SELECT {c} FROM (SELECT {c}, row_number() OVER () AS n FROM {rows}) AS o "
                f"WHERE {c} IS NOT NULL GROUP BY {c} ORDER BY min(n) LIMIT {limit}")
    return f"SELECT DISTINCT {c} FROM {rows} WHERE {c} IS NOT NULL LIMIT {limit}"


def _count_and_samples(db: "Reader", table: Table) -> tuple[Any, dict[str, list[tuple[Any]]]]:
    """The table's row count and, on PostgreSQL, the sample values of its columns, as rows of one column: one
    query for the count and each 50 columns' samples (each column's own query, as :func:`_samples_sql` reads it,
    as an array), where a query per column was a round trip each to a server. A group whose query fails (a
    ``json`` column has no DISTINCT) is halved until the column that fails is alone; that column, one whose values
    come back as no list (an enum's, which the driver does not know) and one of several values (arrays, records)
    are read by their own query, as on the other engines. A query that runs out of time ends the reading together:
    the count, then each column, are read alone, each with its own time, as before."""
    t = db.quote(table.name)
    count_sql = f"SELECT COUNT(*) FROM {t}"
    out: dict[str, list[tuple[Any]]] = {}
    count: list[Any] = []
    slow: list[bool] = []

    def read(group: list[str]) -> None:
        if slow:
            return
        head = [count_sql.join("()")] if not count else []
        parts = [f"(SELECT array_agg(v) FROM ({_samples_sql(db, table.name, n)}) AS q(v))" for n in group]
        try:
            row = db.trusted_read("SELECT " + ", ".join(head + parts), timeout_s=db.timeout_s, max_rows=1).rows[0]
        except QueryTimeoutError:
            slow.append(True)
            return
        except SqlweaveError:
            if len(group) > 1:
                read(group[:len(group) // 2])
                read(group[len(group) // 2:])
            return
        if head:
            count.append(row[0])
        out.update({n: [(v,) for v in (values or [])] for n, values in zip(group, row[len(head):])
                    if values is None or isinstance(values, list)})

    if db.backend == "postgresql":
        names = [c.name for c in table.columns if not is_composite_type(c.type)]
        for start in range(0, len(names), _STATS_COLUMNS):
            read(names[start:start + _STATS_COLUMNS])
    if not count:
        count.append(db.trusted_read(count_sql, timeout_s=db.timeout_s, max_rows=1).rows[0][0])
    return count[0], out


def _stats_sql(db: "Reader", table: str, columns: list[str]) -> str:
    """One query of each column's distinct values, NULLs, minimum and maximum, over the table's first rows."""
    q = db.quote
    parts = [f"COUNT(DISTINCT {q(c)}), SUM(CASE WHEN {q(c)} IS NULL THEN 1 ELSE 0 END), MIN({q(c)}), MAX({q(c)})"
             for c in columns]
    return (f"SELECT {', '.join(parts)} FROM (SELECT {', '.join(q(c) for c in columns)} FROM {q(table)} "
            f"LIMIT {STATS_SAMPLE}) AS s")


def _stats_together(db: "Reader", table: Table) -> dict[str, tuple[Any, ...]]:
    """The statistics of a table's columns read by one query for each 50 of them (a round trip to a server per
    column added up to minutes for a schema of hundreds of tables); a group with a column whose values do not
    compare (no MIN for JSON) is left to one query per column."""
    out: dict[str, tuple[Any, ...]] = {}
    names = [c.name for c in table.columns]
    for start in range(0, len(names), _STATS_COLUMNS):
        group = names[start:start + _STATS_COLUMNS]
        try:
            row = db.trusted_read(_stats_sql(db, table.name, group), timeout_s=db.timeout_s, max_rows=1).rows[0]
        except SqlweaveError:
            continue
        out.update({name: tuple(row[4 * i:4 * i + 4]) for i, name in enumerate(group)})
    return out


def _short(v: Any, postgres: bool = False) -> Any:
    """A value as a schema shows it: bytes as their size, a long text cut short, anything else that is not a
    number, a text or a boolean as text; on PostgreSQL an array as PostgreSQL writes it (``{sql,db}``, which
    ``'{sql,db}'`` in a query means), not as the Python list the driver gives.

    >>> _short(["sql", "big data", None], postgres=True), _short(["sql", "db"])
    ('{sql,"big data",NULL}', "['sql', 'db']")
    """
    if isinstance(v, (bytes, bytearray, memoryview)):
        return f"<{len(bytes(v))} bytes>"
    if postgres and isinstance(v, list):
        v = _pg_array(v)
    if isinstance(v, str) and len(v) > _MAX_SAMPLE_TEXT:
        return v[: _MAX_SAMPLE_TEXT - 3] + "..."
    if v is not None and not isinstance(v, (int, float, str, bool)):
        return str(v)
    return v


def _pg_array(values: list[Any]) -> str:
    """PostgreSQL's text of an array: elements that are empty, spell NULL, or hold a space, a comma, a brace, a
    quote or a backslash are quoted; NULL is bare; a nested list is a nested array."""
    parts = []
    for x in values:
        if x is None:
            parts.append("NULL")
        elif isinstance(x, list):
            parts.append(_pg_array(x))
        else:
            text = ("t" if x else "f") if isinstance(x, bool) else str(x)
            if not text or text.upper() == "NULL" or any(ch in '{},"\\' or ch.isspace() for ch in text):
                text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
            parts.append(text)
    return "{" + ",".join(parts) + "}"


