"""How the commands build what they run, in the order that fails soonest: the preset (a typo fails at once), then
the database with its side files, then the model (assembled and loaded with progress on stderr).

>>> parse_params(["tenant=acme", "region = EU"])
{'tenant': 'acme', 'region': ' EU'}
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from ..database import Database
from ..errors import ConfigurationError
from ..llm.base import LLM
from .output import err_console, nullcontext, say

if TYPE_CHECKING:
    from ..engine import Engine
    from ..schema import Schema


def db_or_demo(db: str | None, demo: bool, knowledge: Path | None) -> tuple[str, Path | None]:
    """The database a command asks (``--db``, or the demo shop with its knowledge file for ``--demo``)."""
    if demo and db:
        raise ConfigurationError("both --db and --demo were given", hint="Give one of them.")
    if demo:
        from ..db.demo import demo_database_path, demo_knowledge_path

        return str(demo_database_path()), knowledge or demo_knowledge_path()
    if not db:
        raise ConfigurationError("no database was given", hint="Pass --db PATH_OR_URL, or --demo for the bundled "
                                 "demo shop.")
    return db, knowledge


def build_llm(spec: str, *, cache: bool, base_url: str | None, api_key: str | None, quiet: bool,
              load: bool = True, replay: list[Path] | None = None) -> LLM:
    """The model backend every command uses; the embedded model is assembled and loaded now (with progress) unless
    ``load`` is false (a server loads it in the background once it is listening). ``replay`` (run folders or trace
    files) answers the calls they recorded without the model, inside the response cache."""
    from ..llm.registry import get_llm

    opts: dict[str, Any] = {}
    if spec.startswith("openai"):
        opts.update({k: v for k, v in (("base_url", base_url), ("api_key", api_key)) if v})
    llm = get_llm(spec, cache=cache, **opts)
    if replay:
        from ..llm.cache import CachedLLM
        from ..llm.recorded import RecordedLLM

        if isinstance(llm, CachedLLM):  # inside the cache, which then keeps what the recording answers
            llm.inner = recorded = RecordedLLM(llm.inner, replay)
        else:
            llm = recorded = RecordedLLM(llm, replay)
        unqualified = f" ({recorded.unqualified} traced without their options)" if recorded.unqualified else ""
        say(f"{len(recorded)} recorded model calls to answer from {', '.join(map(str, replay))}{unqualified}",
            style="dim", err=True)
        if recorded.costless:
            say(f"{recorded.costless} of them were answered from the recorded run's cache and kept no first cost: "
                "this run's seconds count them as free (compare seconds with the recorded run's own results)",
                err=True)
    if load:
        load_local(llm, quiet=quiet)
    return llm


def load_local(llm: LLM, *, quiet: bool) -> None:
    """Assemble and load the embedded model behind ``llm``, if there is one (with progress)."""
    from ..llm.local import LocalLLM

    inner = unwrap(llm, lambda backend: isinstance(backend, LocalLLM))
    if inner is not None:
        _prepare_local(inner, quiet=quiet)


def unwrap(llm: Any, wanted: Callable[[Any], bool]) -> Any:
    """The first backend in ``llm``'s chain of wrappers (each one's ``inner``) that is ``wanted``, or None."""
    while llm is not None and not wanted(llm):
        llm = getattr(llm, "inner", None)
    return llm


def _prepare_local(llm: Any, *, quiet: bool) -> None:
    """Assemble the weights (with a progress bar the first time) and load the model (with a spinner)."""
    from ..llm.weights import MODELS, ensure_weights, is_assembled

    spec = MODELS[llm.key]
    out = err_console
    if not is_assembled(spec):
        with Progress(TextColumn("[bold]Assembling {task.description}"), BarColumn(), DownloadColumn(),
                      TimeRemainingColumn(), console=out, disable=quiet) as bar:
            task = bar.add_task(escape(spec.name), total=None)
            ensure_weights(llm.key, progress=lambda done, total: bar.update(task, completed=done, total=total))
    with out.status(Text(f"Loading {spec.name} ..."), spinner="dots") if not quiet else nullcontext():
        llm.llama  # noqa: B018 - loads and caches the model


def build_engine(db: str, *, model: str, pipeline: str, english_only: bool = False, examples: Path | None = None,
                 timeout: float = 10.0, max_rows: int = 1000, descriptions: Path | None = None,
                 knowledge: Path | None = None, policy: Path | None = None, params: list[str] | None = None,
                 no_cache: bool = False, base_url: str | None = None, api_key: str | None = None,
                 quiet: bool = False, schema_budget: int | None = None, keys_from_data: bool = True,
                 schemas: str | None = None) -> "Engine":
    """The one way the CLI builds an engine: the preset first (a typo fails at once), then the database with its
    side files (a malformed file, a missing database or an unbound row-filter parameter fails before the model
    loads), then the model."""
    from ..engine import Engine

    pipe = preset_pipeline(pipeline, english_only=english_only, examples=examples, schema_budget=schema_budget)
    database = open_db(db, timeout=timeout, max_rows=max_rows, descriptions=descriptions, knowledge=knowledge,
                       policy=policy, params=params, keys_from_data=keys_from_data, schemas=schemas)
    read_schema(database, quiet=quiet)
    database.check_bound()
    llm = build_llm(model, cache=not no_cache, base_url=base_url, api_key=api_key, quiet=quiet)
    return Engine(database, llm, pipe)


def read_schema(database: Database, *, quiet: bool = False, refresh: bool = False) -> "Schema":
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


def preset_pipeline(name: str, *, english_only: bool = False, examples: Path | None = None,
                    schema_budget: int | None = None):
    """The preset, built before any model loads so a typo or a missing option fails at once."""
    from ..presets import build_pipeline
    from ..stages import CheckQuestion

    pipe = build_pipeline(name, schema_budget=schema_budget, **pipeline_options(examples))
    if english_only:
        pipe = pipe.replace_stage("check_question", CheckQuestion(require_english=True))
    return pipe


def pipeline_options(examples: Path | None) -> dict[str, Any]:
    """The preset options the commands' ``--examples`` gives (none without it)."""
    return {"examples": str(examples)} if examples else {}


def parse_params(specs: list[str], option: str = "--param", form: str = "NAME=VALUE") -> dict[str, str]:
    """``--param NAME=VALUE`` options (or another ``option`` of that ``form``) as a mapping (values are text)."""
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name.strip():
            raise ConfigurationError(f"{option} {spec!r} is not {form}")
        out[name.strip()] = value
    return out


def open_db(db: str, *, timeout: float = 10.0, max_rows: int = 1000, descriptions: Path | None = None,
            knowledge: Path | None = None, policy: Path | None = None,
            params: list[str] | None = None, keys_from_data: bool = True,
            schemas: str | None = None) -> Database:
    """Open ``db`` read-only with its descriptions or domain knowledge attached (a malformed file fails first),
    under the access policy (``policy`` and a knowledge file's ``policy:`` section) with ``params`` bound."""
    from ..engine import open_database

    if knowledge is not None and descriptions is not None:  # named as the flags the user gave
        raise ConfigurationError("both --descriptions and --knowledge were given",
                                 hint="Put the descriptions in the knowledge file (its tables: section).")
    database, _ = open_database(db, timeout_s=timeout, max_rows=max_rows, descriptions=descriptions,
                                knowledge=knowledge, policy=policy, keys_from_data=keys_from_data,
                                schemas=schemas)
    return database.bind(parse_params(params)) if params else database
