"""Render a schema as prompt text.

Three styles: ``create_table`` (CREATE TABLE statements with keys, descriptions as
comments and a few sample rows), ``compact`` (one ``table(col type, ...)`` line
per table, then the foreign keys) and ``mschema`` (XiYan-SQL's M-Schema: one line per
column with its type, key, description and a few example values, then the foreign keys).

>>> from sqlweave.schema import Schema, Table, Column
>>> s = Schema("x", (Table("singer", (Column("id", "INTEGER", primary_key=True), Column("name", "TEXT"))),))
>>> print(render_compact(s))
singer(id INTEGER PK, name TEXT)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from sqlglot import exp

from ..errors import ConfigurationError
from ..schema import Schema, Table


def _ident(name: str, dialect: str) -> str:
    return exp.to_identifier(name).sql(dialect=dialect)


def _value(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


def _create_table(table: Table, schema: Schema, sample_rows: int, dialect: str) -> str:
    lines = []
    for c in table.columns:
        line = f"  {_ident(c.name, dialect)} {c.type or 'TEXT'}"
        if c.description:
            line += f" -- {c.description}"
        lines.append(line)
    pk = table.primary_key
    extra = []
    if pk:
        extra.append(f"  PRIMARY KEY ({', '.join(_ident(k, dialect) for k in pk)})")
    for fk in schema.foreign_keys_of(table.name):
        extra.append(
            f"  FOREIGN KEY ({_ident(fk.column, dialect)}) REFERENCES "
            f"{_ident(fk.ref_table, dialect)}({_ident(fk.ref_column, dialect)})"
        )
    # Commas go between definitions, never inside a trailing "-- comment".
    body = []
    defs = lines + extra
    for i, d in enumerate(defs):
        sep = "," if i < len(defs) - 1 else ""
        if " -- " in d:
            code, comment = d.split(" -- ", 1)
            body.append(f"{code}{sep} -- {comment}")
        else:
            body.append(d + sep)
    head = f"CREATE TABLE {_ident(table.name, dialect)} ("
    if table.description:
        head = f"-- {table.description}\n" + head
    text = head + "\n" + "\n".join(body) + "\n);"
    rows = table.sample_rows[:sample_rows]
    if rows:
        header = "\t".join(table.column_names)
        data = "\n".join("\t".join(_value(v) for v in r) for r in rows)
        text += f"\n/*\n{len(rows)} example rows:\nSELECT * FROM {_ident(table.name, dialect)} LIMIT {len(rows)};\n{header}\n{data}\n*/"
    return text


def render_create_table(schema: Schema, *, sample_rows: int = 3) -> str:
    """CREATE TABLE statements (keys, descriptions, ``sample_rows`` example rows per table)."""
    return "\n\n".join(_create_table(t, schema, sample_rows, schema.dialect) for t in schema.tables)


def render_compact(schema: Schema) -> str:
    """One line per table, ``table(col TYPE, ...)``, then ``table.col = table.col`` foreign keys."""
    d = schema.dialect
    lines = []
    for t in schema.tables:
        cols = ", ".join(f"{_ident(c.name, d)} {c.type or 'TEXT'}{' PK' if c.primary_key else ''}" for c in t.columns)
        lines.append(f"{_ident(t.name, d)}({cols})")
    if schema.foreign_keys:
        lines.append("Foreign keys:")
        lines += [
            f"{_ident(fk.table, d)}.{_ident(fk.column, d)} = {_ident(fk.ref_table, d)}.{_ident(fk.ref_column, d)}"
            for fk in schema.foreign_keys
        ]
    return "\n".join(lines)


def _examples(table: Table, index: int, limit: int = 3, width: int = 40) -> list[str]:
    """Up to ``limit`` distinct example values of column ``index`` (its own samples, else the sample rows'),
    each cut to ``width`` characters."""
    values = list(table.columns[index].samples) or [row[index] for row in table.sample_rows if index < len(row)]
    shown: list[str] = []
    for v in values:
        text = str(v) if v is not None else ""
        text = text if len(text) <= width else text[: width - 3] + "..."
        if text.strip() and text not in shown:
            shown.append(text)
        if len(shown) == limit:
            break
    return shown


def render_mschema(schema: Schema) -> str:
    """XiYan-SQL's M-Schema: per table, one ``(column:TYPE, Primary Key, description, Examples: [...])`` line
    per column, then the foreign keys as ``table.col=table.col``.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> t = Table("singer", (Column("id", "INTEGER", primary_key=True), Column("name", "TEXT")),
    ...           sample_rows=((1, "Joe Sharp"), (2, "Timbaland")))
    >>> print(render_mschema(Schema("x", (t,))))
    # Table: singer
    [
    (id:INTEGER, Primary Key, Examples: [1, 2]),
    (name:TEXT, Examples: [Joe Sharp, Timbaland])
    ]
    """
    d = schema.dialect
    blocks = []
    for t in schema.tables:
        lines = []
        for i, c in enumerate(t.columns):
            parts = [f"{_ident(c.name, d)}:{(c.type or 'TEXT').upper()}"]
            if c.primary_key or c.name in t.primary_key:
                parts.append("Primary Key")
            if c.description:
                parts.append(" ".join(c.description.split()))
            examples = _examples(t, i)
            if examples:
                parts.append(f"Examples: [{', '.join(examples)}]")
            lines.append(f"({', '.join(parts)})")
        head = f"# Table: {_ident(t.name, d)}" + (f", {' '.join(t.description.split())}" if t.description else "")
        blocks.append(head + "\n[\n" + ",\n".join(lines) + "\n]")
    text = "\n".join(blocks)
    if schema.foreign_keys:
        text += "\n【Foreign keys】\n" + "\n".join(
            f"{_ident(fk.table, d)}.{_ident(fk.column, d)}={_ident(fk.ref_table, d)}.{_ident(fk.ref_column, d)}"
            for fk in schema.foreign_keys)
    return text


STYLES: dict[str, Callable[[Schema], str]] = {
    "create_table": render_create_table,
    "compact": render_compact,
    "mschema": render_mschema,
}


@dataclass(frozen=True)
class RenderedSchema:
    """A schema as prompt text, with its style and token count."""

    style: str
    text: str
    tokens: int
    tokens_exact: bool


def render_schema(schema: Schema, style: str = "create_table", count: Callable[[str], tuple[int, bool]] | None = None) -> RenderedSchema:
    """Render ``schema`` in ``style`` and count its tokens (``count`` returns ``(tokens, exact)``)."""
    try:
        fn = STYLES[style]
    except KeyError:
        raise ConfigurationError(f"unknown schema style {style!r}", hint=f"Use one of: {', '.join(STYLES)}.") from None
    text = fn(schema)
    if count is None:
        from ..llm.tokens import count_tokens

        count = count_tokens
    tokens, exact = count(text)
    return RenderedSchema(style=style, text=text, tokens=tokens, tokens_exact=exact)
