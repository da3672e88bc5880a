"""Run a pipeline over a dataset: per-question JSONL results, resumable after any interruption.

Each finished question is appended to ``results.jsonl`` and flushed to disk at once,
so a run killed at any point (even SIGKILL) loses at most the question in flight.
A rerun with the same output folder reads what is there, drops a torn last line,
and continues with the questions not yet done; the result is exactly one line per
question. Traces go to ``traces.jsonl`` beside it, keyed by question id.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from ..database import Database
from ..errors import ConfigurationError, SqlweaveError, StorageError
from ..llm.base import LLM
from ..pipeline import Pipeline
from .datasets import Dataset, Example
from .exact_match import exact_match, kmap_for, official_prediction, sqlite_schema
from .hardness import LEVELS, hardness
from .metrics import (bird_result_eq, order_matters, postprocess, replace_cur_year, spider_result_eq,
                      strip_distinct, undecodable)

if TYPE_CHECKING:
    from ..pipeline import Answer
    from ..resources import Resources

EVAL_TIMEOUT_S = 30.0
EVAL_MAX_ROWS = 10_000_000


@dataclass(frozen=True)
class QuestionResult:
    """One line of ``results.jsonl``."""

    id: str
    db_id: str
    question: str
    gold: str
    prediction: str | None
    hardness: str
    match: bool  # execution match, official default (DISTINCT removed)
    match_keep_distinct: bool
    executable: bool
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    model_calls: int
    seconds: float
    trace_ref: str
    cost_seconds: float | None = None  # seconds with cached model answers counted at their first cost
    exact: bool | None = None  # Spider exact-set-match (None: not computed)
    ts_match: bool | None = None  # test-suite match (None: no suite for this database)
    confidence: float | None = None  # the answer's calibrated confidence (pipeline runs)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "QuestionResult":
        fields = cls.__dataclass_fields__
        return cls(**{k: d[k] for k in fields if k in d or fields[k].default is dataclasses.MISSING})


class GoldCache:
    """Gold results per (database, SQL), computed once per run."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def get(self, db: Database, sql: str) -> Any:
        key = (db.target, sql)
        with self._lock:
            if key in self._data:
                return self._data[key]
        rows = db.execute(sql, timeout_s=EVAL_TIMEOUT_S, max_rows=EVAL_MAX_ROWS).rows
        with self._lock:
            self._data[key] = rows
        return rows


def execution_match(db: Database, gold_sql: str, pred_sql: str, gold_cache: GoldCache | None = None,
                    keep_distinct: bool = False, rule: str = "spider") -> tuple[bool, str | None]:
    """``(match, error)`` by the official rule; ``error`` says why the prediction failed to run.

    ``"spider"`` follows the official ``eval_exec_match``: both queries get ``postprocess``
    (``> =`` joined), every ``distinct`` word is dropped unless ``keep_distinct`` (and only the
    first statement kept), order matters iff the processed gold text contains ``order by``,
    and ``YEAR(CURDATE())`` runs as ``2020``. ``"bird"``: set equality, queries run as written.
    """
    cache = gold_cache or GoldCache()
    if rule == "bird":
        g_sql, p_sql = gold_sql, pred_sql
    else:
        g_sql, p_sql = postprocess(gold_sql), postprocess(pred_sql)
        if not keep_distinct:
            g_sql, p_sql = strip_distinct(g_sql), strip_distinct(p_sql)
    ordered = order_matters(g_sql)
    if rule != "bird":
        g_sql, p_sql = replace_cur_year(g_sql), replace_cur_year(p_sql)
    gold = cache.get(db, g_sql)
    try:
        pred = db.execute(p_sql, timeout_s=EVAL_TIMEOUT_S, max_rows=EVAL_MAX_ROWS).rows
    except SqlweaveError as err:
        return False, f"{err.code}: {err.message}"
    if rule == "bird":
        if undecodable(gold) or undecodable(pred):  # the official script fails to read the result: 0
            return False, "execution_error: the result holds text that is not valid UTF-8"
        return bird_result_eq(gold, pred), None
    return spider_result_eq(gold, pred, ordered), None


def comparison_rule(dataset: Dataset) -> str:
    """BIRD datasets are scored with BIRD's rule, everything else with Spider's."""
    return "bird" if dataset.name.startswith("bird") else "spider"


