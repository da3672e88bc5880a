"""The small public entry point: connect to a database, ask questions.

>>> import sqlweave
>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.db.demo import demo_database_path
>>> engine = sqlweave.connect(demo_database_path(), llm=FakeLLM(["SELECT COUNT(*) FROM products"]))
>>> engine.ask("How many products are there?").result.rows
((40,),)
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .database import Database
from .db.connection import QueryResult
from .schema import Schema
from .llm.base import LLM
from .llm.registry import get_llm
from .pipeline import Answer, Pipeline, PriorTurn, SampleCallback, StageCallback, StartCallback
from .presets import build_pipeline
from .resources import Resources, shared_resources

if TYPE_CHECKING:
    from .conversation import Conversation, ConversationStore
    from .knowledge import Knowledge
    from .policy import AccessPolicy
    from .policy.opening import PolicySpec
    from .retrieval.pool import PoolExample


class Engine:
    """A database, a model and a pipeline, ready to answer questions.

    ``knowledge`` is the database's domain knowledge (:class:`~sqlweave.knowledge.Knowledge`); without it,
    pipelines use what is attached to ``db`` or given as its YAML descriptions file. The database's access
    policy (``db.policy``, :mod:`sqlweave.policy`) holds for everything the engine does; its row filters'
    parameters are bound per call (``params=``) or for good with :meth:`bind`. ``resources`` holds what the
    pipeline loads once and reuses (example pools, value indexes, embedders; :mod:`sqlweave.resources`); engines
    share the process's :func:`~sqlweave.resources.shared_resources` unless given their own.
    """

    def __init__(self, db: Database, llm: LLM, pipeline: Pipeline, knowledge: "Knowledge | None" = None,
                 resources: Resources | None = None) -> None:
        self.db = db
        self.llm = llm
        self.pipeline = pipeline
        self.resources = resources if resources is not None else shared_resources()
        policy = getattr(db, "policy", None)
        self.knowledge = policy.filter_knowledge(knowledge) if policy is not None else knowledge
        if policy is not None:
            db.schema()  # the schema is read and reduced to what the policy shows once, here

    @property
    def policy(self) -> "AccessPolicy | None":
        """The database's access policy (``None``: everything is shown)."""
        return self.db.policy

    def bind(self, params: Mapping[str, Any]) -> "Engine":
        """An engine over the same database, model and pipeline whose row filters use ``params`` (one tenant's
        or one request's values); conversations of the returned engine use them too.

        >>> from sqlweave.llm.fake import FakeLLM
        >>> from sqlweave.db.demo import demo_database_path
        >>> engine = connect(demo_database_path(), llm=FakeLLM(responder=lambda m, o: "SELECT COUNT(*) FROM customers"),
        ...                  policy={"row_filters": {"customers": "country = :country"}})
        >>> engine.bind({"country": "Japan"}).ask("How many customers?").result.rows
        ((3,),)
        """
        return Engine(self.db.bind(params), self.llm, self.pipeline, knowledge=self.knowledge,
                      resources=self.resources)

    def _bound(self, params: Mapping[str, Any] | None) -> Database:
        db = self.db if params is None else self.db.bind(params)
        db.check_bound()
        return db

    def ask(self, question: str, *, history: Sequence[PriorTurn] = (), on_stage: StageCallback | None = None,
            pipeline: Pipeline | None = None, evidence: str | None = None,
            params: Mapping[str, Any] | None = None, min_confidence: float | None = None,
            budget_s: float | None = None) -> Answer:
        """Answer ``question``; raises the typed :class:`~sqlweave.errors.SqlweaveError` if no result came out.

        The failed :class:`Answer` (with its trace) is in ``err.details["answer"]``. ``history`` holds a
        conversation's earlier turns, ``on_stage`` receives each stage's trace entry as it finishes,
        ``pipeline`` overrides the engine's own for this question, and ``evidence`` is text that helps
        answer it (a definition, a value's spelling, a formula), shown to the model with the question.
        ``params`` binds the access policy's row-filter parameters for this question (``{"tenant": "acme"}``).
        Every answer has a calibrated ``confidence`` (0 to 1); below ``min_confidence`` the answer comes back
        ``unsure`` with its two leading ``readings`` (a few more model calls; see :mod:`sqlweave.confidence`).
        """
        return self.run(question, history=history, on_stage=on_stage, pipeline=pipeline,
                        evidence=evidence, params=params, min_confidence=min_confidence,
                        budget_s=budget_s).raise_for_error()

    def run(self, question: str, *, history: Sequence[PriorTurn] = (), on_stage: StageCallback | None = None,
            pipeline: Pipeline | None = None, evidence: str | None = None,
            params: Mapping[str, Any] | None = None, min_confidence: float | None = None,
            budget_s: float | None = None, cancel: "threading.Event | None" = None,
            on_start: "StartCallback | None" = None, on_sample: "SampleCallback | None" = None) -> Answer:
        """Like :meth:`ask`, but return a failed :class:`Answer` instead of raising (for batch work).

        ``budget_s`` bounds the question's time in seconds (default: the pipeline's ``budget_s``, else none;
        ``engine.pipeline.budget`` is the preset's, as the doors apply it: :mod:`sqlweave.budget`); setting
        ``cancel`` stops it within a second. A row filter's parameter left unbound raises
        :class:`~sqlweave.errors.PolicyError` before any model time.
        """
        db = self._bound(params)
        return with_follow_ups(pipeline or self.pipeline, history).run(
                                               question, db, self.llm, history=history, on_stage=on_stage,
                                               evidence=evidence, knowledge=self.knowledge, resources=self.resources,
                                               min_confidence=min_confidence, budget_s=budget_s, cancel=cancel,
                                               on_start=on_start, on_sample=on_sample)

    def warm_up(self, pipeline: Pipeline | None = None) -> bool:
        """Evaluate now the part of the first prompt that no question changes, so the first question answers in
        seconds (:meth:`~sqlweave.pipeline.Pipeline.warm_up`); ``False`` when there was nothing to do. A database
        with a row-filtered policy is warmed with its filters unbound (they reach no prompt)."""
        return (pipeline or self.pipeline).warm_up(self.db, self.llm, knowledge=self.knowledge,
                                                   resources=self.resources)

    def conversation(self, id: str | None = None, store: "ConversationStore | None" = None) -> "Conversation":
        """A conversation with this database: follow-up questions see the earlier turns (see
        :class:`~sqlweave.conversation.Conversation`). Without ``id`` a new one starts; with it, the stored one
        continues (:class:`~sqlweave.errors.ConversationNotFoundError` if ``store`` has none). ``store`` defaults to
        the SQLite file in the cache directory."""
        from .conversation import Conversation

        return Conversation(self, store=store, id=id)

    def schema(self) -> Schema:
        return self.db.schema()

    def execute(self, sql: str, *, params: Mapping[str, Any] | None = None, read: str | None = None) -> QueryResult:
        """Run your own read-only SQL with the same safety checks (and the access policy, ``params`` bound).

        ``read`` names the dialect the SQL is written in when it is not the database's (``"postgres"`` for a
        query brought from PostgreSQL to a SQLite file): it is translated first, and ``result.sql`` is what ran.
        """
        return (self.db if params is None else self.db.bind(params)).execute(sql, read=read)

    def add_example(self, question: str, sql: str) -> "PoolExample":
        """Teach the example pool one of your question/SQL pairs for this database: see :func:`add_example`."""
        return add_example(self.db, question, sql, resources=self.resources)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def with_follow_ups(pipeline: Pipeline, history: Sequence[PriorTurn]) -> Pipeline:
    """``pipeline`` with the stage that restates a follow-up on its own (right after ``check_question``) when there
    are earlier turns and the pipeline wants it (:attr:`~sqlweave.pipeline.Pipeline.restate_follow_ups`): the one
    conversation flow of the library, the CLI, the HTTP API, the page and MCP.

    >>> from sqlweave.pipeline import PriorTurn
    >>> pipe = build_pipeline("zero-shot")
    >>> [s.name for s in with_follow_ups(pipe, [PriorTurn("Which singers?", "SELECT name FROM singer")]).stages][:2]
    ['check_question', 'rewrite_question']
    >>> with_follow_ups(pipe, []) is pipe
    True
    """
    if not history or not pipeline.restate_follow_ups or any(s.name == "rewrite_question" for s in pipeline.stages):
        return pipeline
    from .stages.restate import RestateFollowUp

    if any(s.name == "check_question" for s in pipeline.stages):
        return pipeline.insert_after("check_question", RestateFollowUp())
    return replace(pipeline, stages=(RestateFollowUp(),) + pipeline.stages)


