"""The database as it is, without a model: ``schema`` (its tables, columns and keys as sqlweave sees them) and
``sql`` (your own SQL under the same safety checks)::

    $ sqlweave schema --db shop.sqlite --find customer
    $ sqlweave sql --db shop.sqlite "SELECT count(*) FROM customers" --json
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .. import display
from .build import open_db, read_schema
from .options import (
    CsvOption,
    DbOption,
    KeysOption,
    KnowledgeOption,
    ParamOption,
    PolicyOption,
    RawCsvOption,
    SchemasOption,
)
from .output import console, errors, say, write_csv, write_json


def schema(
    db: str = DbOption,
    style: str = typer.Option("compact", "--style", help="create_table or compact."),
    as_json: bool = typer.Option(False, "--json", help="Print the schema model as JSON."),
    descriptions: Optional[Path] = typer.Option(None, "--descriptions", help="Table/column descriptions (JSON or CSV folder)."),
    knowledge: Optional[Path] = KnowledgeOption,
    keys_from_data: bool = KeysOption,
    schemas: Optional[str] = SchemasOption,
    refresh: bool = typer.Option(False, "--refresh", help="Read the schema from the database again, not from the "
                                 "copy kept on disk (kept while the database does not change, a day at most)."),
    find: Optional[str] = typer.Option(None, "--find", help="Only the tables whose name or description, or a "
                                       "column's, holds this text (any case): for a database of many tables."),
) -> None:
    """Show the database's tables, columns and keys as sqlweave sees them."""
    from dataclasses import asdict

    from ..db.render import render_schema

    with errors():
        database = open_db(db, descriptions=descriptions, knowledge=knowledge, keys_from_data=keys_from_data,
                           schemas=schemas)
        s = read_schema(database, refresh=refresh)
        total = len(s.tables)
        if find is not None and find.strip():
            s = s.subset({t.name: None for t in s.find(find)})
            if not s.tables:
                say(f"No table or column of the {total} tables holds {find.strip()!r}.", style="dim")
                return
        if as_json:
            write_json(asdict(s), indent=2)
            return
        rendered = render_schema(s, style)
        console.print(display.sql(rendered.text))
        kind = "tokens" if rendered.tokens_exact else "tokens (estimated)"
        say(f"{len(s.tables)} table{'s' if len(s.tables) != 1 else ''}"
             f"{f' of {total}' if len(s.tables) < total else ''}, "
             f"{sum(len(t.columns) for t in s.tables)} columns, "
             f"{len(s.foreign_keys)} foreign keys"
             f"{' (read from the data: the database declares none)' if s.keys_from_data else ''}; "
             f"{rendered.tokens} {kind} as {style}"
             + (f"; schemas {', '.join(s.schemas)} (a name is looked up in that order)" if s.schemas else ""),
             style="dim")
        if s.shadowed:
            say(f"Not read: {', '.join(s.shadowed)} (an earlier schema has a table of the same name, and a query "
                 "naming it reads that one; name its schema first with --schemas to read it instead)", style="yellow")
        if database.schema_kept_since is not None:
            import datetime

            when = datetime.datetime.fromtimestamp(database.schema_kept_since, datetime.timezone.utc)
            say(f"read {when:%Y-%m-%d %H:%M} UTC and kept on disk: the database has not changed since "
                 "(--refresh reads it again)", style="dim")


def run_sql(
    query: str = typer.Argument(..., help="One read-only SQL statement."),
    db: str = DbOption,
    timeout: float = typer.Option(10.0, "--timeout"),
    max_rows: int = typer.Option(1000, "--max-rows"),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON (exact values)."),
    as_csv: bool = CsvOption,
    raw_csv: bool = RawCsvOption,
    policy: Optional[Path] = PolicyOption,
    param: list[str] = ParamOption,
    read: Optional[str] = typer.Option(
        None, "--read", help="The dialect the SQL is written in, when not the database's (postgres, mysql, sqlite, "
        "duckdb, tsql, ...): it is translated first, and what ran is shown."),
    schemas: Optional[str] = SchemasOption,
) -> None:
    """Run your own SQL with the same safety checks (read-only, time limit, row cap, access policy)."""
    with errors():
        database = open_db(db, timeout=timeout, max_rows=max_rows, policy=policy, params=param,
                           schemas=schemas)
        result = database.execute(query, read=read)
        if result.sql != query and not (as_json or as_csv or raw_csv):
            say(f"ran as: {result.sql}", style="dim", err=True)
        if as_json:
            write_json({"sql": result.sql, "columns": result.columns, "rows": result.rows,
                        "truncated": result.truncated})
        elif as_csv or raw_csv:
            write_csv(result, raw=raw_csv)
        else:
            console.print(display.result_view(console, result))

