"""The ``sqlweave`` command line: ask, schema, sql, demo, models.

Library errors are turned into short messages here (never a traceback) and a non-zero exit code.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table as RichTable
from rich.text import Text

from . import __version__, display
from .database import Database
from .errors import ConfigurationError, SqlweaveError
from .eval.datasets import DATASETS, load_dataset
from .llm.base import LLM
from .pipeline import Answer
from .text import visible

if TYPE_CHECKING:
    from .schema import Schema
    from .engine import Engine

app = typer.Typer(
    name="sqlweave",
    help="Ask a relational database a question in plain language; get safe SQL, its result and a trace.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Console markup is off: every string printed is data or sqlweave's own words, never markup. Styles come from
# Text objects and style= arguments; untrusted text goes through sqlweave.display / sqlweave.text.visible.
console = Console(markup=False, emoji=False, highlight=False)
err_console = Console(stderr=True, markup=False, emoji=False, highlight=False)


def _say(line: object, *, style: str = "", err: bool = False) -> None:
    """Print one line that may hold untrusted text (names, paths, questions, SQL): literally, hidden characters
    made visible."""
    (err_console if err else console).print(Text(visible(line, max_chars=None, keep_newlines=True), style=style))

EXIT_ERROR = 2

DbOption = typer.Option(..., "--db",
                        help="SQLite/DuckDB file path, CSV/Parquet/JSON/Excel file or folder, or SQLAlchemy URL.")
ModelOption = typer.Option("local", "--model", "-m", help="local, local:1.5b, local:0.5b, openai:MODEL, ...")
#: ``--db`` for the commands that also take ``--demo`` (one of the two is needed).
DbOrDemoOption = typer.Option(None, "--db", help="SQLite/DuckDB file path, CSV/Parquet/JSON/Excel file or folder, or "
                              "SQLAlchemy URL (or --demo).")
AskDemoOption = typer.Option(False, "--demo", help="Ask the bundled demo shop (with its knowledge file) instead of "
                             "--db.")


def _db_or_demo(db: str | None, demo: bool, knowledge: Path | None) -> tuple[str, Path | None]:
    """The database a command asks (``--db``, or the demo shop with its knowledge file for ``--demo``)."""
    if demo and db:
        raise ConfigurationError("both --db and --demo were given", hint="Give one of them.")
    if demo:
        from .db.demo import demo_database_path, demo_knowledge_path

        return str(demo_database_path()), knowledge or demo_knowledge_path()
    if not db:
        raise ConfigurationError("no database was given", hint="Pass --db PATH_OR_URL, or --demo for the bundled "
                                 "demo shop.")
    return db, knowledge


@contextmanager
def _errors() -> Iterator[None]:
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


def _build_llm(spec: str, *, cache: bool, base_url: str | None, api_key: str | None, quiet: bool,
               load: bool = True, replay: list[Path] | None = None) -> LLM:
    """The model backend every command uses; the embedded model is assembled and loaded now (with progress) unless
    ``load`` is false (a server loads it in the background once it is listening). ``replay`` (run folders or trace
    files) answers the calls they recorded without the model, inside the response cache."""
    from .llm.registry import get_llm

    opts: dict[str, Any] = {}
    if spec.startswith("openai"):
        opts.update({k: v for k, v in (("base_url", base_url), ("api_key", api_key)) if v})
    llm = get_llm(spec, cache=cache, **opts)
    if replay:
        from .llm.cache import CachedLLM
        from .llm.recorded import RecordedLLM

        if isinstance(llm, CachedLLM):  # inside the cache, which then keeps what the recording answers
            llm.inner = recorded = RecordedLLM(llm.inner, replay)
        else:
            llm = recorded = RecordedLLM(llm, replay)
        unqualified = f" ({recorded.unqualified} traced without their options)" if recorded.unqualified else ""
        _say(f"{len(recorded)} recorded model calls to answer from {', '.join(map(str, replay))}{unqualified}",
             style="dim", err=True)
        if recorded.costless:
            _say(f"{recorded.costless} of them were answered from the recorded run's cache and kept no first cost: "
                 "this run's seconds count them as free (compare seconds with the recorded run's own results)",
                 err=True)
    if load:
        _load_local(llm, quiet=quiet)
    return llm


def _load_local(llm: LLM, *, quiet: bool) -> None:
    """Assemble and load the embedded model behind ``llm``, if there is one (with progress)."""
    from .llm.local import LocalLLM

    inner = _unwrap(llm, lambda backend: isinstance(backend, LocalLLM))
    if inner is not None:
        _prepare_local(inner, quiet=quiet)


#: Vote options that draw other samples from the same messages: traces that kept no options cannot tell them apart.
REDRAWING = ("temperature", "seed", "max_tokens", "more", "fenced")


def _key_values(pairs: list[str], option: str) -> dict[str, Any]:
    """``["n=8", "select=majority"]`` as ``{"n": 8, "select": "majority"}`` (a value is JSON when it parses)."""
    def value(raw: str) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            return raw

    return {key: value(raw) for key, raw in _params(pairs, option, form="KEY=VALUE").items()}


def _unwrap(llm: Any, wanted: Callable[[Any], bool]) -> Any:
    """The first backend in ``llm``'s chain of wrappers (each one's ``inner``) that is ``wanted``, or None."""
    while llm is not None and not wanted(llm):
        llm = getattr(llm, "inner", None)
    return llm


def _engine(db: str, *, model: str, pipeline: str, english_only: bool = False, examples: Path | None = None,
            timeout: float = 10.0, max_rows: int = 1000, descriptions: Path | None = None,
            knowledge: Path | None = None, policy: Path | None = None, params: list[str] | None = None,
            no_cache: bool = False, base_url: str | None = None, api_key: str | None = None,
            quiet: bool = False, schema_budget: int | None = None, keys_from_data: bool = True,
            schemas: str | None = None) -> "Engine":
    """The one way the CLI builds an engine: the preset first (a typo fails at once), then the database with its
    side files (a malformed file, a missing database or an unbound row-filter parameter fails before the model
    loads), then the model."""
    from .engine import Engine

    pipe = _pipeline(pipeline, english_only=english_only, examples=examples, schema_budget=schema_budget)
    database = _open_database(db, timeout=timeout, max_rows=max_rows, descriptions=descriptions,
                              knowledge=knowledge, policy=policy, params=params, keys_from_data=keys_from_data,
                              schemas=schemas)
    _read_schema(database, quiet=quiet)
    database.check_bound()
    llm = _build_llm(model, cache=not no_cache, base_url=base_url, api_key=api_key, quiet=quiet)
    return Engine(database, llm, pipe)


def _read_schema(database: Database, *, quiet: bool = False, refresh: bool = False) -> "Schema":
    """The database's schema, with a progress bar over its tables while they are read from the database (a server
    far away takes a while the first time; a schema kept on disk shows none)."""
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} tables"),
                  console=err_console, transient=True, disable=quiet) as bar:
        task = bar.add_task("Reading the schema", total=None, visible=False)

        def step(done: int, total: int) -> None:
            # after the last table come the keys (read from the data when the database declares none: seconds)
            bar.update(task, completed=done, total=total, visible=True,
                       description="Reading the schema" if done < total else "Reading the schema: keys")
        return database.schema(refresh=refresh, progress=step)


def _prepare_local(llm: Any, *, quiet: bool) -> None:
    """Assemble the weights (with a progress bar the first time) and load the model (with a spinner)."""
    from .llm.weights import MODELS, ensure_weights, is_assembled

    spec = MODELS[llm.key]
    out = err_console
    if not is_assembled(spec):
        with Progress(TextColumn("[bold]Assembling {task.description}"), BarColumn(), DownloadColumn(),
                      TimeRemainingColumn(), console=out, disable=quiet) as bar:
            task = bar.add_task(escape(spec.name), total=None)
            ensure_weights(llm.key, progress=lambda done, total: bar.update(task, completed=done, total=total))
    with out.status(Text(f"Loading {spec.name} ..."), spinner="dots") if not quiet else _nullcontext():
        llm.llama  # noqa: B018 - loads and caches the model


@contextmanager
def _nullcontext() -> Iterator[None]:
    yield


def _print_trace(answer: Answer) -> None:
    console.print(display.trace_table(answer))
    for panel in display.model_calls(answer):
        console.print(panel)


CsvOption = typer.Option(False, "--csv", help="Print the result as CSV; formula-like cells (=, +, -, @) are "
                         "prefixed with ' so spreadsheets show them as text.")
RawCsvOption = typer.Option(False, "--raw-csv", help="Print the result as CSV with every cell exactly as stored.")


def _write_json(value: Any, indent: int | None = None) -> None:
    """``value`` as JSON on stdout, every cell exact (:func:`~sqlweave.cells.json_cell`: numbers with every digit,
    NaN as ``"NaN"``, bytes whole); text as stored, in ASCII escapes."""
    from .cells import json_cell

    sys.stdout.write(json.dumps(json_cell(value, exact_text=True), indent=indent, allow_nan=False) + "\n")


def _write_csv(result: Any, *, raw: bool) -> None:
    from .export import to_csv

    sys.stdout.write(to_csv(result.columns, result.rows, raw=raw))


def _show_answer(answer: Answer, *, as_json: bool, trace: bool, as_csv: bool = False, raw_csv: bool = False) -> None:
    if as_json:
        data = answer.as_dict()
        if not trace:
            data.pop("trace")
        _write_json(data, indent=2)
        return
    if (as_csv or raw_csv) and answer.result is not None:
        _write_csv(answer.result, raw=raw_csv)
        return
    if trace:
        _print_trace(answer)
    if answer.unsure and answer.readings:
        _show_readings(answer)
        return
    if answer.sql:
        console.print(display.sql(answer.sql))
    if answer.result is not None:
        console.print(display.result_view(console, answer.result))
        if answer.confidence is not None:
            _say(f"confidence {answer.confidence:.0%}", style="dim")
    for caution in answer.cautions:
        _say(f"Caution: {caution}", style="yellow")


def _show_readings(answer: Answer) -> None:
    """An unsure answer: say so, then each leading reading with its SQL and result."""
    confidence = answer.confidence or 0.0
    _say(f"Not sure: confidence {confidence:.0%}, below the level asked for. "
         + ("The question can be read two ways:" if len(answer.readings) > 1 else
            "Sampling the model again found no other reading; check this one:"), style="yellow")
    for i, reading in enumerate(answer.readings, 1):
        own = " (sqlweave's answer)" if i == 1 else ""
        _say(f"Reading {i}{own}: {reading.share:.0%} of the sampled answers", style="bold")
        console.print(display.sql(reading.sql))
        console.print(display.result_view(console, reading.result))


def _pipeline(name: str, *, english_only: bool = False, examples: Path | None = None,
              schema_budget: int | None = None):
    """The preset, built before any model loads so a typo or a missing option fails at once."""
    from .presets import build_pipeline
    from .stages import CheckQuestion

    pipe = build_pipeline(name, schema_budget=schema_budget, **_pipeline_options(examples))
    if english_only:
        pipe = pipe.replace_stage("check_question", CheckQuestion(require_english=True))
    return pipe


class _Doing:
    """What the terminal's spinner says while a question is answered: the stage now, in words, and for how long."""

    def __init__(self) -> None:
        self.label = "Starting"
        self.since = time.monotonic()

    def start(self, stage: str) -> None:
        from .stages.labels import stage_label

        self.label, self.since = stage_label(stage), time.monotonic()

    def sample(self, stage: str, done: int, total: int) -> None:
        """One of a stage's samples is drawn: "Trying other readings 2/4" (the next one is under way)."""
        from .stages.labels import stage_label

        self.label = f"{stage_label(stage)} {min(done + 1, total)}/{total}"

    def __rich__(self) -> Text:
        return Text(f"{self.label}… {time.monotonic() - self.since:.0f} s", style="dim")