def check_gold(dataset: Dataset) -> list[tuple[str, str]]:
    """``(question id, error)`` for every gold query that fails on its own database."""
    broken = []
    with DatabasePool(dataset) as dbs:
        for ex in dataset.examples:
            try:
                dbs.get(ex.db_id).execute(ex.gold_sql, max_rows=1)
            except SqlweaveError as err:
                broken.append((ex.id, f"{err.code}: {err.message}"))
    return broken


def suite_paths(suite_dir: Path | None, db_id: str) -> list[Path]:
    """The database variants of ``db_id`` in a Spider test suite (``<suite>/<db_id>/*.sqlite``)."""
    if suite_dir is None:
        return []
    return sorted((Path(suite_dir) / db_id).glob("*.sqlite"))


def suite_match(paths: list[Path], gold_sql: str, pred_sql: str) -> bool:
    """Correct only if the prediction matches gold on every database of the suite."""
    for path in paths:
        with Database.open(path, timeout_s=EVAL_TIMEOUT_S) as db:
            if not execution_match(db, gold_sql, pred_sql)[0]:
                return False
    return True


@dataclass(frozen=True)
class Scores:
    """Every metric of one predicted query."""

    match: bool
    match_keep_distinct: bool
    error: str | None
    exact: bool
    ts_match: bool | None
    executable: bool = False  # the prediction ran on the question's database when it was scored

    @classmethod
    def none(cls, error: str | None = None, ts_match: bool | None = None) -> "Scores":
        """The scores of a question with no prediction."""
        return cls(False, False, error, False, ts_match, False)


def spider_exact(db: Database, gold_sql: str, pred_sql: str) -> bool:
    """Exact-set-match as the official script scores it on ``db`` (its schema read from the SQLite file,
    foreign keys from Spider's ``tables.json`` when the database sits in Spider's layout)."""
    schema = db.schema()
    if db.backend == "sqlite" and Path(db.target).is_file():
        return exact_match(gold_sql, pred_sql, sqlite_schema(db.target), kmap=kmap_for(db.target, schema))
    return exact_match(gold_sql, pred_sql, schema, db.dialect, kmap=kmap_for(None, schema))


def score_sql(db: Database, ex: Example, pred: str, gold_cache: GoldCache, rule: str,
              suite_dir: Path | None = None) -> Scores:
    """EX (both DISTINCT modes), exact match and test-suite match of ``pred`` for ``ex``.

    Under Spider's rule the prediction is first read as the official script reads it (``value``
    becomes ``1``). A gold query that fails is reported in ``error`` and scored as a miss.
    """
    if rule == "spider":
        pred = official_prediction(pred)
    match = match_kd = False
    error = None
    try:
        match, error = execution_match(db, ex.gold_sql, pred, gold_cache, rule=rule)
        executable = error is None
        same = strip_distinct(ex.gold_sql) == ex.gold_sql and strip_distinct(pred) == pred  # both modes run the same SQL
        match_kd = (execution_match(db, ex.gold_sql, pred, gold_cache, keep_distinct=True, rule=rule)[0]
                    if rule == "spider" and not same else match)
    except SqlweaveError as err:
        error = f"gold failed: {err.code}: {err.message}"
        executable = _runs(db, pred)
    suite = suite_paths(suite_dir, ex.db_id)
    return Scores(match, match_kd, error, spider_exact(db, ex.gold_sql, pred),
                  suite_match(suite, ex.gold_sql, pred) if suite else None, executable)


def _runs(db: Database, sql: str) -> bool:
    try:
        db.execute(sql, timeout_s=EVAL_TIMEOUT_S, max_rows=1)
    except SqlweaveError:
        return False
    return True


def question_result(ex: Example, prediction: str | None, scores: Scores, *, error: str | None = None,
                    answer: "Answer | None" = None) -> QuestionResult:
    """The one record of a scored question, for pipeline runs (``answer`` gives the costs and the trace) and for
    files of predictions alike: ``executable`` means the prediction ran when it was scored, in both."""
    return QuestionResult(
        id=ex.id, db_id=ex.db_id, question=ex.question, gold=ex.gold_sql, prediction=prediction,
        hardness=example_hardness(ex), match=scores.match, match_keep_distinct=scores.match_keep_distinct,
        executable=prediction is not None and scores.executable, error=error or scores.error,
        prompt_tokens=answer.usage.prompt_tokens if answer else 0,
        completion_tokens=answer.usage.completion_tokens if answer else 0,
        model_calls=answer.model_calls if answer else 0, seconds=round(answer.seconds, 4) if answer else 0.0,
        cost_seconds=round(answer.cost_seconds, 4) if answer else None,
        trace_ref=f"traces.jsonl#{ex.id}" if answer else "", exact=scores.exact, ts_match=scores.ts_match,
        confidence=answer.confidence if answer else None,
    )


