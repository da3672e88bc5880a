"""``sqlweave eval``: run pipelines over Spider and BIRD with the official metrics, resumable, and compare, score,
tabulate and report runs::

    $ sqlweave eval --dataset spider-dev --pipeline default --limit 50
    $ sqlweave eval compare runs/a runs/b
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table as RichTable
from rich.text import Text

from .. import display
from ..errors import ConfigurationError
from ..eval.datasets import DATASETS, load_dataset
from ..text import visible
from .build import build_llm, load_local, parse_params, pipeline_options, unwrap
from .options import ExamplesOption, KeysOption, ModelOption, SchemaBudgetOption
from .output import console, err_console, errors, say

eval_app = typer.Typer(help="Evaluate pipelines on benchmarks (Spider, BIRD) with the official metrics.",
                       invoke_without_command=True, no_args_is_help=False)

DatasetOption = typer.Option("spider-dev", "--dataset", help=f"One of: {', '.join(DATASETS)}.")
DataDirOption = typer.Option(None, "--data-dir", help="Folder of the dataset (default: its folder, spider, "
                             "spider_syn or bird, in $SQLWEAVE_DATA_DIR, else in ./data).")

#: Vote options that draw other samples from the same messages: traces that kept no options cannot tell them apart.
REDRAWING = ("temperature", "seed", "max_tokens", "more", "fenced")


def _key_values(pairs: list[str], option: str) -> dict[str, Any]:
    """``["n=8", "select=majority"]`` as ``{"n": 8, "select": "majority"}`` (a value is JSON when it parses)."""
    def value(raw: str) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            return raw

    return {key: value(raw) for key, raw in parse_params(pairs, option, form="KEY=VALUE").items()}


def _summary_table(title: str, summary) -> RichTable:
    """EX by hardness, with costs and the other metrics in the caption."""
    from ..eval.report import summary_caption

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
    from ..eval.sample import read_sample, sample_ids

    questions = read_sample(sample, ds.examples, ds.left_out) if sample else list(ds.examples)
    for p in ds.notes(sample_ids(sample) if sample else None):
        say(f"Note: {p}", style="yellow", err=True)
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
    replay_only: bool = typer.Option(False, "--replay-only", help="With --replay: no model at all; a call the "
                                     "traces do not answer fails its question (counted as a miss)."),
    keys_from_data: bool = KeysOption,
) -> None:
    """Run PIPELINE over DATASET: per-question JSONL, resumable, summary by hardness."""
    if ctx.invoked_subcommand is not None:
        return
    from ..eval.runner import run_eval, summarize
    from ..presets import build_pipeline

    with errors():
        from dataclasses import replace as _replace

        ds = _replace(load_dataset(dataset, data_dir), keys_from_data=keys_from_data)
        questions = _questions(ds, sample, limit)
        vote_options = _key_values(vote or [], "--vote") or None
        pipe = build_pipeline(pipeline, schema_budget=schema_budget, vote_below=vote_below, vote=vote_options,
                              **pipeline_options(examples))
        folder = out or Path("runs") / f"{dataset}-{pipeline}-{model.replace(':', '-')}"
        if replay_only:
            from ..eval.replay_only import replay_only_llm

            if not replay:
                raise ConfigurationError("--replay-only needs --replay", hint="Name the run whose traces answer.")
            folder.mkdir(parents=True, exist_ok=True)
            llm = replay_only_llm(model, replay, folder / "replay-responses.sqlite")
        else:
            llm = build_llm(model, cache=not no_cache, base_url=None, api_key=None, quiet=False, replay=replay,
                            load=False)
        redrawn = sorted(set(vote_options or ()) & set(REDRAWING))
        if replay and redrawn:
            from ..llm.recorded import RecordedLLM

            recorded = unwrap(llm, lambda backend: isinstance(backend, RecordedLLM))
            if recorded.unqualified:
                raise ConfigurationError(
                    f"--replay cannot be combined with --vote {redrawn[0]}=...: {recorded.unqualified} of the "
                    "recorded calls were traced without their options (a run from before traces kept them), so "
                    "their samples cannot be told from samples drawn another way",
                    hint="Run without --replay: the response cache keeps samples drawn with other settings apart, "
                         "and the greedy answers are cached after one replay.")
        if not replay_only:
            load_local(llm, quiet=False)
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
        say(f"results: {folder}/results.jsonl", style="dim")
        if replay:
            from ..llm.cache import CachedLLM
            from ..llm.recorded import RecordedLLM

            recorded = unwrap(llm, lambda backend: isinstance(backend, RecordedLLM))
            cache = unwrap(llm, lambda backend: isinstance(backend, CachedLLM))
            # the response cache sits before the recording: a call it answers never reaches the recording
            cached = f"answered from the response cache: {cache.hits}; " if cache is not None else ""
            say(f"model calls {cached}answered from the recorded traces: {recorded.answered}; "
                 f"{'misses (no model)' if replay_only else 'passed to the model'}: {recorded.passed}", style="dim")


@eval_app.command("compare")
def eval_compare(run_a: Path, run_b: Path, show: int = typer.Option(10, "--show", help="Flipped questions to list.")) -> None:
    """Per-hardness deltas between two runs, and the questions that flipped either way."""
    from ..eval.compare import compare_runs
    from ..eval.runner import load_results

    with errors():
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
                say(f"{label} {ra.id} [{ra.hardness}] {ra.question}")
                say(f"    A: {ra.prediction}\n    B: {rb.prediction}")


@eval_app.command("sample")
def eval_sample(
    n: int = typer.Option(200, "--n"),
    seed: int = typer.Option(0, "--seed"),
    dataset: str = DatasetOption,
    data_dir: Optional[Path] = DataDirOption,
    out: Path = typer.Option(..., "--out"),
) -> None:
    """Write a fixed, stratified (by hardness) sample of DATASET."""
    from ..eval.sample import stratified_sample, write_sample

    with errors():
        ds = load_dataset(dataset, data_dir)
        chosen = stratified_sample(ds.examples, n, seed)
        write_sample(out, dataset, chosen, seed)
        say(f"wrote {len(chosen)} question ids to {out}")


@eval_app.command("check")
def eval_check(
    dataset: str = DatasetOption,
    data_dir: Optional[Path] = DataDirOption,
) -> None:
    """Report missing databases and gold queries that fail on their own database."""
    from ..eval.runner import check_gold

    with errors():
        ds = load_dataset(dataset, data_dir)
        say(f"{ds.name}: {ds.total} entries, {len(ds.examples)} with a database")
        for p in ds.notes():
            say(p, style="yellow")
        broken = check_gold(ds)
        for qid, err in broken:
            say(f"broken gold {qid}: {err}", style="red")
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

    from ..eval.runner import summarize
    from ..eval.score import read_predictions, score_predictions

    with errors():
        ds = load_dataset(dataset, data_dir)
        start = time.perf_counter()
        results = score_predictions(ds, read_predictions(predictions), suite_dir)
        elapsed = time.perf_counter() - start
        summary = summarize(results)
        console.print(_summary_table(f"{predictions.name} on {dataset} ({summary.n} questions)", summary))
        console.print(f"scored in {elapsed:.1f} s")
        from ..eval.report import provenance

        say("Metrics reproduce, question by question:\n" + provenance("bird" if dataset.startswith("bird") else "spider"),
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

    from ..eval.report import markdown_table
    from ..eval.runner import evaluation_resources, run_eval, summarize
    from ..presets import build_pipeline

    with errors():
        ds = load_dataset(dataset, data_dir)
        questions = _questions(ds, sample, limit)
        names = [p.strip() for p in pipelines.split(",") if p.strip()]
        resources = evaluation_resources()  # one pool and one set of value indexes for every preset's run
        pipes = [build_pipeline(n, **pipeline_options(examples)) for n in names]  # fail fast on a typo, before any model time
        llm = build_llm(model, cache=not no_cache, base_url=None, api_key=None, quiet=False)
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
    from ..eval.report import html_report, markdown_table
    from ..eval.runner import load_results, summarize

    with errors():
        loaded = [(r.name, load_results(r)) for r in runs]
        table = markdown_table([(n, summarize(rs)) for n, rs in loaded])  # ends with the official scripts reproduced
        console.print(table)
        if md_out:
            md_out.write_text(table)
        if html_out:
            html_out.write_text(html_report("sqlweave evaluation: " + ", ".join(n for n, _ in loaded), loaded))
            say(f"wrote {html_out}")


@eval_app.command("stages")
def eval_stages(
    run: Path = typer.Argument(..., help="A run folder (its traces record each stage's SQL)."),
    data_dir: Optional[Path] = DataDirOption,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Per stage: how often it ran, was skipped, changed the SQL, and turned a right answer wrong or back."""
    from dataclasses import asdict

    from ..eval.runner import read_run_meta
    from ..eval.stage_effects import stage_effects

    with errors():
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

