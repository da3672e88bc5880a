"""The ``sqlweave`` command line: the root ``app``, and the commands of each module wired onto it in the order
``sqlweave --help`` lists them.

One module per group of commands: :mod:`.ask` (ask, demo, chat), :mod:`.database` (schema, sql), :mod:`.serve`
(serve, mcp), :mod:`.info` (presets, models, doctor), :mod:`.eval`, :mod:`.tool` and :mod:`.examples` (the sub-command
groups); :mod:`.output` prints and turns library errors into a short message and exit status 2 (never a
traceback), :mod:`.build` makes the database, the model and the engine a command runs, :mod:`.options` holds the
options several commands share.

>>> from typer.testing import CliRunner
>>> print(CliRunner().invoke(app, ["--version"]).output.split()[0])
sqlweave
"""

from __future__ import annotations

import inspect

import typer

from .. import __version__
from . import ask, database, examples, info, serve, tool
from . import eval as eval_group
from .output import console

app = typer.Typer(
    name="sqlweave",
    help="Ask a relational database a question in plain language; get safe SQL, its result and a trace.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command()(ask.ask)
app.command()(database.schema)
app.command("sql")(database.run_sql)
app.command()(ask.demo)
app.command()(ask.chat)
app.command()(serve.serve)
app.command("mcp")(serve.mcp_command)
app.command()(info.presets)
app.command()(info.models)
app.command()(info.doctor)
app.add_typer(eval_group.eval_app, name="eval")
app.add_typer(tool.tool_app, name="tool")
app.add_typer(examples.examples_app, name="examples")


@app.callback(invoke_without_command=True)
def _root(version: bool = typer.Option(False, "--version", help="Print the version.")) -> None:
    if version:
        console.print(f"sqlweave {__version__}")
        raise typer.Exit()
    from ..config import cache_dir
    from ..files import secure_cache_once

    secure_cache_once(cache_dir())  # a cache an older version left readable by others is made private


def _flowing(doc: str) -> str:
    """A command's docstring as its help: the lines of each paragraph joined (typer keeps a docstring's line
    breaks after its first paragraph), a paragraph of code (``{...}``) kept as written.

    >>> print(_flowing('''Serve it.
    ...
    ...     Open the page;
    ...     the API is at /docs.'''))
    Serve it.
    <BLANKLINE>
    Open the page; the API is at /docs.
    """
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(p if p.lstrip().startswith("{") else " ".join(p.split()) for p in paragraphs)


def _flow_help(group: typer.Typer) -> None:
    for command in group.registered_commands:
        if command.help is None and command.callback is not None and command.callback.__doc__:
            command.help = _flowing(command.callback.__doc__)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _flow_help(sub.typer_instance)


_flow_help(app)


def main() -> None:
    """The ``sqlweave`` console script (``python -m sqlweave.cli`` runs it too)."""
    app()