class DatabasePool:
    """One read-only :class:`Database` per ``db_id`` of a dataset, opened on first use, closed together."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self._dbs: dict[str, Database] = {}
        self._lock = threading.Lock()

    def get(self, db_id: str) -> Database:
        with self._lock:
            if db_id not in self._dbs:
                self._dbs[db_id] = Database.open(self.dataset.db_path(db_id), timeout_s=EVAL_TIMEOUT_S,
                                                 descriptions=self.dataset.descriptions_path(db_id),
                                                 keys_from_data=self.dataset.keys_from_data)
            return self._dbs[db_id]

    def __enter__(self) -> "DatabasePool":
        return self

    def __exit__(self, *exc: object) -> None:
        for db in self._dbs.values():
            db.close()


def example_hardness(ex: Example) -> str:
    if ex.difficulty:
        return ex.difficulty
    try:
        return hardness(ex.gold_parse) if ex.gold_parse else hardness(ex.gold_sql)
    except SqlweaveError:
        return "unknown"


def read_run_meta(folder: Path) -> dict[str, Any]:
    """The settings (``run.json``) of an evaluation run folder; a clear error if absent or unreadable."""
    path = Path(folder) / "run.json"
    if not path.exists():
        raise ConfigurationError(f"no run.json in {folder}", hint="Pass the --out folder of an evaluation run.")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ConfigurationError(f"{path} is not valid JSON ({err})",
                                 hint="Restore it, or start the run again in a new --out folder.") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("dataset"), str):
        raise ConfigurationError(f"{path} does not name the run's dataset",
                                 hint="Restore it, or start the run again in a new --out folder.")
    return meta


def _source(text: str) -> str:
    """An expression's text as :func:`ast.unparse` writes it (``"'a'"`` for ``'"a"'``), or the text itself."""
    try:
        return ast.unparse(ast.parse(text, mode="eval").body)
    except SyntaxError:
        return text


def _settings(text: str) -> tuple[str, dict[str, str]] | None:
    """``"Stage(a=1, b='x')"`` as its name and its options' source text, or None if it does not read so."""
    try:
        call = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or call.args or any(k.arg is None for k in call.keywords):
        return None
    return ast.unparse(call.func), {str(k.arg): ast.unparse(k.value) for k in call.keywords}


def stage_change(recorded: Sequence[str], stages: Sequence[Any]) -> str | None:
    """How ``stages`` differ from the stage reprs a run recorded (``run.json``), or None if they do not.

    An option the recorded stage does not show was added to the package after the run began; it counts as
    unchanged when it is at its default (the run ran without it, so with the behaviour its default keeps).

    >>> from sqlweave.stages import ExtractSQL, GenerateSQL
    >>> stage_change(["ExtractSQL()"], [ExtractSQL()]) is None    # name was added later, at its default
    True
    >>> stage_change(["ExtractSQL(name='extract_sql')"], [ExtractSQL(name="pick")])
    "stage 1 (ExtractSQL): name='pick', not 'extract_sql' as when the run began"
    >>> stage_change([repr(ExtractSQL())], [ExtractSQL(), GenerateSQL()])
    'the run began with 1 stages, the pipeline has 2'
    """
    if len(recorded) != len(stages):
        return f"the run began with {len(recorded)} stages, the pipeline has {len(stages)}"
    for i, (text, stage) in enumerate(zip(recorded, stages), 1):
        now = repr(stage)
        if text == now:
            continue
        before, after = _settings(text), _settings(now)
        if before is None or after is None or before[0] != after[0]:
            return f"stage {i} is {now}, not {text} as when the run began"
        defaults = {f.name: _source(repr(f.default)) for f in dataclasses.fields(stage)
                    if f.default is not dataclasses.MISSING} if dataclasses.is_dataclass(stage) else {}
        for key, value in after[1].items():
            was = before[1].get(key)
            if was is None and defaults.get(key) == value:
                continue
            if was != value:
                return f"stage {i} ({after[0]}): {key}={value}, not {was if was is not None else 'unset'} as when the run began"
        gone = sorted(set(before[1]) - set(after[1]))
        if gone:
            return f"stage {i} ({after[0]}): the run began with {gone[0]}={before[1][gone[0]]}, an option it no longer has"
    return None


