"""The ``sqlweave`` command line: ask, schema, sql, demo, models.

Library errors are turned into short messages here (never a traceback) and a non-zero exit code.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

import typer
from rich.console import Console
from rich.panel import Panel
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.syntax import Syntax
from rich.table import Table as RichTable

from . import __version__
from .db.connection import Database, QueryResult
from .errors import SqlweaveError
from .llm.base import LLM
from .pipeline import Answer

app = typer.Typer(
    name="sqlweave",
    help="Ask a relational database a question in plain language; get safe SQL, its result and a trace.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)

EXIT_ERROR = 2

DbOption = typer.Option(..., "--db", help="SQLite/DuckDB file path or SQLAlchemy URL.")
ModelOption = typer.Option("local", "--model", "-m", help="local, local:1.5b, local:0.5b, openai:MODEL, ...")


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except SqlweaveError as err:
        err_console.print(f"[bold red]Error:[/] {err.message}")
        if err.hint:
            err_console.print(f"[yellow]Hint:[/] {err.hint}")
        raise typer.Exit(EXIT_ERROR) from None
    except KeyboardInterrupt:
        err_console.print("[red]Interrupted.[/]")
        raise typer.Exit(130) from None


def _build_llm(spec: str, *, cache: bool, base_url: str | None, api_key: str | None, quiet: bool) -> LLM:
    from .llm.registry import get_llm

    opts: dict[str, Any] = {}
    if spec.startswith("openai"):
        if base_url:
            opts["base_url"] = base_url
        if api_key:
            opts["api_key"] = api_key
    llm = get_llm(spec, cache=cache, **opts)
    inner = getattr(llm, "inner", llm)
    from .llm.local import LocalLLM

    if isinstance(inner, LocalLLM):
        _prepare_local(inner, quiet=quiet)
    return llm


def _prepare_local(llm: Any, *, quiet: bool) -> None:
    """Assemble the weights (with a progress bar the first time) and load the model (with a spinner)."""
    from .llm.weights import MODELS, ensure_weights, is_assembled

    spec = MODELS[llm.key]
    out = err_console
    if not is_assembled(spec):
        with Progress(TextColumn("[bold]Assembling {task.description}"), BarColumn(), DownloadColumn(),
                      TimeRemainingColumn(), console=out, disable=quiet) as bar:
            task = bar.add_task(spec.name, total=None)
            ensure_weights(llm.key, progress=lambda done, total: bar.update(task, completed=done, total=total))
    with out.status(f"Loading {spec.name} ...", spinner="dots") if not quiet else _nullcontext():
        llm.llama  # noqa: B018 - loads and caches the model


@contextmanager
def _nullcontext() -> Iterator[None]:
    yield


def _result_table(result: QueryResult, limit: int = 50) -> RichTable:
    table = RichTable(show_lines=False, header_style="bold cyan")
    for c in result.columns:
        table.add_column(str(c))
    for row in result.rows[:limit]:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    more = result.row_count - limit
    if more > 0 or result.truncated:
        table.caption = f"{result.row_count} rows{' (capped)' if result.truncated else ''}; first {min(limit, result.row_count)} shown"
    else:
        table.caption = f"{result.row_count} row{'s' if result.row_count != 1 else ''}"
    return table


def _print_trace(answer: Answer) -> None:
    table = RichTable(title="Trace", header_style="bold magenta")
    for col in ("stage", "seconds", "prompt tok", "output tok", "notes"):
        table.add_column(col)
    for e in answer.trace:
        notes = ", ".join(f"{k}={v}" for k, v in e.notes.items() if k != "sql")
        if e.error:
            notes = f"[red]{e.error}[/] " + notes
        table.add_row(e.stage, f"{e.seconds:.3f}", str(e.usage.prompt_tokens), str(e.usage.completion_tokens), notes)
    table.caption = (f"total {answer.seconds:.2f} s, {answer.model_calls} model call(s), "
                     f"{answer.usage.prompt_tokens} prompt + {answer.usage.completion_tokens} output tokens")
    console.print(table)
    for e in answer.trace:
        for i, call in enumerate(e.calls):
            prompt = "\n\n".join(f"[{m.role}]\n{m.content}" for m in call.messages)
            console.print(Panel(prompt, title=f"{e.stage}: prompt {i + 1}", border_style="dim"))
            console.print(Panel("\n---\n".join(call.outputs), title=f"{e.stage}: model output {i + 1}"
                                + (" (cached)" if call.cached else ""), border_style="dim"))


def _show_answer(answer: Answer, *, as_json: bool, trace: bool) -> None:
    if as_json:
        data = answer.as_dict()
        if not trace:
            data.pop("trace")
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
        return
    if trace:
        _print_trace(answer)
    if answer.sql:
        console.print(Syntax(answer.sql, "sql", word_wrap=True))
    if answer.result is not None:
        console.print(_result_table(answer.result))


def _ask(db: Database, llm: LLM, question: str, pipeline: str, *, as_json: bool, trace: bool,
         any_language: bool) -> None:
    from .presets import build_pipeline
    from .stages import CheckQuestion

    pipe = build_pipeline(pipeline)
    if any_language:
        pipe = pipe.replace_stage("check_question", CheckQuestion(any_language=True))
    answer = pipe.run(question, db, llm)
    _show_answer(answer, as_json=as_json, trace=trace)
    answer.raise_for_error()


@app.command()
def ask(
    question: str = typer.Argument(..., help="The question, in plain English."),
    db: str = DbOption,
    model: str = ModelOption,
    pipeline: str = typer.Option("zero-shot", "--pipeline", "-p", help="Pipeline preset."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
    trace: bool = typer.Option(False, "--trace", help="Show every stage with its prompt, output, tokens and seconds."),
    timeout: float = typer.Option(10.0, "--timeout", help="Seconds a query may run before it is stopped."),
    max_rows: int = typer.Option(1000, "--max-rows", help="Most rows returned."),
    descriptions: Optional[Path] = typer.Option(None, "--descriptions", help="Table/column descriptions (JSON or CSV folder)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache."),
    any_language: bool = typer.Option(False, "--any-language", help="Try questions that are not in English."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible server URL."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="API key for an OpenAI-compatible server."),
) -> None:
    """Answer QUESTION about the database with SQL and its result."""
    with _errors():
        database = Database.open(db, timeout_s=timeout, max_rows=max_rows, descriptions=descriptions)
        database.schema()
        llm = _build_llm(model, cache=not no_cache, base_url=base_url, api_key=api_key, quiet=as_json)
        _ask(database, llm, question, pipeline, as_json=as_json, trace=trace, any_language=any_language)


@app.command()
def schema(
    db: str = DbOption,
    style: str = typer.Option("compact", "--style", help="create_table or compact."),
    as_json: bool = typer.Option(False, "--json", help="Print the schema model as JSON."),
    descriptions: Optional[Path] = typer.Option(None, "--descriptions", help="Table/column descriptions (JSON or CSV folder)."),
) -> None:
    """Show the database's tables, columns and keys as sqlweave sees them."""
    from dataclasses import asdict

    from .db.render import render_schema

    with _errors():
        database = Database.open(db, descriptions=descriptions)
        s = database.schema()
        if as_json:
            sys.stdout.write(json.dumps(asdict(s), indent=2, default=str) + "\n")
            return
        rendered = render_schema(s, style)
        console.print(Syntax(rendered.text, "sql", word_wrap=True))
        kind = "tokens" if rendered.tokens_exact else "tokens (estimated)"
        console.print(f"[dim]{len(s.tables)} tables, {sum(len(t.columns) for t in s.tables)} columns, "
                      f"{len(s.foreign_keys)} foreign keys; {rendered.tokens} {kind} as {style}[/]")