@contextmanager
def _working() -> Iterator[_Doing]:
    """A spinner on stderr while the block runs (when stderr is a terminal), told each stage as it starts
    (``.start``) and each of its samples (``.sample``)."""
    doing = _Doing()
    if not err_console.is_terminal:
        yield doing
        return
    with err_console.status(doing, spinner="dots"):
        yield doing


def _answer(engine: "Engine", question: str, *, as_json: bool, trace: bool, as_csv: bool = False,
            raw_csv: bool = False, evidence: str | None = None, min_confidence: float | None = None) -> None:
    """Answer one question, show the answer, and raise its error (after showing what there is)."""
    with _working() as doing:
        answer = engine.run(question, evidence=evidence, min_confidence=min_confidence,
                            budget_s=engine.pipeline.budget,  # the preset's time budget (sqlweave.budget)
                            on_start=doing.start, on_sample=doing.sample)
    _show_answer(answer, as_json=as_json, trace=trace, as_csv=as_csv, raw_csv=raw_csv)
    answer.raise_for_error()


ExamplesOption = typer.Option(
    None, "--examples", exists=True, dir_okay=False, help="Example pool for presets with few-shot examples (a "
    "Spider-format train.json; default: $SQLWEAVE_EXAMPLES, else the bundled Spider training pairs).")
SchemaBudgetOption = typer.Option(
    None, "--schema-budget", min=1, help="Most tokens of schema a prompt shows (default: what the model's context "
    "leaves). A larger schema is fitted by retrieval; 2048 is much faster on hundreds of tables on a CPU.")
KeysOption = typer.Option(True, "--keys-from-data/--no-keys-from-data",
                          help="When the database declares no foreign key, read its keys from the column names and "
                               "values (in sqlweave's view of the schema only; the database is not changed).")
SchemasOption = typer.Option(None, "--schemas", help="PostgreSQL and DuckDB: the schemas to read, comma-separated, "
                             "in the order a table's name is looked up (default: the connection's search path; "
                             "every schema of a DuckDB file).")
KnowledgeOption = typer.Option(None, "--knowledge", help="Domain-knowledge file (YAML, or defog's JSON): "
                               "descriptions, business terms, preferred joins, sample questions.")
PolicyOption = typer.Option(None, "--policy", help="Access policy (YAML): hidden tables and columns, row filters.")
ParamOption = typer.Option([], "--param", help="A row-filter parameter of the access policy: NAME=VALUE (repeatable).")