class ResultStore:
    """``results.jsonl`` + ``traces.jsonl`` + ``run.json`` in one folder, append-only and crash-safe.

    Resuming a folder with other settings (dataset, pipeline, model, the CLI's options, or, when ``stages`` are
    given, any stage's options) is refused: one folder holds one run."""

    def __init__(self, folder: Path, meta: dict[str, Any], stages: Sequence[Any] | None = None) -> None:
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise self._unwritable(err) from err
        self.results_path = self.folder / "results.jsonl"
        self.traces_path = self.folder / "traces.jsonl"
        meta_path = self.folder / "run.json"
        if meta_path.exists():
            old = read_run_meta(self.folder)
            # the settings that change answers; a run written before a setting existed had it unset
            for key in ("dataset", "pipeline", "model", "schema_budget", "vote_below", "vote"):
                if old.get(key) != meta.get(key):
                    raise ConfigurationError(
                        f"{self.folder} holds a run with {key}={old.get(key)!r}, not {meta.get(key)!r}",
                        hint="Use another --out folder, or the same settings to resume.",
                    )
            changed = stage_change(old.get("stages") or [], stages) if stages is not None and "stages" in old else None
            if changed:
                raise ConfigurationError(
                    f"{self.folder} holds a run of another pipeline: {changed}",
                    hint="The package or the preset changed since the run began. Use another --out folder (answers "
                         "the response cache holds cost no model time again).")
        else:
            try:
                meta_path.write_text(json.dumps(meta, indent=2) + "\n")
            except OSError as err:
                raise self._unwritable(err) from err
        self.done: dict[str, QuestionResult] = self._load()
        self._lock = threading.Lock()

    def _unwritable(self, err: OSError) -> StorageError:
        return StorageError(f"cannot write the run to {str(self.folder)!r}: {err.strerror or err}",
                            hint="Choose another --out folder, one you can write.")

    def _load(self) -> dict[str, QuestionResult]:
        done: dict[str, QuestionResult] = {}
        if not self.results_path.exists():
            return done
        good_lines = []
        for line in self.results_path.read_text(encoding="utf-8").splitlines():
            try:
                r = QuestionResult.from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError):
                continue  # a line torn by a kill mid-write
            if r.id not in done:
                done[r.id] = r
                good_lines.append(line)
        # Rewrite without torn or repeated lines, atomically.
        tmp = self.results_path.with_suffix(".tmp")
        tmp.write_text("".join(l + "\n" for l in good_lines), encoding="utf-8")
        os.replace(tmp, self.results_path)
        return done

    def add(self, result: QuestionResult, trace: list[dict[str, Any]]) -> None:
        with self._lock:
            if result.id in self.done:
                return
            try:
                with self.traces_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"id": result.id, "trace": trace}, default=str) + "\n")
                with self.results_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(asdict(result), default=str) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
            except OSError as err:  # a line cut short is skipped when the run resumes
                raise StorageError(
                    f"the run stopped: cannot write {str(self.folder)!r}: {err.strerror or err}",
                    hint="Free some space there, then run the same command again: it resumes where it stopped.",
                ) from err
            self.done[result.id] = result


def evaluation_resources() -> "Resources":
    """Resources for one evaluation run: the shared settings without the user's own example pairs, and the
    shared models in memory (so no weights load twice).

    >>> evaluation_resources().settings.user_examples
    False
    """
    from ..resources import Resources, shared_resources

    shared = shared_resources()
    return Resources(replace(shared.settings, user_examples=False), models=shared.models)