def add_example(db: Database, question: str, sql: str, *, resources: Resources | None = None,
                origin: str = "library") -> "PoolExample":
    """Teach the example pool one of your question/SQL pairs for this database (persisted on disk).

    The SQL must be a single read that names only tables and columns of this database and runs;
    otherwise the typed error says what is wrong and nothing is stored (:func:`check_example`). Pipelines that
    select examples (``rag``, ``rag-ast``, ...) with the same ``resources`` (default: the shared ones) see it from
    the next question on; others when they next load their pool. ``origin`` is kept with the pair.

    >>> from sqlweave.db.demo import demo_database_path
    >>> from sqlweave.errors import SchemaError
    >>> try:
    ...     add_example(Database.open(demo_database_path()), "How many products?", "SELECT count(*) FROM product")
    ... except SchemaError as err:
    ...     print(err.message)
    the SQL names what the database does not have: unknown table product
    """
    from .retrieval.pool import add_user_example

    db_id, names = check_example(db, question, sql)
    example: PoolExample = add_user_example(question, sql, db_id=db_id, schema_names=names, origin=origin,
                                            resources=resources)
    return example


def check_example(db: Database, question: str, sql: str) -> tuple[str, list[str]]:
    """Check a question/SQL pair as :func:`add_example` does, storing nothing: the SQL is one read, under the
    database's guard and access policy, that names only what the schema has and runs. Returns the schema's name
    and the names its question skeleton masks.

    >>> from sqlweave.db.demo import demo_database_path
    >>> check_example(Database.open(demo_database_path()), "How many?", "SELECT COUNT(*) FROM products")[0]
    'shop'
    """
    from .errors import ConfigurationError, SchemaError
    from .sql.classify import ensure_read_only
    from .sql.validate import schema_issues

    if not question.strip() or not sql.strip():
        raise ConfigurationError("an example needs a question and its SQL",
                                 hint="Give both: a question as a user would ask it, and the SQL that answers it.")
    schema = db.schema()
    tree = ensure_read_only(sql, db.dialect)
    ran = db.policy is not None
    if ran:
        db.execute(sql)  # the access policy first: a hidden name is refused without being named
    issues = schema_issues(tree, schema, db.dialect)
    if issues:
        raise SchemaError(f"the SQL names what the database does not have: {'; '.join(issues)}",
                          hint="Use the names `sqlweave schema --db ...` shows.")
    if not ran:
        db.execute(sql)
    return schema.name, list(schema.table_names) + [c.name for t in schema.tables for c in t.columns]


