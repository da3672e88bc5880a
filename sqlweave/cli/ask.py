"""Asking questions: ``ask`` (one question), ``demo`` (one about the bundled shop) and ``chat`` (a conversation at
the terminal, follow-ups building on earlier answers), and how an answer is shown::

    $ sqlweave ask --demo "How many customers are there?"
    $ sqlweave chat --db shop.sqlite
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.text import Text

from .. import display
from ..pipeline import Answer
from .build import build_engine, db_or_demo
from .options import (
    AskDemoOption,
    CsvOption,
    DbOrDemoOption,
    ExamplesOption,
    KeysOption,
    KnowledgeOption,
    ModelOption,
    ParamOption,
    PolicyOption,
    RawCsvOption,
    SchemaBudgetOption,
    SchemasOption,
)
from .output import console, err_console, errors, say, working, write_csv, write_json

if TYPE_CHECKING:
    from ..engine import Engine


def _print_trace(answer: Answer) -> None:
    console.print(display.trace_table(answer))
    for panel in display.model_calls(answer):
        console.print(panel)


def _show_answer(answer: Answer, *, as_json: bool, trace: bool, as_csv: bool = False, raw_csv: bool = False) -> None:
    if as_json:
        data = answer.as_dict()
        if not trace:
            data.pop("trace")
        write_json(data, indent=2)
        return
    if (as_csv or raw_csv) and answer.result is not None:
        write_csv(answer.result, raw=raw_csv)
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
            say(f"confidence {answer.confidence:.0%}", style="dim")
    for caution in answer.cautions:
        say(f"Caution: {caution}", style="yellow")


def _show_readings(answer: Answer) -> None:
    """An unsure answer: say so, then each leading reading with its SQL and result."""
    confidence = answer.confidence or 0.0
    say(f"Not sure: confidence {confidence:.0%}, below the level asked for. "
        + ("The question can be read two ways:" if len(answer.readings) > 1 else
           "Sampling the model again found no other reading; check this one:"), style="yellow")
    for i, reading in enumerate(answer.readings, 1):
        own = " (sqlweave's answer)" if i == 1 else ""
        say(f"Reading {i}{own}: {reading.share:.0%} of the sampled answers", style="bold")
        console.print(display.sql(reading.sql))
        console.print(display.result_view(console, reading.result))


def _answer(engine: "Engine", question: str, *, as_json: bool, trace: bool, as_csv: bool = False,
            raw_csv: bool = False, evidence: str | None = None, min_confidence: float | None = None) -> None:
    """Answer one question, show the answer, and raise its error (after showing what there is)."""
    with working() as doing:
        answer = engine.run(question, evidence=evidence, min_confidence=min_confidence,
                            budget_s=engine.pipeline.budget,  # the preset's time budget (sqlweave.budget)
                            on_start=doing.start, on_sample=doing.sample)
    _show_answer(answer, as_json=as_json, trace=trace, as_csv=as_csv, raw_csv=raw_csv)
    answer.raise_for_error()


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
    with errors():
        db, knowledge = db_or_demo(db, demo, knowledge)
        engine = build_engine(db, model=model, pipeline=pipeline, english_only=english_only, examples=examples,
                              timeout=timeout, max_rows=max_rows, descriptions=descriptions, knowledge=knowledge,
                              policy=policy, params=param, no_cache=no_cache, base_url=base_url, api_key=api_key,
                              quiet=as_json or as_csv or raw_csv, schema_budget=schema_budget,
                              keys_from_data=keys_from_data, schemas=schemas)
        _answer(engine, question, as_json=as_json, trace=trace, as_csv=as_csv, raw_csv=raw_csv, evidence=evidence,
                min_confidence=min_confidence)


def demo(
    question: Optional[str] = typer.Argument(None, help="A question about the demo shop (default: a sample one)."),
    model: str = ModelOption,
    trace: bool = typer.Option(False, "--trace", help="Show every stage with its prompt, output, tokens and seconds."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache (the model "
                                  "answers again)."),
) -> None:
    """Ask a question of the bundled demo database (a small shop, with its knowledge file) with the embedded model."""
    from ..db.demo import DEMO_QUESTIONS, demo_database_path, demo_knowledge_path

    with errors():
        path = demo_database_path()
        q = question or DEMO_QUESTIONS[0]
        if not as_json:
            console.print(display.label("Demo database: ", path, style="bold"))
            console.print(display.label("Question: ", q, style="bold"))
        engine = build_engine(str(path), model=model, pipeline="default", quiet=as_json,
                              knowledge=demo_knowledge_path(), no_cache=no_cache)
        _answer(engine, q, as_json=as_json, trace=trace)


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
    from ..conversation import ConversationStore

    with errors():
        db, knowledge = db_or_demo(db, demo, knowledge)
        engine = build_engine(db, model=model, pipeline=pipeline, timeout=timeout, max_rows=max_rows,
                              knowledge=knowledge, policy=policy, params=param, no_cache=no_cache, base_url=base_url,
                              api_key=api_key, schema_budget=schema_budget, keys_from_data=keys_from_data,
                              schemas=schemas)
        database = engine.db
        conversations = ConversationStore(store)
        conv = engine.conversation(id=resume, store=conversations)
        _chat_history(load=True)
        console.print(display.label(f"Conversation {conv.id} on ", database.name, style="bold"))
        say("Ask a question; /history, /new, /quit.", style="dim")
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
                        say(f"{turn.number}. {turn.question}", style="bold")
                        say(f"   {turn.sql or turn.error_message or ''}", style="dim")
                    continue
                with working() as doing:
                    answer = conv.run(question, budget_s=conv.engine.pipeline.budget, on_start=doing.start,
                                      on_sample=doing.sample)
                if answer.builds_on:
                    say(f"(builds on question {answer.builds_on})", style="dim")
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
    from ..config import cache_dir
    from ..files import private_folder

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