def run_eval(
    dataset: Dataset,
    examples: Iterable[Example],
    pipeline: Pipeline,
    llm: LLM,
    out: Path,
    *,
    meta: dict[str, Any] | None = None,
    concurrency: int = 1,
    on_result: Callable[[QuestionResult], None] | None = None,
    suite_dir: Path | None = None,
    resources: "Resources | None" = None,
) -> list[QuestionResult]:
    """Answer and score every example not already in ``out``; return all results in example order.

    ``resources`` holds what the pipeline loads once for the whole run (example pool, value indexes, embedders).
    By default they are the run's own, sharing the models in memory of
    :func:`~sqlweave.resources.shared_resources` but not the pairs a user added to the example pool: a benchmark's
    prompts show only the benchmark's training pairs, whatever the user taught sqlweave."""
    resources = resources if resources is not None else evaluation_resources()
    todo_all = list(examples)
    store = ResultStore(out, {"dataset": dataset.name, "pipeline": pipeline.name, "model": llm.model_id,
                              "questions": len(todo_all), "created": time.strftime("%Y-%m-%d %H:%M:%S"),
                              # every stage with its options (example pool, pruning method, rounds...)
                              "stages": [repr(s) for s in pipeline.stages],
                              "user_examples": resources.settings.user_examples, **(meta or {})}, pipeline.stages)
    # Grouped by database, so consecutive prompts share the schema prefix (llama.cpp reuses it).
    todo = sorted((e for e in todo_all if e.id not in store.done), key=lambda e: e.db_id)
    dbs = DatabasePool(dataset)
    gold_cache = GoldCache()
    rule = comparison_rule(dataset)

    def one(ex: Example) -> None:
        db = dbs.get(ex.db_id)
        answer = pipeline.run(ex.question, db, llm, schema=db.schema(), evidence=ex.evidence or None,
                              resources=resources)
        error = None if answer.error is None else f"{answer.error.code}: {answer.error.message}"
        if answer.sql is not None:
            scores = score_sql(db, ex, answer.sql, gold_cache, rule, suite_dir)
        else:
            scores = Scores.none(ts_match=False if suite_paths(suite_dir, ex.db_id) else None)
        result = question_result(ex, answer.sql, scores, error=error, answer=answer)
        store.add(result, [e.as_dict() for e in answer.trace])
        if on_result:
            on_result(result)

    with dbs:
        if concurrency <= 1:
            for ex in todo:
                one(ex)
        else:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                for f in [pool.submit(one, ex) for ex in todo]:
                    f.result()
    return [store.done[e.id] for e in todo_all if e.id in store.done]


def load_results(folder: Path) -> list[QuestionResult]:
    path = Path(folder) / "results.jsonl"
    if not path.exists():
        raise ConfigurationError(f"no results in {folder}", hint="Pass the --out folder of an evaluation run.")
    out = []
    seen = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            r = QuestionResult.from_dict(json.loads(line))
        except (ValueError, KeyError, TypeError):
            continue
        if r.id not in seen:
            seen.add(r.id)
            out.append(r)
    return out


@dataclass(frozen=True)
class Summary:
    n: int
    ex: float
    ex_keep_distinct: float
    executable: float
    by_level: dict[str, tuple[int, float]]
    median_seconds: float
    median_prompt_tokens: float
    median_completion_tokens: float
    mean_model_calls: float
    exact_match: float | None = None
    test_suite: float | None = None
    ts_n: int = 0
    mean_seconds: float = 0.0
    median_cost_seconds: float = 0.0  # cached model answers counted at their first cost
    mean_cost_seconds: float = 0.0
    mean_prompt_tokens: float = 0.0
    mean_completion_tokens: float = 0.0


def cost(r: QuestionResult) -> float:
    """A question's seconds with cached model answers counted at what they first cost."""
    return r.seconds if r.cost_seconds is None else r.cost_seconds


def summarize(results: list[QuestionResult]) -> Summary:
    n = len(results)
    if n == 0:
        return Summary(0, 0.0, 0.0, 0.0, {}, 0.0, 0.0, 0.0, 0.0)
    levels = [lv for lv in LEVELS if any(r.hardness == lv for r in results)]
    levels += sorted({r.hardness for r in results} - set(LEVELS))
    by = {}
    for lv in levels:
        rs = [r for r in results if r.hardness == lv]
        by[lv] = (len(rs), 100.0 * sum(r.match for r in rs) / len(rs))
    return Summary(
        n=n,
        ex=100.0 * sum(r.match for r in results) / n,
        ex_keep_distinct=100.0 * sum(r.match_keep_distinct for r in results) / n,
        executable=100.0 * sum(r.executable for r in results) / n,
        by_level=by,
        median_seconds=statistics.median(r.seconds for r in results),
        mean_seconds=statistics.mean(r.seconds for r in results),
        median_cost_seconds=statistics.median(cost(r) for r in results),
        mean_cost_seconds=statistics.mean(cost(r) for r in results),
        mean_prompt_tokens=statistics.mean(r.prompt_tokens for r in results),
        mean_completion_tokens=statistics.mean(r.completion_tokens for r in results),
        median_prompt_tokens=statistics.median(r.prompt_tokens for r in results),
        median_completion_tokens=statistics.median(r.completion_tokens for r in results),
        mean_model_calls=statistics.mean(r.model_calls for r in results),
        exact_match=(100.0 * sum(bool(r.exact) for r in results) / n) if any(r.exact is not None for r in results) else None,
        test_suite=(100.0 * sum(bool(r.ts_match) for r in ts) / len(ts)) if (ts := [r for r in results if r.ts_match is not None]) else None,
        ts_n=len([r for r in results if r.ts_match is not None]),
    )