def open_database(
    target: str | Path,
    *,
    timeout_s: float = 10.0,
    max_rows: int = 1000,
    descriptions: str | Path | None = None,
    knowledge: "str | Path | Knowledge | None" = None,
    policy: "PolicySpec" = None,
    keys_from_data: bool = True,
    schemas: "Sequence[str] | None" = None,
) -> "tuple[Database, Knowledge | None]":
    """Open ``target`` read-only with its side files (see :func:`connect` and
    :meth:`~sqlweave.database.Database.open`, which merges the access policy once): the domain knowledge given is
    the database's and is returned. A malformed knowledge or policy file fails before the database opens.

    >>> from sqlweave.db.demo import demo_database_path
    >>> db, known = open_database(demo_database_path())
    >>> db.dialect, known
    ('sqlite', None)
    """
    db = Database.open(target, timeout_s=timeout_s, max_rows=max_rows, descriptions=descriptions, policy=policy,
                       keys_from_data=keys_from_data, schemas=schemas, knowledge=knowledge)
    known = db.knowledge if knowledge is not None else None
    return db, known


def connect(
    target: str | Path,
    *,
    llm: LLM | str = "local",
    pipeline: Pipeline | str = "default",
    cache: bool | Path = True,
    timeout_s: float = 10.0,
    max_rows: int = 1000,
    descriptions: str | Path | None = None,
    knowledge: "str | Path | Knowledge | None" = None,
    policy: "PolicySpec" = None,
    resources: Resources | None = None,
    keys_from_data: bool = True,
    schemas: "Sequence[str] | None" = None,
    **llm_options: Any,
) -> Engine:
    """Open ``target`` (SQLite/DuckDB file, CSV/Parquet/JSON/Excel file or folder, or SQLAlchemy URL) read-only and
    return an :class:`Engine`.

    ``llm`` is a backend or a spec (``"local"``, ``"local:0.5b"``, ``"openai:MODEL"``); model answers
    are cached on disk unless ``cache=False``. ``descriptions`` is a side file of table and column
    descriptions; ``knowledge`` a domain-knowledge file (YAML, or defog's JSON: see
    :mod:`sqlweave.knowledge`), whose descriptions reach the schema and whose business terms, preferred
    joins and sample questions reach the prompts. Give one of the two files. (A
    :class:`~sqlweave.knowledge.Knowledge` built in code reaches the prompts; its descriptions reach the schema
    only when it came from a file.) ``policy`` is an access policy (:mod:`sqlweave.policy`: an
    :class:`~sqlweave.policy.AccessPolicy`, its YAML file, or its mapping) merged with the knowledge file's
    ``policy:`` section: hidden tables and columns never reach the model, the tools or a result, and row filters
    hold for every query (bind their parameters with ``engine.ask(..., params=...)`` or :meth:`Engine.bind`).
    ``resources`` (:class:`~sqlweave.resources.Resources`) owns the loaded model, pools and indexes and the
    settings they were read with; by default the process's shared ones. A database that declares no foreign key
    gets the keys its data shows, in the schema sqlweave reads (``keys_from_data=False`` to keep it keyless; see
    :func:`sqlweave.db.infer_keys.infer_database_keys`). ``schemas`` names the schemas of a PostgreSQL or DuckDB
    database to read, in the order a table's name is looked up (default: the connection's search path; every
    schema of a DuckDB file).
    """
    from .files import secure_cache_once

    res = resources if resources is not None else shared_resources()
    secure_cache_once(res.settings.cache_dir)  # a cache an older version left readable by others is made private
    db, known = open_database(target, timeout_s=timeout_s, max_rows=max_rows, descriptions=descriptions,
                              knowledge=knowledge, policy=policy, keys_from_data=keys_from_data,
                              schemas=schemas)
    model = llm if isinstance(llm, LLM) else get_llm(llm, cache=cache, resources=res, **llm_options)
    pipe = pipeline if isinstance(pipeline, Pipeline) else build_pipeline(pipeline)
    return Engine(db, model, pipe, knowledge=known, resources=res)
