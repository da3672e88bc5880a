"""``sqlweave tool``: the agent's tools on their own, on one database (search-column, search-value,
shortest-path)::

    $ sqlweave tool search-value "Fischer" --db shop.sqlite --json
"""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer
from rich.progress import BarColumn, Progress, TextColumn

from ..database import Database
from .options import DbOption
from .output import err_console, errors, print_rows, say

tool_app = typer.Typer(help="The agent's tools, on their own: search-column, search-value, shortest-path.",
                       no_args_is_help=True)


@tool_app.command("search-column")
def tool_search_column(
    semantic: str = typer.Argument(..., help='What the column is about, e.g. "age of a singer".'),
    db: str = DbOption,
    k: int = typer.Option(5, "-k", help="How many columns."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """SearchColumn: the columns closest in meaning to SEMANTIC (dense embeddings), with value statistics."""
    from ..agent.tools import Toolkit

    with errors():
        cols = Toolkit(Database.open(db)).search_column(semantic, k=k)
        print_rows([c.as_dict() for c in cols], f"columns like {semantic!r}", as_json)


@tool_app.command("search-value")
def tool_search_value(
    value: str = typer.Argument(..., help="A value as the question spells it."),
    db: str = DbOption,
    table: Optional[str] = typer.Option(None, "--table"),
    column: Optional[str] = typer.Option(None, "--column"),
    k: int = typer.Option(5, "-k"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """SearchValue: where a text value is stored and how it is spelled (BM25 over cell values, index persisted)."""
    from ..agent.tools import Toolkit

    with errors():
        kit = Toolkit(Database.open(db))
        with Progress(TextColumn("indexing values"), BarColumn(), TextColumn("{task.completed}/{task.total} tables"),
                      console=err_console, transient=True, disable=as_json) as bar:
            task = bar.add_task("index", total=None)
            from ..retrieval.values import ValueIndex

            kit._values = ValueIndex.build(kit.db, progress=lambda i, n: bar.update(task, completed=i, total=n))
        hits = kit.search_value(value, table=table, column=column, k=k)
        print_rows([h.as_dict() for h in hits], f"values like {value!r}", as_json)


@tool_app.command("shortest-path")
def tool_shortest_path(
    start: str = typer.Argument(..., help="table.column"),
    end: str = typer.Argument(..., help="table.column"),
    db: str = DbOption,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """FindShortestPath: the JOIN conditions linking two columns' tables (foreign keys, networkx)."""
    from ..agent.tools import Toolkit

    with errors():
        path = Toolkit(Database.open(db)).find_shortest_path(start, end)
        if as_json:
            sys.stdout.write(json.dumps(path.as_dict()) + "\n")
        else:
            say(path.observation())

