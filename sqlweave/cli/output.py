"""What the commands print, and how they end: the two consoles, a line of untrusted text, JSON and CSV on stdout,
the spinner while a question is answered, and library errors turned into one message and exit status 2.

>>> with errors():
...     say("3 tables")
3 tables
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator

import typer
from rich.console import Console
from rich.text import Text

from .. import display
from ..errors import SqlweaveError
from ..text import visible

# Console markup is off: every string printed is data or sqlweave's own words, never markup. Styles come from
# Text objects and style= arguments; untrusted text goes through sqlweave.display / sqlweave.text.visible.
console = Console(markup=False, emoji=False, highlight=False)
err_console = Console(stderr=True, markup=False, emoji=False, highlight=False)

#: The exit status of a command that failed with a message (a usage error, a library error, a bug).
EXIT_ERROR = 2


def say(line: object, *, style: str = "", err: bool = False) -> None:
    """Print one line that may hold untrusted text (names, paths, questions, SQL): literally, hidden characters
    made visible."""
    (err_console if err else console).print(Text(visible(line, max_chars=None, keep_newlines=True), style=style))


@contextmanager
def errors() -> Iterator[None]:
    """Run a command's body: a library error becomes its message and hint on stderr and exit status 2, Ctrl-C exit
    status 130, and any other exception one line that asks for a bug report (``SQLWEAVE_DEBUG=1`` lets it rise)."""
    try:
        yield
    except SqlweaveError as err:
        display.print_error(err_console, err)
        raise typer.Exit(EXIT_ERROR) from None
    except KeyboardInterrupt:
        err_console.print("Interrupted.", style="red")
        raise typer.Exit(130) from None
    except (typer.Exit, typer.Abort, typer.TyperException):  # the CLI's own ways out (usage errors among them)
        raise
    except Exception as err:  # a bug of sqlweave's own: said in one line, not as a traceback
        if os.environ.get("SQLWEAVE_DEBUG"):
            raise
        display.print_error(err_console, SqlweaveError(
            f"sqlweave failed unexpectedly ({type(err).__name__}: {err})",
            hint="This is a bug in sqlweave: please report it with the command you ran and the output of "
                 "`sqlweave doctor` (SQLWEAVE_DEBUG=1 shows where it failed)."))
        raise typer.Exit(EXIT_ERROR) from None


def write_json(value: Any, indent: int | None = None) -> None:
    """``value`` as JSON on stdout, every cell exact (:func:`~sqlweave.cells.json_cell`: numbers with every digit,
    NaN as ``"NaN"``, bytes whole); text as stored, in ASCII escapes."""
    from ..cells import json_cell

    sys.stdout.write(json.dumps(json_cell(value, exact_text=True), indent=indent, allow_nan=False) + "\n")


def write_csv(result: Any, *, raw: bool) -> None:
    """A query result as CSV on stdout (``raw``: every cell exactly as stored; else formula-like cells quoted)."""
    from ..export import to_csv

    sys.stdout.write(to_csv(result.columns, result.rows, raw=raw))


def print_rows(rows: list[dict[str, Any]], title: str, as_json: bool) -> None:
    """Records as a table titled ``title`` (or JSON), or a line saying nothing was found."""
    if as_json:
        write_json(rows)
        return
    if rows:
        console.print(display.records_table(rows, Text(visible(title))))
    else:
        say(f"{title}: nothing found", style="dim")


@contextmanager
def nullcontext() -> Iterator[None]:
    yield


class Doing:
    """What the terminal's spinner says while a question is answered: the stage now, in words, and for how long."""

    def __init__(self) -> None:
        self.label = "Starting"
        self.since = time.monotonic()

    def start(self, stage: str) -> None:
        from ..stages.labels import stage_label

        self.label, self.since = stage_label(stage), time.monotonic()

    def sample(self, stage: str, done: int, total: int) -> None:
        """One of a stage's samples is drawn: "Trying other readings 2/4" (the next one is under way)."""
        from ..stages.labels import stage_label

        self.label = f"{stage_label(stage)} {min(done + 1, total)}/{total}"

    def __rich__(self) -> Text:
        return Text(f"{self.label}… {time.monotonic() - self.since:.0f} s", style="dim")


@contextmanager
def working() -> Iterator[Doing]:
    """A spinner on stderr while the block runs (when stderr is a terminal), told each stage as it starts
    (``.start``) and each of its samples (``.sample``)."""
    doing = Doing()
    if not err_console.is_terminal:
        yield doing
        return
    with err_console.status(doing, spinner="dots"):
        yield doing