def _params(specs: list[str], option: str = "--param", form: str = "NAME=VALUE") -> dict[str, str]:
    """``--param NAME=VALUE`` options (or another ``option`` of that ``form``) as a mapping (values are text)."""
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name.strip():
            raise ConfigurationError(f"{option} {spec!r} is not {form}")
        out[name.strip()] = value
    return out


def _open_database(db: str, *, timeout: float = 10.0, max_rows: int = 1000, descriptions: Path | None = None,
                   knowledge: Path | None = None, policy: Path | None = None,
                   params: list[str] | None = None, keys_from_data: bool = True,
                   schemas: str | None = None) -> Database:
    """Open ``db`` read-only with its descriptions or domain knowledge attached (a malformed file fails first),
    under the access policy (``policy`` and a knowledge file's ``policy:`` section) with ``params`` bound."""
    from .engine import open_database

    if knowledge is not None and descriptions is not None:  # named as the flags the user gave
        raise ConfigurationError("both --descriptions and --knowledge were given",
                                 hint="Put the descriptions in the knowledge file (its tables: section).")
    database, _ = open_database(db, timeout_s=timeout, max_rows=max_rows, descriptions=descriptions,
                                knowledge=knowledge, policy=policy, keys_from_data=keys_from_data,
                                schemas=schemas)
    return database.bind(_params(params)) if params else database


def _pipeline_options(examples: Path | None) -> dict[str, Any]:
    return {"examples": str(examples)} if examples else {}


