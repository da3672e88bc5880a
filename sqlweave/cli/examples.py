"""``sqlweave examples``: the example pool few-shot pipelines retrieve from: your own pairs, the pairs feedback
proposes (pending until you accept them), and the pool's derived fields and indexes::

    $ sqlweave examples add "How many singers?" "SELECT count(*) FROM singer" --db concert_singer.sqlite
    $ sqlweave examples pending
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from ..database import Database
from .build import build_llm
from .options import DbOption, ExamplesOption, ModelOption
from .output import err_console, errors, print_rows, say

examples_app = typer.Typer(help="The example pool that few-shot pipelines retrieve from: your own pairs, index builds.",
                            no_args_is_help=True)


@examples_app.command("add")
def examples_add(
    question: str = typer.Argument(..., help="The question, as a user would ask it."),
    sql: str = typer.Argument(..., help="The SQL that answers it on --db."),
    db: str = DbOption,
) -> None:
    """Add one of your question/SQL pairs (checked against --db: a read that names real tables and runs)."""
    from ..engine import add_example

    with errors():
        ex = add_example(Database.open(db), question, sql, origin="cli")
        say(f"added for {ex.db_id}: {ex.question}")
        say(f"skeleton: {ex.sql_skeleton}", style="dim")


@examples_app.command("list")
def examples_list(as_json: bool = typer.Option(False, "--json")) -> None:
    """The pairs you added (used by every pool, besides the training file)."""
    from dataclasses import asdict

    from ..retrieval.pool import user_examples

    rows = user_examples()
    if as_json:
        sys.stdout.write(json.dumps([asdict(e) for e in rows]) + "\n")
        return
    print_rows([{"database": e.db_id, "question": e.question, "sql": e.sql, "origin": e.origin} for e in rows],
                "your examples", False)


@examples_app.command("pending")
def examples_pending(as_json: bool = typer.Option(False, "--json")) -> None:
    """The pairs that feedback proposed and that wait for your review (accept or reject them by id)."""
    from dataclasses import asdict

    from ..feedback import PendingExamples

    with errors():
        rows = PendingExamples.of().waiting()
    if as_json:
        sys.stdout.write(json.dumps([{k: v for k, v in asdict(e).items() if k != "schema_names"} for e in rows])
                         + "\n")
        return
    print_rows([{"id": e.id, "database": e.database, "question": e.question, "sql": e.sql, "origin": e.origin,
                  "from": e.owner or "", "received": e.received} for e in rows], "pending examples", False)


@examples_app.command("accept")
def examples_accept(ids: list[str] = typer.Argument(..., help="Ids from `sqlweave examples pending`, or all.")) -> None:
    """Move pending pairs into the example pool (few-shot pipelines use them from the next question on)."""
    from ..feedback import PendingExamples

    with errors():
        added = PendingExamples.of().accept(ids)
    for ex in added:
        say(f"added for {ex.db_id}: {ex.question}")
    if not added:
        say("no pending examples")


@examples_app.command("reject")
def examples_reject(ids: list[str] = typer.Argument(..., help="Ids from `sqlweave examples pending`, or all.")) -> None:
    """Drop pending pairs: they never reach the example pool."""
    from ..feedback import PendingExamples

    with errors():
        dropped = PendingExamples.of().reject(ids)
    say(f"rejected {len(dropped)} pending example{'s' if len(dropped) != 1 else ''}")


@examples_app.command("build")
def examples_build(examples: Optional[Path] = ExamplesOption) -> None:
    """Derive and cache the skeletons and normalised SQL of a training file (incremental: new pairs only), and
    build its indexes."""
    from ..retrieval.pool import ExamplePool
    from ..stages.select_examples import default_pool_path

    with errors():
        examples = examples or default_pool_path()
        with Progress(TextColumn("[bold]deriving examples"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeRemainingColumn(), console=err_console) as bar:
            task = bar.add_task("pool", total=None)
            pool = ExamplePool.from_file(examples, progress=lambda i, n: bar.update(task, completed=i, total=n))
            for field in ("question", "question_skeleton", "sql_skeleton"):
                pool.index(field)
        say(f"{len(pool)} examples ready ({sum(e.source == 'user' for e in pool.examples)} of them yours)")


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
    from ..retrieval.pool import load_pool
    from ..retrieval.simplified import simplified_file
    from ..stages.select_examples import default_pool_path
    from ..stages.simplify import simplify_pool

    with errors():
        pool_file = examples or default_pool_path()
        llm = build_llm(model, cache=True, base_url=None, api_key=None, quiet=quiet)
        pool = load_pool(pool_file)
        with Progress(TextColumn("[bold]simplifying questions"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeRemainingColumn(), console=err_console, disable=quiet) as bar:
            task = bar.add_task("simplify", total=None)
            report = simplify_pool(pool, llm, limit=limit, progress=lambda i, n: bar.update(task, completed=i, total=n))
        have = sum(e.question in pool.simplified for e in pool.examples)
        say(f"asked {report.asked}: {report.accepted} accepted, {report.rejected} rejected; "
            f"{have} of {len(pool)} pool questions now have a simplified wording ({simplified_file()})")

