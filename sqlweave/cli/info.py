"""What this installation offers: ``presets`` (the pipelines and their measured accuracy), ``models`` (the embedded
models' weights) and ``doctor`` (every part checked, exit status 1 when one sqlweave needs is broken)::

    $ sqlweave presets --json
    $ sqlweave doctor --db shop.sqlite
"""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer
from rich.table import Table as RichTable
from rich.text import Text

from .. import display
from .output import console, errors, say


def presets(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """List the pipeline presets (for --pipeline/-p), what each is made of, and the measured ones' accuracy and
    median seconds on the 972 Spider dev questions with the embedded 1.5B model (BENCHMARKS.md)."""
    from ..presets import DEFAULT, describe_presets

    rows = describe_presets()
    if as_json:
        sys.stdout.write(json.dumps(rows) + "\n")
        return
    table = RichTable(header_style="bold")
    table.add_column("preset", no_wrap=True)
    table.add_column("made of", overflow="fold")
    for col in ("Spider dev EX", "calls / q", "median s / q"):
        table.add_column(col, justify="right")
    for row in rows:
        measured = row["spider_dev_ex"] is not None
        table.add_row(row["name"] + (" (the default)" if row["name"] == DEFAULT else ""), row["made_of"],
                      f"{row['spider_dev_ex']:.1f}%" if measured else "",
                      f"{row['calls_per_question']:.2f}" if measured else "",
                      f"{row['median_seconds']:.2f}" if measured else "")
    console.print(table)
    say("Figures: all 972 Spider dev questions, embedded 1.5B model, 2 CPU cores (BENCHMARKS.md). "
         "Stages can be added to any preset: -p default+examples.", style="dim")


def models() -> None:
    """List the embedded models and whether their weights are installed and assembled."""
    from ..llm.weights import MODELS, assembled_path, installed_parts, is_assembled

    table = RichTable(header_style="bold")
    for col in ("spec", "model", "parts installed", "assembled", "path"):
        table.add_column(col)
    for key, spec in MODELS.items():
        table.add_row(f"local:{key}", spec.name, f"{installed_parts(spec)}/{spec.parts}",
                      "yes" if is_assembled(spec) else "no",
                      str(assembled_path(spec)))
    console.print(table)


def doctor(
    db: Optional[str] = typer.Option(None, "--db", help="Also open this database (path or URL) and read its schema."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Check this installation: the cache folder, the embedded model, llama.cpp, the extras, and a database.

    Exit code 1 when something sqlweave needs is broken or missing (optional extras that are not installed are
    listed, not counted). Paste its output in a bug report.
    """
    from ..doctor import run_checks

    with errors():
        checks = run_checks(db)
    if as_json:
        sys.stdout.write(json.dumps([c.as_dict() for c in checks]) + "\n")
    else:
        table = RichTable(header_style="bold")
        for col in ("", "part", "found", "what to do"):
            table.add_column(col, overflow="fold")
        marks = {True: ("ok", "green"), False: ("no", "bold red"), None: ("-", "dim")}
        for c in checks:
            mark, style = marks[c.ok]
            table.add_row(Text(mark, style=style), c.name, display.data(c.found, max_chars=None),
                          display.data(c.todo, max_chars=None))
        console.print(table)
    if any(c.ok is False for c in checks):
        raise typer.Exit(1)