@app.command("sql")
def run_sql(
    query: str = typer.Argument(..., help="One read-only SQL statement."),
    db: str = DbOption,
    timeout: float = typer.Option(10.0, "--timeout"),
    max_rows: int = typer.Option(1000, "--max-rows"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run your own SQL with the same safety checks (read-only, time limit, row cap)."""
    with _errors():
        result = Database.open(db, timeout_s=timeout, max_rows=max_rows).execute(query)
        if as_json:
            sys.stdout.write(json.dumps({"columns": result.columns, "rows": result.rows,
                                         "truncated": result.truncated}, default=str) + "\n")
        else:
            console.print(_result_table(result))


@app.command()
def demo(
    question: Optional[str] = typer.Argument(None, help="A question about the demo shop (default: a sample one)."),
    model: str = ModelOption,
    trace: bool = typer.Option(False, "--trace"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Ask a question of the bundled demo database (a small shop) with the embedded model."""
    from .db.demo import DEMO_QUESTIONS, demo_database_path

    with _errors():
        path = demo_database_path()
        q = question or DEMO_QUESTIONS[0]
        if not as_json:
            console.print(f"[bold]Demo database:[/] {path}")
            console.print(f"[bold]Question:[/] {q}")
        database = Database.open(path)
        llm = _build_llm(model, cache=True, base_url=None, api_key=None, quiet=as_json)
        _ask(database, llm, q, "zero-shot", as_json=as_json, trace=trace, any_language=False)


@app.command()
def models() -> None:
    """List the embedded models and whether their weights are installed and assembled."""
    import importlib.util

    from .llm.weights import MODELS, assembled_path, is_assembled

    table = RichTable(header_style="bold")
    for col in ("spec", "model", "parts installed", "assembled", "path"):
        table.add_column(col)
    for key, spec in MODELS.items():
        installed = sum(importlib.util.find_spec(m) is not None for m in spec.modules())
        table.add_row(f"local:{key}", spec.name, f"{installed}/{spec.parts}", "yes" if is_assembled(spec) else "no",
                      str(assembled_path(spec)))
    console.print(table)


@app.callback(invoke_without_command=True)
def _root(version: bool = typer.Option(False, "--version", help="Print the version.")) -> None:
    if version:
        console.print(f"sqlweave {__version__}")
        raise typer.Exit()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