@app.command()
def ask(
    question: str = typer.Argument(..., help="The question, in plain language (any language)."),
    db: Optional[str] = DbOrDemoOption,
    demo: bool = AskDemoOption,
    model: str = ModelOption,
    pipeline: str = typer.Option("default", "--pipeline", "-p", help="Pipeline preset."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
    trace: bool = typer.Option(False, "--trace", help="Show every stage with its prompt, output, tokens and seconds."),
    timeout: float = typer.Option(10.0, "--timeout", help="Seconds a query may run before it is stopped."),
    max_rows: int = typer.Option(1000, "--max-rows", help="Most rows returned."),
    descriptions: Optional[Path] = typer.Option(None, "--descriptions", help="Table/column descriptions (JSON or CSV folder)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache."),
    english_only: bool = typer.Option(False, "--english-only", help="Refuse questions that are not in English "
                                      "(by default every language is answered and its name noted in the trace)."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible server URL."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="API key for an OpenAI-compatible server."),
    examples: Optional[Path] = ExamplesOption,
    knowledge: Optional[Path] = KnowledgeOption,
    evidence: Optional[str] = typer.Option(None, "--evidence", help="Text that helps with this question "
                                           "(a definition, a formula, a value's spelling), as BIRD's evidence."),
    as_csv: bool = CsvOption,
    raw_csv: bool = RawCsvOption,
    policy: Optional[Path] = PolicyOption,
    param: list[str] = ParamOption,
    min_confidence: Optional[float] = typer.Option(
        None, "--min-confidence", min=0.0, max=1.0,
        help="Below this confidence (0 to 1, e.g. 0.6) say the answer is not sure and show the two leading "
             "readings of the question instead of one answer (a few more model calls)."),
    schema_budget: Optional[int] = SchemaBudgetOption,
    keys_from_data: bool = KeysOption,
    schemas: Optional[str] = SchemasOption,
) -> None:
    """Answer QUESTION about the database with SQL and its result."""
    with _errors():
        db, knowledge = _db_or_demo(db, demo, knowledge)
        engine = _engine(db, model=model, pipeline=pipeline, english_only=english_only, examples=examples,
                         timeout=timeout, max_rows=max_rows, descriptions=descriptions, knowledge=knowledge,
                         policy=policy, params=param, no_cache=no_cache, base_url=base_url, api_key=api_key,
                         quiet=as_json or as_csv or raw_csv, schema_budget=schema_budget,
                         keys_from_data=keys_from_data, schemas=schemas)
        _answer(engine, question, as_json=as_json, trace=trace, as_csv=as_csv, raw_csv=raw_csv, evidence=evidence,
                min_confidence=min_confidence)


@app.command()
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

    from .db.render import render_schema

    with _errors():
        database = _open_database(db, descriptions=descriptions, knowledge=knowledge, keys_from_data=keys_from_data,
                                  schemas=schemas)
        s = _read_schema(database, refresh=refresh)
        total = len(s.tables)
        if find is not None and find.strip():
            s = s.subset({t.name: None for t in s.find(find)})
            if not s.tables:
                _say(f"No table or column of the {total} tables holds {find.strip()!r}.", style="dim")
                return
        if as_json:
            _write_json(asdict(s), indent=2)
            return
        rendered = render_schema(s, style)
        console.print(display.sql(rendered.text))
        kind = "tokens" if rendered.tokens_exact else "tokens (estimated)"
        _say(f"{len(s.tables)} table{'s' if len(s.tables) != 1 else ''}"
             f"{f' of {total}' if len(s.tables) < total else ''}, "
             f"{sum(len(t.columns) for t in s.tables)} columns, "
             f"{len(s.foreign_keys)} foreign keys"
             f"{' (read from the data: the database declares none)' if s.keys_from_data else ''}; "
             f"{rendered.tokens} {kind} as {style}"
             + (f"; schemas {', '.join(s.schemas)} (a name is looked up in that order)" if s.schemas else ""),
             style="dim")
        if s.shadowed:
            _say(f"Not read: {', '.join(s.shadowed)} (an earlier schema has a table of the same name, and a query "
                 "naming it reads that one; name its schema first with --schemas to read it instead)", style="yellow")
        if database.schema_kept_since is not None:
            import datetime

            when = datetime.datetime.fromtimestamp(database.schema_kept_since, datetime.timezone.utc)
            _say(f"read {when:%Y-%m-%d %H:%M} UTC and kept on disk: the database has not changed since "
                 "(--refresh reads it again)", style="dim")


@app.command("sql")
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
    with _errors():
        database = _open_database(db, timeout=timeout, max_rows=max_rows, policy=policy, params=param,
                                  schemas=schemas)
        result = database.execute(query, read=read)
        if result.sql != query and not (as_json or as_csv or raw_csv):
            _say(f"ran as: {result.sql}", style="dim", err=True)
        if as_json:
            _write_json({"sql": result.sql, "columns": result.columns, "rows": result.rows,
                         "truncated": result.truncated})
        elif as_csv or raw_csv:
            _write_csv(result, raw=raw_csv)
        else:
            console.print(display.result_view(console, result))


@app.command()
def demo(
    question: Optional[str] = typer.Argument(None, help="A question about the demo shop (default: a sample one)."),
    model: str = ModelOption,
    trace: bool = typer.Option(False, "--trace", help="Show every stage with its prompt, output, tokens and seconds."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache (the model "
                                  "answers again)."),
) -> None:
    """Ask a question of the bundled demo database (a small shop, with its knowledge file) with the embedded model."""
    from .db.demo import DEMO_QUESTIONS, demo_database_path, demo_knowledge_path

    with _errors():
        path = demo_database_path()
        q = question or DEMO_QUESTIONS[0]
        if not as_json:
            console.print(display.label("Demo database: ", path, style="bold"))
            console.print(display.label("Question: ", q, style="bold"))
        engine = _engine(str(path), model=model, pipeline="default", quiet=as_json, knowledge=demo_knowledge_path(),
                         no_cache=no_cache)
        _answer(engine, q, as_json=as_json, trace=trace)


@app.command()
def chat(
    db: Optional[str] = DbOrDemoOption,
    demo: bool = AskDemoOption,
    model: str = ModelOption,
    pipeline: str = typer.Option("default", "--pipeline", "-p", help="Pipeline preset."),
    resume: Optional[str] = typer.Option(None, "--resume", help="Continue a saved conversation (its id)."),
    store: Optional[str] = typer.Option(None, "--store", help="Conversation store: a SQLAlchemy URL "
                                        "(default: a SQLite file in the cache directory)."),
    timeout: float = typer.Option(10.0, "--timeout", help="Seconds a query may run before it is stopped."),
    max_rows: int = typer.Option(1000, "--max-rows", help="Most rows returned."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible server URL."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="API key for an OpenAI-compatible server."),
    knowledge: Optional[Path] = KnowledgeOption,
    policy: Optional[Path] = PolicyOption,
    param: list[str] = ParamOption,
    schema_budget: Optional[int] = SchemaBudgetOption,
    keys_from_data: bool = KeysOption,
    schemas: Optional[str] = SchemasOption,
) -> None:
    """A conversation at the terminal: follow-up questions ("only those born after 1980") build on earlier answers.

    Type a question and press Enter; /history lists the turns, /new starts a new conversation, /quit (or Ctrl-D)
    ends. Conversations are saved: --resume ID continues one.
    """
    from .conversation import ConversationStore

    with _errors():
        db, knowledge = _db_or_demo(db, demo, knowledge)
        engine = _engine(db, model=model, pipeline=pipeline, timeout=timeout, max_rows=max_rows, knowledge=knowledge,
                         policy=policy, params=param, no_cache=no_cache, base_url=base_url, api_key=api_key,
                         schema_budget=schema_budget, keys_from_data=keys_from_data, schemas=schemas)
        database = engine.db
        conversations = ConversationStore(store)
        conv = engine.conversation(id=resume, store=conversations)
        _chat_history(load=True)
        console.print(display.label(f"Conversation {conv.id} on ", database.name, style="bold"))
        _say("Ask a question; /history, /new, /quit.", style="dim")
        # While the first question is typed, the model evaluates the schema (Engine.warm_up); the question waits
        # for it at most, and its own words are all that is left to evaluate.
        threading.Thread(target=_warm_quietly, args=(engine,), name="sqlweave-warm-up", daemon=True).start()
        try:
            while True:
                try:
                    question = console.input(Text("? ", style="bold")).strip()
                except EOFError:
                    break
                if not question:
                    continue
                if question in ("/quit", "/exit", "/q"):
                    break
                if question == "/new":
                    conv = engine.conversation(store=conversations)
                    console.print(display.label("New conversation ", conv.id, style="bold"))
                    continue
                if question == "/history":
                    for turn in (conv.turns if conv.id else ()):
                        _say(f"{turn.number}. {turn.question}", style="bold")
                        _say(f"   {turn.sql or turn.error_message or ''}", style="dim")
                    continue
                with _working() as doing:
                    answer = conv.run(question, budget_s=conv.engine.pipeline.budget, on_start=doing.start,
                                      on_sample=doing.sample)
                if answer.builds_on:
                    _say(f"(builds on question {answer.builds_on})", style="dim")
                _show_answer(answer, as_json=False, trace=False)
                if answer.error is not None:
                    display.print_error(err_console, answer.error)
        finally:
            _chat_history(load=False)


def _warm_quietly(engine: "Engine") -> None:
    try:
        engine.warm_up()
    except Exception:  # noqa: BLE001 - a warm-up that fails costs nothing: the first question evaluates its prompt
        pass


def _chat_history(*, load: bool) -> None:
    """Arrow-key history for `sqlweave chat`, kept in the cache directory between sessions (where readline exists)."""
    try:
        import readline
    except ImportError:  # pragma: no cover - platforms without readline
        return
    from .config import cache_dir
    from .files import private_folder

    path = cache_dir() / "chat_history"
    try:
        if load:
            if path.exists():
                readline.read_history_file(str(path))
        else:
            private_folder(path.parent)
            readline.set_history_length(1000)
            readline.write_history_file(str(path))
    except OSError:
        pass


DoorDbOption = typer.Option([], "--db", help="A database to serve: NAME=PATH_OR_URL (repeatable). Clients only "
                            "ever see NAME.")
ConfigOption = typer.Option(None, "--config", help="A TOML file of databases (a \\[databases.NAME] table with target = ...).")
DemoOption = typer.Option(False, "--demo", help="Also serve the bundled demo shop, as 'shop'.")
DoorPolicyOption = typer.Option([], "--policy", help="An access policy (YAML) for every database, or NAME=FILE for "
                                "one (repeatable; merged with the config file's).")
DoorSchemasOption = typer.Option([], "--schemas", help="PostgreSQL and DuckDB: the schemas of a database to read, "
                                 "NAME=SCHEMA,SCHEMA in the order a table's name is looked up (repeatable; bare "
                                 "SCHEMA,SCHEMA when one database is served; default: the search path).")


@app.command()
def serve(
    db: list[str] = DoorDbOption,
    config: Optional[Path] = ConfigOption,
    demo: bool = DemoOption,
    model: str = ModelOption,
    pipeline: str = typer.Option("default", "--pipeline", "-p", help="Preset used when a request names none."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on. Anything but loopback needs an API key."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    api_key: Optional[str] = typer.Option(None, "--api-key", envvar="SQLWEAVE_API_KEY", show_envvar=True,
                                          help="Key every API call must send (Authorization: Bearer KEY)."),
    queue_size: int = typer.Option(16, "--queue-size", help="Requests that may wait for the model; more get 503."),
    max_question_seconds: float = typer.Option(120.0, "--max-question-seconds", min=1.0,
                                               help="Most seconds of model time one question may take (each "
                                                    "preset's own budget when lower); then the answer found so "
                                                    "far, marked cut short, or 504."),
    model_concurrency: int = typer.Option(1, "--model-concurrency", help="Questions the model works on at once "
                                          "(1 for the embedded model; more for a model server)."),
    rate_limit: float = typer.Option(120.0, "--rate-limit", help="Requests per minute per client (0: off)."),
    cors_origin: list[str] = typer.Option([], "--cors-origin", help="An origin allowed to call the API from a browser "
                                          "(repeatable; default: none)."),
    conversations: Optional[str] = typer.Option(None, "--conversations", help="Conversation store URL (SQLAlchemy; "
                                                "default: SQLite in the cache directory; PostgreSQL for several "
                                                "server processes)."),
    timeout: float = typer.Option(10.0, "--timeout", help="Seconds a query may run before it is stopped."),
    max_rows: int = typer.Option(1000, "--max-rows", help="Most rows a query returns."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible model server URL."),
    llm_api_key: Optional[str] = typer.Option(None, "--llm-api-key", help="API key for the OpenAI-compatible server."),
    policy: list[str] = DoorPolicyOption,
    tenants: Optional[Path] = typer.Option(None, "--tenants", help="YAML list of tenants: {name, key or key_env, "
                                           "params}; each key binds the access policy's row-filter parameters and "
                                           "keeps its conversations to itself."),
    keys_from_data: bool = KeysOption,
    schemas: list[str] = DoorSchemasOption,
    warm_up: bool = typer.Option(True, "--warm-up/--no-warm-up",
                                 help="At start, evaluate each database's schema prompt once (behind any question), "
                                      "so the first question answers in seconds."),
    feedback_examples: str = typer.Option("pending", "--feedback-examples",
                                          help="Where a pair that feedback proposes goes: pending (you review it "
                                               "with `sqlweave examples pending`), pool (straight into the example "
                                               "pool; a tenant's still wait), or off (only logged)."),
) -> None:
    """Serve the HTTP API and the web page: ask, stream the stages, run SQL, conversations, feedback.

    Open http://127.0.0.1:8000/ for the page; the API schema is at /openapi.json. Clients name only the databases
    given here (--db NAME=PATH_OR_URL, --config, --demo), never a path or URL.
    """
    from .catalog import Catalog
    from .server import ServerSettings, run
    from .server.settings import load_tenants

    with _errors():
        catalog = Catalog.from_options(db, config, demo, timeout_s=timeout, max_rows=max_rows, policies=policy,
                                       keys_from_data=keys_from_data, schemas=schemas)
        settings = ServerSettings(
            catalog, llm=model, cache=not no_cache, preset=pipeline, api_key=api_key, host=host, port=port,
            tenants=load_tenants(tenants) if tenants is not None else (),
            queue_size=queue_size, model_concurrency=model_concurrency, rate_limit_per_minute=rate_limit,
            max_question_seconds=max_question_seconds,
            cors_origins=tuple(cors_origin), conversation_url=conversations, warm_up=warm_up,
            feedback_examples=feedback_examples)
        settings.check_exposure()
        settings.check_conversations()
        _pipeline(pipeline)  # an unknown preset fails before the model loads
        llm = _build_llm(model, cache=not no_cache, base_url=base_url, api_key=llm_api_key, quiet=False)
        err_console.print(display.label(f"sqlweave {__version__} serving ", ", ".join(catalog.names()),
                                        f" on http://{host}:{port}/"), style="bold")
        run(settings, llm=llm)


@app.command("mcp")
def mcp_command(
    db: list[str] = DoorDbOption,
    config: Optional[Path] = ConfigOption,
    demo: bool = DemoOption,
    model: str = ModelOption,
    pipeline: str = typer.Option("default", "--pipeline", "-p", help="Pipeline preset for the ask tool."),
    transport: str = typer.Option("stdio", "--transport", help="stdio (for an assistant that starts sqlweave) or "
                                  "http (streamable HTTP)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address for --transport http (loopback only)."),
    port: int = typer.Option(8765, "--port", help="Port for --transport http."),
    max_rows: int = typer.Option(200, "--max-rows", help="Most rows a tool returns."),
    timeout: float = typer.Option(10.0, "--timeout", help="Seconds a query may run before it is stopped."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible server URL."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="API key for an OpenAI-compatible server."),
    policy: list[str] = DoorPolicyOption,
    param: list[str] = typer.Option([], "--param", help="A row-filter parameter of the access policies, bound for "
                                    "every tool call: NAME=VALUE (repeatable)."),
    keys_from_data: bool = KeysOption,
    schemas: list[str] = DoorSchemasOption,
) -> None:
    """Serve databases to an AI assistant over MCP: tools list_databases, describe_schema, ask and run_sql (read-only).

    With stdio nothing but the protocol is written to stdout. Example client configuration:

    {"command": "sqlweave", "args": ["mcp", "--db", "shop=/data/shop.sqlite"]}
    """
    from . import mcp as mcp_door
    from .catalog import Catalog

    with _errors():
        if transport == "http" and host not in ("127.0.0.1", "localhost", "::1"):
            raise ConfigurationError(f"the MCP HTTP transport has no authentication and will not bind to {host!r}",
                                     hint="Keep --host 127.0.0.1 and put an authenticating proxy in front of it.")
        catalog = Catalog.from_options(db, config, demo, timeout_s=timeout, max_rows=max_rows, policies=policy,
                                       keys_from_data=keys_from_data, schemas=schemas)
        _pipeline(pipeline)  # an unknown preset fails before serving starts
        # the embedded model loads in the background once serving starts (stdio must stay silent)
        llm = _build_llm(model, cache=not no_cache, base_url=base_url, api_key=api_key, quiet=True, load=False)
        mcp_door.run(catalog, llm, "http" if transport == "http" else transport,  # type: ignore[arg-type]
                     host=host, port=port, pipeline_name=pipeline, max_rows=max_rows, params=_params(param))


@app.command()
def presets(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """List the pipeline presets (for --pipeline/-p), what each is made of, and the measured ones' accuracy and
    median seconds on the 972 Spider dev questions with the embedded 1.5B model (BENCHMARKS.md)."""
    from .presets import DEFAULT, describe_presets

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
    _say("Figures: all 972 Spider dev questions, embedded 1.5B model, 2 CPU cores (BENCHMARKS.md). "
         "Stages can be added to any preset: -p default+examples.", style="dim")


@app.command()
def models() -> None:
    """List the embedded models and whether their weights are installed and assembled."""
    from .llm.weights import MODELS, assembled_path, installed_parts, is_assembled

    table = RichTable(header_style="bold")
    for col in ("spec", "model", "parts installed", "assembled", "path"):
        table.add_column(col)
    for key, spec in MODELS.items():
        table.add_row(f"local:{key}", spec.name, f"{installed_parts(spec)}/{spec.parts}",
                      "yes" if is_assembled(spec) else "no",
                      str(assembled_path(spec)))
    console.print(table)


@app.command()
def doctor(
    db: Optional[str] = typer.Option(None, "--db", help="Also open this database (path or URL) and read its schema."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Check this installation: the cache folder, the embedded model, llama.cpp, the extras, and a database.

    Exit code 1 when something sqlweave needs is broken or missing (optional extras that are not installed are
    listed, not counted). Paste its output in a bug report.
    """
    from .doctor import run_checks

    with _errors():
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


eval_app = typer.Typer(help="Evaluate pipelines on benchmarks (Spider, BIRD) with the official metrics.",
                       invoke_without_command=True, no_args_is_help=False)
app.add_typer(eval_app, name="eval")

DatasetOption = typer.Option("spider-dev", "--dataset", help=f"One of: {', '.join(DATASETS)}.")
DataDirOption = typer.Option(None, "--data-dir", help="Folder of the dataset (default: its folder, spider, "
                             "spider_syn or bird, in $SQLWEAVE_DATA_DIR, else in ./data).")


def _summary_table(title: str, summary) -> RichTable:
    """EX by hardness, with costs and the other metrics in the caption."""
    from .eval.report import summary_caption

    t = RichTable(title=Text(visible(title)), header_style="bold", min_width=90)
    t.add_column("hardness")
    t.add_column("n", justify="right")
    t.add_column("EX %", justify="right")
    for lv, (n, ex) in summary.by_level.items():
        t.add_row(lv, str(n), f"{ex:.1f}")
    t.add_row(Text("all", style="bold"), str(summary.n), Text(f"{summary.ex:.1f}", style="bold"))
    t.caption = summary_caption(summary)
    return t


def _questions(ds: Any, sample: Optional[Path], limit: Optional[int]) -> list[Any]:
    """The questions of ``ds`` a run asks (those of ``sample``, the first ``limit``), after saying what the
    dataset's file lacks: malformed entries, and the questions of the run whose database is missing."""
    from .eval.sample import read_sample, sample_ids

    questions = read_sample(sample, ds.examples, ds.left_out) if sample else list(ds.examples)
    for p in ds.notes(sample_ids(sample) if sample else None):
        _say(f"Note: {p}", style="yellow", err=True)
    return questions[:limit] if limit else questions


@eval_app.callback()
def eval_run(
    ctx: typer.Context,
    dataset: str = DatasetOption,
    data_dir: Optional[Path] = DataDirOption,
    pipeline: str = typer.Option("zero-shot", "--pipeline", "-p", help="Pipeline preset."),
    model: str = ModelOption,
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N questions (after --sample)."),
    sample: Optional[Path] = typer.Option(None, "--sample", help="A sample file (JSON list of question ids)."),
    concurrency: int = typer.Option(1, "--concurrency", help="Questions in flight (useful for HTTP backends)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run folder (default: runs/<dataset>-<pipeline>-<model>)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the response cache."),
    examples: Optional[Path] = ExamplesOption,
    suite_dir: Optional[Path] = typer.Option(None, "--suite-dir", help="Test-suite databases: <dir>/<db_id>/*.sqlite."),
    schema_budget: Optional[int] = SchemaBudgetOption,
    vote_below: Optional[float] = typer.Option(
        None, "--vote-below", min=0.0, max=1.0,
        help="Vote on every answer whose confidence is below this (default and best: 0.6 and 0.9)."),
    vote: Optional[list[str]] = typer.Option(
        None, "--vote", help="KEY=VALUE: an option of every vote stage, e.g. temperature=1.0 or n=8 (repeatable)."),
    replay: Optional[list[Path]] = typer.Option(
        None, "--replay", help="An earlier run folder or checkpoint (repeatable): the model calls its traces "
                               "recorded are answered from them; the others go to the model."),
    keys_from_data: bool = KeysOption,
) -> None:
    """Run PIPELINE over DATASET: per-question JSONL, resumable, summary by hardness."""
    if ctx.invoked_subcommand is not None:
        return
    from .eval.runner import run_eval, summarize
    from .presets import build_pipeline

    with _errors():
        from dataclasses import replace as _replace

        ds = _replace(load_dataset(dataset, data_dir), keys_from_data=keys_from_data)
        questions = _questions(ds, sample, limit)
        vote_options = _key_values(vote or [], "--vote") or None
        pipe = build_pipeline(pipeline, schema_budget=schema_budget, vote_below=vote_below, vote=vote_options,
                              **_pipeline_options(examples))
        llm = _build_llm(model, cache=not no_cache, base_url=None, api_key=None, quiet=False, replay=replay,
                         load=False)
        redrawn = sorted(set(vote_options or ()) & set(REDRAWING))
        if replay and redrawn:
            from .llm.recorded import RecordedLLM

            recorded = _unwrap(llm, lambda backend: isinstance(backend, RecordedLLM))
            if recorded.unqualified:
                raise ConfigurationError(
                    f"--replay cannot be combined with --vote {redrawn[0]}=...: {recorded.unqualified} of the "
                    "recorded calls were traced without their options (a run from before traces kept them), so "
                    "their samples cannot be told from samples drawn another way",
                    hint="Run without --replay: the response cache keeps samples drawn with other settings apart, "
                         "and the greedy answers are cached after one replay.")
        _load_local(llm, quiet=False)
        folder = out or Path("runs") / f"{dataset}-{pipeline}-{model.replace(':', '-')}"
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TextColumn("EX {task.fields[ex]}"), TimeRemainingColumn(), console=err_console) as bar:
            task = bar.add_task(escape(visible(f"{pipeline} on {dataset}")), total=len(questions), ex="-")
            hits = [0, 0]

            def tick(r) -> None:
                hits[0] += r.match
                hits[1] += 1
                bar.update(task, advance=1, ex=f"{100 * hits[0] / hits[1]:.1f}%")

            results = run_eval(ds, questions, pipe, llm, folder, concurrency=concurrency, on_result=tick,
                               meta={"sample": str(sample) if sample else None, "limit": limit,
                                     "schema_budget": schema_budget, "vote_below": vote_below,
                                     "vote": vote_options, "replay": [str(p) for p in replay or []],
                                     **({} if keys_from_data else {"keys_from_data": False})},
                               suite_dir=suite_dir)
        summary = summarize(results)
        from dataclasses import asdict

        (folder / "summary.json").write_text(json.dumps(asdict(summary), indent=2) + "\n")
        console.print(_summary_table(f"{pipeline} / {model} on {dataset} ({summary.n} questions)", summary))
        _say(f"results: {folder}/results.jsonl", style="dim")
        if replay:
            from .llm.cache import CachedLLM
            from .llm.recorded import RecordedLLM

            recorded = _unwrap(llm, lambda backend: isinstance(backend, RecordedLLM))
            cache = _unwrap(llm, lambda backend: isinstance(backend, CachedLLM))
            # the response cache sits before the recording: a call it answers never reaches the recording
            cached = f"answered from the response cache: {cache.hits}; " if cache is not None else ""
            _say(f"model calls {cached}answered from the recorded traces: {recorded.answered}; "
                 f"passed to the model: {recorded.passed}", style="dim")


@eval_app.command("compare")
def eval_compare(run_a: Path, run_b: Path, show: int = typer.Option(10, "--show", help="Flipped questions to list.")) -> None:
    """Per-hardness deltas between two runs, and the questions that flipped either way."""
    from .eval.compare import compare_runs
    from .eval.runner import load_results

    with _errors():
        c = compare_runs(load_results(run_a), load_results(run_b))
        t = RichTable(title=Text(visible(f"{run_a.name} -> {run_b.name} ({c.common} common questions)")),
                      header_style="bold")
        for col in ("hardness", "n", "EX A", "EX B", "delta"):
            t.add_column(col, justify="right")
        for level, n, ex_a, ex_b in c.rows():
            t.add_row(level, str(n), f"{ex_a:.1f}", f"{ex_b:.1f}", f"{ex_b - ex_a:+.1f}")
        console.print(t)
        console.print(f"wrong -> right: {len(c.gained)}   right -> wrong: {len(c.lost)}")
        for label, pairs in (("wrong -> right", c.gained), ("right -> wrong", c.lost)):
            for ra, rb in pairs[:show]:
                _say(f"{label} {ra.id} [{ra.hardness}] {ra.question}")
                _say(f"    A: {ra.prediction}\n    B: {rb.prediction}")


@eval_app.command("sample")
def eval_sample(
    n: int = typer.Option(200, "--n"),
    seed: int = typer.Option(0, "--seed"),
    dataset: str = DatasetOption,
    data_dir: Optional[Path] = DataDirOption,
    out: Path = typer.Option(..., "--out"),
) -> None:
    """Write a fixed, stratified (by hardness) sample of DATASET."""
    from .eval.sample import stratified_sample, write_sample

    with _errors():
        ds = load_dataset(dataset, data_dir)
        chosen = stratified_sample(ds.examples, n, seed)
        write_sample(out, dataset, chosen, seed)
        _say(f"wrote {len(chosen)} question ids to {out}")


@eval_app.command("check")
def eval_check(
    dataset: str = DatasetOption,
    data_dir: Optional[Path] = DataDirOption,
) -> None:
    """Report missing databases and gold queries that fail on their own database."""
    from .eval.runner import check_gold

    with _errors():
        ds = load_dataset(dataset, data_dir)
        _say(f"{ds.name}: {ds.total} entries, {len(ds.examples)} with a database")
        for p in ds.notes():
            _say(p, style="yellow")
        broken = check_gold(ds)
        for qid, err in broken:
            _say(f"broken gold {qid}: {err}", style="red")
        console.print(f"{len(broken)} broken gold queries")


@eval_app.command("score")
def eval_score(
    predictions: Path = typer.Option(..., "--predictions", help="One predicted query per line (Spider's format)."),
    dataset: str = DatasetOption,
    data_dir: Optional[Path] = DataDirOption,
    suite_dir: Optional[Path] = typer.Option(None, "--suite-dir", help="Test-suite databases: <dir>/<db_id>/*.sqlite."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write per-question results (JSONL) here."),
) -> None:
    """Score a file of predicted SQL against gold: EX (both DISTINCT modes), exact match, test-suite."""
    import time
    from dataclasses import asdict

    from .eval.runner import summarize
    from .eval.score import read_predictions, score_predictions

    with _errors():
        ds = load_dataset(dataset, data_dir)
        start = time.perf_counter()
        results = score_predictions(ds, read_predictions(predictions), suite_dir)
        elapsed = time.perf_counter() - start
        summary = summarize(results)
        console.print(_summary_table(f"{predictions.name} on {dataset} ({summary.n} questions)", summary))
        console.print(f"scored in {elapsed:.1f} s")
        from .eval.report import provenance

        _say("Metrics reproduce, question by question:\n" + provenance("bird" if dataset.startswith("bird") else "spider"),
             style="dim")
        if out:
            out.write_text("".join(json.dumps(asdict(r), default=str) + "\n" for r in results))


@eval_app.command("ablate")
def eval_ablate(
    pipelines: str = typer.Option(..., "--pipelines", help="Comma-separated presets, e.g. zero-shot,zero-shot-compact."),
    dataset: str = DatasetOption,
    data_dir: Optional[Path] = DataDirOption,
    model: str = ModelOption,
    sample: Optional[Path] = typer.Option(None, "--sample"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1),
    out: Path = typer.Option(Path("runs/ablation"), "--out", help="Folder: one run per preset, plus ablation.md/json."),
    no_cache: bool = typer.Option(False, "--no-cache"),
    examples: Optional[Path] = ExamplesOption,
) -> None:
    """Run several presets on the same questions (each resumable) and tabulate them side by side."""
    from dataclasses import asdict

    from .eval.report import markdown_table
    from .eval.runner import evaluation_resources, run_eval, summarize
    from .presets import build_pipeline

    with _errors():
        ds = load_dataset(dataset, data_dir)
        questions = _questions(ds, sample, limit)
        names = [p.strip() for p in pipelines.split(",") if p.strip()]
        resources = evaluation_resources()  # one pool and one set of value indexes for every preset's run
        pipes = [build_pipeline(n, **_pipeline_options(examples)) for n in names]  # fail fast on a typo, before any model time
        llm = _build_llm(model, cache=not no_cache, base_url=None, api_key=None, quiet=False)
        rows = []
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeRemainingColumn(), console=err_console) as bar:
            for name, pipe in zip(names, pipes):
                task = bar.add_task(escape(visible(name)), total=len(questions))

                def advance(_: object, task: Any = task) -> None:
                    bar.update(task, advance=1)

                results = run_eval(ds, questions, pipe, llm, out / name, on_result=advance, resources=resources)
                rows.append((name, summarize(results)))
        table = markdown_table(rows)
        console.print(table)
        out.mkdir(parents=True, exist_ok=True)
        (out / "ablation.md").write_text(table)
        (out / "ablation.json").write_text(json.dumps({n: asdict(s) for n, s in rows}, indent=2) + "\n")


@eval_app.command("report")
def eval_report(
    runs: list[Path] = typer.Argument(..., help="Run folders to put side by side."),
    html_out: Optional[Path] = typer.Option(None, "--html", help="Write a self-contained HTML page with plots."),
    md_out: Optional[Path] = typer.Option(None, "--md", help="Write the Markdown table."),
) -> None:
    """Markdown and HTML reports of one or more runs."""
    from .eval.report import html_report, markdown_table
    from .eval.runner import load_results, summarize

    with _errors():
        loaded = [(r.name, load_results(r)) for r in runs]
        table = markdown_table([(n, summarize(rs)) for n, rs in loaded])  # ends with the official scripts reproduced
        console.print(table)
        if md_out:
            md_out.write_text(table)
        if html_out:
            html_out.write_text(html_report("sqlweave evaluation: " + ", ".join(n for n, _ in loaded), loaded))
            _say(f"wrote {html_out}")


@eval_app.command("stages")
def eval_stages(
    run: Path = typer.Argument(..., help="A run folder (its traces record each stage's SQL)."),
    data_dir: Optional[Path] = DataDirOption,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Per stage: how often it ran, was skipped, changed the SQL, and turned a right answer wrong or back."""
    from dataclasses import asdict

    from .eval.runner import read_run_meta
    from .eval.stage_effects import stage_effects

    with _errors():
        effects = stage_effects(load_dataset(read_run_meta(run)["dataset"], data_dir), run)
        if as_json:
            sys.stdout.write(json.dumps([{**asdict(e), "net": e.net} for e in effects]) + "\n")
            return
        t = RichTable(title=Text(visible(f"stages of {run.name}")), header_style="bold")
        for col in ("stage", "reached", "skipped", "changed SQL", "right -> wrong", "wrong -> right", "net"):
            t.add_column(col, justify="left" if col == "stage" else "right", no_wrap=col == "stage")
        for e in effects:
            t.add_row(display.data(e.stage), str(e.reached), str(e.skipped), str(e.changed), str(e.right_to_wrong),
                      str(e.wrong_to_right), f"{e.net:+d}")
        console.print(t)


tool_app = typer.Typer(help="The agent's tools, on their own: search-column, search-value, shortest-path.",
                       no_args_is_help=True)
app.add_typer(tool_app, name="tool")


def _print_rows(rows: list[dict[str, Any]], title: str, as_json: bool) -> None:
    if as_json:
        _write_json(rows)
        return
    if rows:
        console.print(display.records_table(rows, Text(visible(title))))
    else:
        _say(f"{title}: nothing found", style="dim")


@tool_app.command("search-column")
def tool_search_column(
    semantic: str = typer.Argument(..., help='What the column is about, e.g. "age of a singer".'),
    db: str = DbOption,
    k: int = typer.Option(5, "-k", help="How many columns."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """SearchColumn: the columns closest in meaning to SEMANTIC (dense embeddings), with value statistics."""
    from .agent.tools import Toolkit

    with _errors():
        cols = Toolkit(Database.open(db)).search_column(semantic, k=k)
        _print_rows([c.as_dict() for c in cols], f"columns like {semantic!r}", as_json)


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
    from .agent.tools import Toolkit

    with _errors():
        kit = Toolkit(Database.open(db))
        with Progress(TextColumn("indexing values"), BarColumn(), TextColumn("{task.completed}/{task.total} tables"),
                      console=err_console, transient=True, disable=as_json) as bar:
            task = bar.add_task("index", total=None)
            from .retrieval.values import ValueIndex

            kit._values = ValueIndex.build(kit.db, progress=lambda i, n: bar.update(task, completed=i, total=n))
        hits = kit.search_value(value, table=table, column=column, k=k)
        _print_rows([h.as_dict() for h in hits], f"values like {value!r}", as_json)


@tool_app.command("shortest-path")
def tool_shortest_path(
    start: str = typer.Argument(..., help="table.column"),
    end: str = typer.Argument(..., help="table.column"),
    db: str = DbOption,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """FindShortestPath: the JOIN conditions linking two columns' tables (foreign keys, networkx)."""
    from .agent.tools import Toolkit

    with _errors():
        path = Toolkit(Database.open(db)).find_shortest_path(start, end)
        if as_json:
            sys.stdout.write(json.dumps(path.as_dict()) + "\n")
        else:
            _say(path.observation())


examples_app = typer.Typer(help="The example pool that few-shot pipelines retrieve from: your own pairs, index builds.",
                            no_args_is_help=True)
app.add_typer(examples_app, name="examples")


@examples_app.command("add")
def examples_add(
    question: str = typer.Argument(..., help="The question, as a user would ask it."),
    sql: str = typer.Argument(..., help="The SQL that answers it on --db."),
    db: str = DbOption,
) -> None:
    """Add one of your question/SQL pairs (checked against --db: a read that names real tables and runs)."""
    from .engine import add_example

    with _errors():
        ex = add_example(Database.open(db), question, sql, origin="cli")
        _say(f"added for {ex.db_id}: {ex.question}")
        _say(f"skeleton: {ex.sql_skeleton}", style="dim")


@examples_app.command("list")
def examples_list(as_json: bool = typer.Option(False, "--json")) -> None:
    """The pairs you added (used by every pool, besides the training file)."""
    from dataclasses import asdict

    from .retrieval.pool import user_examples

    rows = user_examples()
    if as_json:
        sys.stdout.write(json.dumps([asdict(e) for e in rows]) + "\n")
        return
    _print_rows([{"database": e.db_id, "question": e.question, "sql": e.sql, "origin": e.origin} for e in rows],
                "your examples", False)


@examples_app.command("pending")
def examples_pending(as_json: bool = typer.Option(False, "--json")) -> None:
    """The pairs that feedback proposed and that wait for your review (accept or reject them by id)."""
    from dataclasses import asdict

    from .feedback import PendingExamples

    with _errors():
        rows = PendingExamples.of().waiting()
    if as_json:
        sys.stdout.write(json.dumps([{k: v for k, v in asdict(e).items() if k != "schema_names"} for e in rows])
                         + "\n")
        return
    _print_rows([{"id": e.id, "database": e.database, "question": e.question, "sql": e.sql, "origin": e.origin,
                  "from": e.owner or "", "received": e.received} for e in rows], "pending examples", False)


@examples_app.command("accept")
def examples_accept(ids: list[str] = typer.Argument(..., help="Ids from `sqlweave examples pending`, or all.")) -> None:
    """Move pending pairs into the example pool (few-shot pipelines use them from the next question on)."""
    from .feedback import PendingExamples

    with _errors():
        added = PendingExamples.of().accept(ids)
    for ex in added:
        _say(f"added for {ex.db_id}: {ex.question}")
    if not added:
        _say("no pending examples")


@examples_app.command("reject")
def examples_reject(ids: list[str] = typer.Argument(..., help="Ids from `sqlweave examples pending`, or all.")) -> None:
    """Drop pending pairs: they never reach the example pool."""
    from .feedback import PendingExamples

    with _errors():
        dropped = PendingExamples.of().reject(ids)
    _say(f"rejected {len(dropped)} pending example{'s' if len(dropped) != 1 else ''}")


@examples_app.command("build")
def examples_build(examples: Optional[Path] = ExamplesOption) -> None:
    """Derive and cache the skeletons and normalised SQL of a training file (incremental: new pairs only), and
    build its indexes."""
    from .retrieval.pool import ExamplePool
    from .stages.select_examples import default_pool_path

    with _errors():
        examples = examples or default_pool_path()
        with Progress(TextColumn("[bold]deriving examples"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeRemainingColumn(), console=err_console) as bar:
            task = bar.add_task("pool", total=None)
            pool = ExamplePool.from_file(examples, progress=lambda i, n: bar.update(task, completed=i, total=n))
            for field in ("question", "question_skeleton", "sql_skeleton"):
                pool.index(field)
        _say(f"{len(pool)} examples ready ({sum(e.source == 'user' for e in pool.examples)} of them yours)")


@examples_app.command("simplify")
def examples_simplify(
    examples: Optional[Path] = ExamplesOption,
    model: str = ModelOption,
    limit: Optional[int] = typer.Option(None, "--limit", min=0, help="Simplify at most this many questions now."),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Have the model simplify the pool's questions (paper 000's repository of original + simplified skeletons).

    Resumable: every answer is saved as it arrives, and a rerun asks only for the questions still missing.
    """
    from .retrieval.pool import load_pool
    from .retrieval.simplified import simplified_file
    from .stages.select_examples import default_pool_path
    from .stages.simplify import simplify_pool

    with _errors():
        pool_file = examples or default_pool_path()
        llm = _build_llm(model, cache=True, base_url=None, api_key=None, quiet=quiet)
        pool = load_pool(pool_file)
        with Progress(TextColumn("[bold]simplifying questions"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeRemainingColumn(), console=err_console, disable=quiet) as bar:
            task = bar.add_task("simplify", total=None)
            report = simplify_pool(pool, llm, limit=limit, progress=lambda i, n: bar.update(task, completed=i, total=n))
        have = sum(e.question in pool.simplified for e in pool.examples)
        _say(f"asked {report.asked}: {report.accepted} accepted, {report.rejected} rejected; "
                      f"{have} of {len(pool)} pool questions now have a simplified wording ({simplified_file()})")


@app.callback(invoke_without_command=True)
def _root(version: bool = typer.Option(False, "--version", help="Print the version.")) -> None:
    if version:
        console.print(f"sqlweave {__version__}")
        raise typer.Exit()
    from .config import cache_dir
    from .files import secure_cache_once

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
    app()


if __name__ == "__main__":
    main()
