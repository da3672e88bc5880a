"""Named pipelines: useful combinations of the optional stages (`sqlweave ask -p NAME`).

>>> [name for name in ("zero-shot", "repair", "correct", "agent") if name in PRESETS]
['zero-shot', 'repair', 'correct', 'agent']
>>> [s.name for s in build_pipeline("repair-correct").stages][-2:]
['repair', 'correct']

A preset name can be extended with stages, joined by ``+`` (applied left to right)::

>>> [s.name for s in build_pipeline("zero-shot+repair+revise").stages][-3:]
['execute', 'repair', 'revise']
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from .errors import ConfigurationError
from .pipeline import Pipeline, Stage
from .stages.readings import SecondReadings
from .stages.registry import Addon, Option, Pool, Row, find_addon, pipeline_of, resolved
from .stages.vote import SelfConsistency


#: The preset used when none is named.
DEFAULT = "default"

#: ``default`` votes on answers whose calibrated confidence is below this (BENCHMARKS.md: EX against calls).
VOTE_BELOW = 0.6

#: How much a result group's size counts against the question's likelihood when a vote is settled (chosen on the
#: 200-question sample among 0, 1, 2, 4, 8, 16; BENCHMARKS.md: weighing the groups).
VOTE_SUPPORT = 2.0

#: The pipelines whose answers vote with the default's in the ``ensemble`` preset.
ENSEMBLE_VARIANTS = ("pruned+repair", "rag-simplify+repair")

@dataclass(frozen=True)
class Ensemble:
    """The ``ensemble`` preset's setting of its ensemble stage: the presets ``names`` built with the pool given."""

    names: tuple[str, ...]

    def resolve(self, options: Mapping[str, object]) -> object:
        pool = Pool().resolve(options)
        return tuple(build_pipeline(v, examples=pool) for v in self.names)


# --- base pipelines as data: the few that are not a preset plus stages ------------------------------------------

#: Schema as CREATE TABLE statements (or another ``style``) with sample rows, then the question; one model call.
ZERO_SHOT = (Row("check_question"), Row("render_schema", {"style": Option("style", "create_table")}), Row("generate"),
             Row("extract_sql"), Row("execute"))

#: The base pipelines a :class:`Recipe` names, each a list of stage rows built with the recipe's options:
#: ``few_shot`` is zero-shot plus ``k`` examples retrieved from the pool (``examples``, a Spider-format train.json;
#: with ``approximate``, a zero-shot query is written first, which ``ast_rerank`` ranks the examples against);
#: ``pruned`` is an approximated query, schema pruning (``method``), then generation on the pruned schema,
#: zero-shot or, with ``few_shot``, with 4 BM25-chosen examples; ``agent`` is agent mode (paper 002), where the
#: model calls tools instead of answering one prompt; ``correct_all`` is every correction method with the safety
#: check (answers that run, return rows and on which the sampled candidates agree, >= 60%, are left alone by the
#: model-judged stages).
BASES: dict[str, tuple[Row, ...]] = {
    "zero_shot": ZERO_SHOT,
    "few_shot": (
        Row("check_question"), Row("approximate", when="approximate"), Row("render_schema"),
        Row("select_examples", {"pool": Pool(), "method": Option("method", "bm25"), "k": Option("k", 4),
                                "organisation": Option("organisation", "pairs")}),
        Row("generate", {"prompt": "few_shot"}), Row("extract_sql"), Row("execute")),
    "pruned": (
        Row("check_question"), Row("approximate"), Row("prune_schema", {"method": Option("method", "hybrid")}),
        Row("render_schema"), Row("select_examples", {"pool": Pool()}, when="few_shot"),
        Row("generate", {"prompt": "few_shot"}, when="few_shot"),
        Row("generate", {"prompt": "zero_shot"}, unless="few_shot"), Row("extract_sql"), Row("execute")),
    "agent": (Row("check_question"), Row("agent", {"show_schema": Option("show_schema", True)})),
    "correct_all": ZERO_SHOT + (Row("vote"), Row("repair"), Row("correct"), Row("dac", {"skip_if_confident": 0.6}),
                                Row("revise", {"skip_if_confident": 0.6})),
    # The default's answer (repaired), a pruned-schema answer and a few-shot answer vote by execution result, then
    # correction of what still fails.
    "ensemble": ZERO_SHOT + (Row("repair"), Row("ensemble", {"pipelines": Ensemble(ENSEMBLE_VARIANTS)}),
                             Row("correct", {"fix_empty": False})),
}


def zero_shot(name: str = "zero-shot") -> Pipeline:
    """The zero-shot pipeline (the base most presets extend), for building pipelines of one's own.

    >>> [s.name for s in zero_shot().stages]
    ['check_question', 'render_schema', 'generate', 'extract_sql', 'execute']
    """
    return pipeline_of(name, ZERO_SHOT, {})


def with_stages(base: Pipeline, name: str, *extra: Stage) -> Pipeline:
    """``base`` with ``extra`` stages appended (correction stages run after execution), named ``name``."""
    return Pipeline(name, base.stages + tuple(extra))


@dataclass(frozen=True)
class Recipe:
    """A base pipeline: the rows of :data:`BASES` named ``build`` (or, for ``from_preset``, that preset built
    without options and with ``changes``: stage name to settings), built with ``fixed`` over the options given."""

    build: str
    fixed: Mapping[str, object] = field(default_factory=dict)
    from_preset: str | None = None
    changes: Mapping[str, Mapping[str, object]] = field(default_factory=dict)

    def __call__(self, name: str, **options: object) -> Pipeline:
        given = {**options, **self.fixed}
        if self.from_preset is None:
            return pipeline_of(name, BASES[self.build], given)
        pipe = build_pipeline(self.from_preset)
        for stage, settings in self.changes.items():
            changed = replace(pipe.stage(stage), **resolved(settings, given))  # type: ignore[type-var]
            pipe = pipe.replace_stage(stage, changed)
        return replace(pipe, name=name)


#: Every preset: a base pipeline (a :class:`Recipe`), or another preset extended with stages (``"BASE+STAGE"``,
#: see :data:`ADDONS`). ``default`` is what ``connect``, ``ask`` and ``demo`` use: the best measured pipeline
#: for its cost (BENCHMARKS.md): zero-shot, the rule-based name repair (no model call), model correction of
#: answers that still fail to run (empty results are left alone: on Spider, re-prompting them changed no answer
#: for 0.26 extra calls per question), the rule-based rewrites (a text compared with the column that holds it,
#: needless joins dropped, name groupings keyed), then voting
#: on the answers whose calibrated confidence is below 0.6 (about one in five: the median question still costs
#: one call), each result group weighed by the likelihood of the question given its query (reviewer reranking)
#: and by its size; last, a key shown where the question asks for no ids is followed by the name of its row.
PRESETS: dict[str, "Recipe | str"] = {
    "default": "zero-shot+repair+correct-failed+rewrite+vote-if-unsure+name-keys",
    "zero-shot": Recipe("zero_shot"),
    "zero-shot-compact": Recipe("zero_shot", {"style": "compact"}),
    # XiYan-SQL's M-Schema: one line per column, with its type, key and example values.
    "zero-shot-mschema": Recipe("zero_shot", {"style": "mschema"}),
    "rag": Recipe("few_shot"),
    "rag-qskeleton": Recipe("few_shot", {"method": "question_skeleton"}),
    "rag-skeleton-org": Recipe("few_shot", {"organisation": "skeleton"}),
    "rag-desem": Recipe("few_shot", {"method": "question_skeleton", "organisation": "masked"}),
    # ASTReS: examples re-ranked by AST similarity to a zero-shot approximated query.
    "rag-ast": Recipe("few_shot", {"method": "ast_rerank", "approximate": True}),
    # RB-SQL: examples whose SQL skeleton is closest to the approximated query's.
    "rag-sql-skeleton": Recipe("few_shot", {"method": "sql_skeleton", "approximate": True}),
    # Guo et al.: dense retrieval over question skeletons; rag-simplify also simplifies the question by model.
    "rag-dense-skeleton": Recipe("few_shot", {"method": "dense_skeleton"}),
    "rag-simplify": "rag-dense-skeleton+simplify",
    "repair": "zero-shot+repair",
    # ASTReS value selection: stored values that match the question, shown before it.
    "values": "zero-shot+values",
    # Self-consistency before repair: 5 sampled candidates (names repaired by rule) vote on the result.
    "default-vote": "zero-shot+vote+repair+correct-failed",
    "default-values": "default+values",
    "correct": "zero-shot+correct",
    "repair-correct": "zero-shot+repair+correct",
    "revise": "zero-shot+revise",
    "vote": "zero-shot+vote",
    "vote-correct": "zero-shot+vote+correct",
    "dac": "zero-shot+dac",
    "correct-all": Recipe("correct_all"),
    "rag-correct": "rag+correct",
    "pruned": Recipe("pruned"),
    "pruned-rag": Recipe("pruned", {"few_shot": True}),
    # ASTReS: values the question names are found first and their columns survive the pruning.
    "pruned-values": "pruned+values",
    "pruned-dense": Recipe("pruned", {"method": "hybrid-dense"}),
    "pruned-correct": "pruned+correct",
    # Agent mode (paper 002). "agent" also shows the compact schema (helps small models); "agent-tools-only" is
    # the paper's setting, where the model sees only what the tools return.
    "agent": Recipe("agent"),
    "agent-tools-only": Recipe("agent", {"show_schema": False}),
    "ensemble": Recipe("ensemble"),
    # default voting on more of its answers, below confidence 0.9 (78.4% on all 972 Spider dev questions against
    # 77.0% for default, at a median of 11.49 s; BENCHMARKS.md). It was "best" until +examples was measured.
    "vote-more": Recipe("vote_below", {"floor": 0.9}, from_preset="default",
                        changes={"vote_if_unsure": {"only_below": Option("floor", 0.9)}}),
    # The most accurate pipeline measured, whatever it costs: vote-more whose vote also hears the question asked
    # with 4 few-shot pairs like the answer (79.2% on all 972 Spider dev questions against 78.4% for vote-more, at a
    # median of 35.2 s; BENCHMARKS.md, few-shot examples in the vote, and ties broken the same way on every machine).
    "best": "vote-more+examples",
}


@dataclass(frozen=True)
class Measured:
    """A preset's figures on all 972 Spider dev questions with the embedded 1.5B model, on the 2-core machine of
    BENCHMARKS.md's main table: execution accuracy (%), model calls and median seconds per question."""

    ex: float
    calls: float
    median_s: float
    date: str


#: The presets measured on all 972 Spider dev questions (BENCHMARKS.md, main table), for choosing between them.
MEASURED: dict[str, Measured] = {
    "default": Measured(77.0, 1.48, 2.03, "2026-11-26"),
    "vote-more": Measured(78.4, 2.31, 11.49, "2026-11-26"),
    "best": Measured(79.2, 4.72, 35.19, "2026-11-28"),  # its seconds: the run of 2026-11-27 (same calls)
}


def describe_presets() -> list[dict[str, Any]]:
    """Every preset: its name, what it is made of (another preset and the stages it adds, or a base recipe with its
    fixed options), and its figures on the 972 Spider dev questions where measured.

    >>> next(p for p in describe_presets() if p["name"] == "best")["made_of"]
    'vote-more+examples'
    """
    rows = []
    for name, recipe in PRESETS.items():
        if isinstance(recipe, str):
            made_of = recipe
        else:
            fixed = ", ".join(f"{k}={v!r}" for k, v in recipe.fixed.items())
            made_of = f"{recipe.build}({fixed})"
        measured = MEASURED.get(name)
        rows.append({"name": name, "made_of": made_of,
                     "spider_dev_ex": measured.ex if measured else None,
                     "calls_per_question": measured.calls if measured else None,
                     "median_seconds": measured.median_s if measured else None,
                     "measured": measured.date if measured else None})
    return rows


#: Options :func:`build_pipeline` accepts (a preset that does not use one ignores it).
OPTIONS = ("examples", "k", "organisation")


#: The candidates ``+diverse`` adds to a vote: the question asked again with the schema shown in these styles,
#: greedily and sampled this many times (the smallest set that reached the most answers by majority on the
#: 200-question sample; BENCHMARKS.md, candidates diverse by design).
DIVERSE_VIEWS = ("compact", "mschema")
DIVERSE_SAMPLES = 2

#: The view ``+examples`` adds to a vote: this many few-shot pairs chosen by the answer's SQL skeleton (RB-SQL's
#: k), asked greedily and sampled this many times.
EXAMPLES_K = 4
EXAMPLES_SAMPLES = 2

#: The view ``+link-first`` adds to a vote: the question asked once more, greedily, with the tables it needs named
#: before the query (BENCHMARKS.md, a view that names its tables first).
LINK_FIRST_VIEWS = ("zero_shot_link_first",)

#: ``+more-if-split``: a vote whose largest result group holds fewer than this many of its 5 candidates (no 4 of 5
#: agree) draws this many more samples and votes again (adaptive consistency).
SPLIT_BELOW = 4
SPLIT_SAMPLES = 4


def _votes(addon: str, lacking: str, **settings: object) -> Addon:
    """``+addon``: ``settings`` set on every vote stage; a pipeline without one is refused."""
    return Addon(changes="vote", settings=settings, lacking=f"has no vote stage {lacking}",
                 hint=f"Add +{addon} to a preset that votes (default, best, vote, ...).")


_GENERATES = "a preset that generates SQL from a prompt (default, rag, ...)"

#: What ``+NAME`` does to a preset (``"rag-ast+repair+correct"``), as data (:class:`~sqlweave.stages.registry.Addon`):
#: a stage appended after what is already there (correction stages), a stage placed after or before another
#: (value selection, evidence, time and simplification go before generation), or settings changed on the stages
#: already there (generation, the votes). A stage another package offers (entry-point group ``sqlweave.stages``)
#: extends a preset the same way.
ADDONS: dict[str, Addon] = {
    "repair": Addon("repair"),
    "correct": Addon("correct"),
    "correct-failed": Addon("correct", {"fix_empty": False}),
    "revise": Addon("revise"),
    "rewrite": Addon("rewrite"),
    "dac": Addon("dac"),
    "vote": Addon("vote"),
    # Voting spent only where the calibrated confidence is low, after the answer is final (rewrite included).
    # Every result group is weighed by reviewer reranking plus its size (log p(question | query) + 2 ln(size);
    # BENCHMARKS.md: weighing the groups).
    "vote-if-unsure": Addon("vote", {"n": 4, "only_below": VOTE_BELOW, "rewrite": True, "select": "review",
                                     "margin": None, "support": VOTE_SUPPORT, "name": "vote_if_unsure"}),
    # After any vote: a key shown where the question asks for no ids is followed by the name of its row.
    "name-keys": Addon("name_keys"),
    # Value selection before pruning (whose columns it then keeps) and before generation.
    "values": Addon("select_values", at=("before:prune_schema", "after:check_question")),
    # Generated evidence (RB-SQL) just before generation, on the schema the prompt shows.
    "evidence": Addon("generate_evidence", at=("before:generate",), needs="generate",
                      lacking="has no generate stage to write evidence for", hint=f"Add +evidence to {_GENERATES}."),
    # Schema links by meaning, on the schema the prompt shows, just before generation.
    "link": Addon("link_schema", at=("after:render_schema",), needs="render_schema",
                  lacking="has no render_schema stage whose schema words could link to",
                  hint="Add +link to a preset that shows the schema in a prompt (default, rag, ...)."),
    # The question simplified by the model (Guo et al.) right after it is checked.
    "simplify": Addon("simplify", at=("after:check_question",)),
    # Time stated exactly: "last month", "Q3 2023", "on weekends" resolved on the database's date, as evidence,
    # just before the first stage that asks the model for SQL (generation, or an approximated query) and after
    # generated evidence (which is not asked for when a question has some: write +evidence+time); right after the
    # question's check in a pipeline with neither (the agent).
    "time": Addon("interpret_time", at=("after:generate_evidence", "before:approximate", "before:generate",
                                        "after:check_question")),
    # Generation held to the schema's query grammar (llama.cpp GBNF, in the spirit of PICARD).
    "grammar": Addon(changes="generate", settings={"grammar": True}, lacking="has no generate stage to constrain",
                     hint=f"Add +grammar to {_GENERATES}."),
    # Conventions in the instructions: join only the tables needed; superlatives as ORDER BY ... LIMIT (also in
    # the votes that sample generation's prompt).
    "conventions": Addon(changes="generate", settings={"prompt": "zero_shot_conventions"},
                         where={"prompt": "zero_shot"}, lacking="has no zero-shot generate stage to instruct",
                         hint="Add +conventions to a zero-shot preset (default, best, zero-shot, ...)."),
    # CHASE-SQL's pairwise selector, and reviewer reranking (the question's likelihood given each query): close
    # votes settled by the model instead of by group size.
    "select": _votes("select", "whose choice the model could make", select="pairwise"),
    "review": _votes("review", "whose choice the model could make", select="review"),
    # Candidates diverse by design: the question asked again with the schema as compact lines and as M-Schema.
    "diverse": _votes("diverse", "to add candidates to", views=DIVERSE_VIEWS, view_samples=DIVERSE_SAMPLES),
    # Adaptive consistency: a split vote draws 4 more samples.
    "more-if-split": _votes("more-if-split", "to draw more samples for", more=SPLIT_SAMPLES, more_below=SPLIT_BELOW),
    # A few-shot view in the vote: examples whose SQL skeleton is like the answer's (from the pool given, else the
    # settings' pool, else the bundled one).
    "examples": _votes("examples", "to add candidates to", examples=EXAMPLES_K, examples_pool=Pool(),
                       view_samples=EXAMPLES_SAMPLES),
    # One more view in the vote: the question answered with the tables it needs named before the query.
    "link-first": _votes("link-first", "to add candidates to", prompt_views=LINK_FIRST_VIEWS),
}


def build_pipeline(name: str = DEFAULT, *, schema_budget: int | None = None, vote_below: float | None = None,
                   vote: Mapping[str, object] | None = None, **options: object) -> Pipeline:
    """The pipeline preset called ``name``; ``options`` (e.g. ``examples=PATH``) go to presets that use them.

    ``name`` may add stages to a preset: ``"repair+dac"`` is the ``repair`` preset followed by
    decomposed correction (see :data:`ADDONS`). Every preset shows the leading readings of an answer below the
    confidence asked for (:class:`~sqlweave.stages.readings.SecondReadings`).

    ``schema_budget`` caps the tokens of schema every prompt shows (default: what the model's context leaves).
    A schema larger than that is fitted to it by retrieval (:mod:`sqlweave.stages.render_schema`); on a CPU a
    smaller budget is much faster on schemas of hundreds of tables (BENCHMARKS.md).

    >>> [s.budget for s in build_pipeline("pruned", schema_budget=2048).stages if hasattr(s, "budget")]
    [2048, 2048]

    ``vote_below`` moves the confidence below which ``default``'s and ``best``'s vote is spent (0.6 and 0.9):
    higher votes on more answers, at more model calls (BENCHMARKS.md, EX against calls).

    >>> build_pipeline("best", vote_below=0.95).stage("vote_if_unsure").only_below
    0.95

    ``vote`` sets options of every vote stage (:class:`~sqlweave.stages.vote.SelfConsistency`: ``n``,
    ``temperature``, ``seed``, ``support``, ...), for measuring a preset's vote with other settings:

    >>> build_pipeline("best", vote={"temperature": 1.0, "n": 8}).stage("vote_if_unsure").temperature
    1.0
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], OPTIONS, n=1)
        raise ConfigurationError(f"unknown pipeline option {unknown[0]!r}",
                                 hint=(f"Did you mean {close[0]!r}? " if close else "")
                                 + f"Pipelines take: {', '.join(OPTIONS)}.")
    pipe = with_schema_budget(_build(name, name, options), schema_budget)
    if vote_below is not None:
        pipe = _with_votes(pipe, "has no vote spent below a confidence",
                           "vote_below applies to default, best and presets with +vote-if-unsure.", floored=True,
                           only_below=vote_below)
    if vote:
        pipe = _with_vote_options(pipe, vote)
    # an answer below the confidence asked for is sampled again, to show the question's leading readings
    return replace(pipe, when_unsure=SecondReadings())


#: The options of a vote stage that ``build_pipeline(vote=...)`` may set: numbers, the way a vote is settled and the
#: prompt templates of its views (a stage's name and schema views are part of the preset, not a setting of its vote).
VOTE_OPTIONS = ("n", "temperature", "max_tokens", "seed", "margin", "support", "select", "more", "more_below",
                "view_samples", "examples_prompt", "prompt_views")


def _with_vote_options(pipe: Pipeline, vote: Mapping[str, object]) -> Pipeline:
    unknown = sorted(set(vote) - set(VOTE_OPTIONS))
    if unknown:
        raise ConfigurationError(f"unknown vote option {unknown[0]!r}", hint=f"Vote options: {', '.join(VOTE_OPTIONS)}.")
    kinds = {f.name: str(f.type).split(" |")[0] for f in fields(SelfConsistency)}
    accepts: dict[str, tuple[type | tuple[type, ...], str]] = {
        "int": (int, "a whole number"), "float": ((int, float), "a number"), "str": (str, "a word"),
        "tuple[str, ...]": ((list, tuple), "a list of words"), "bool": (bool, "true or false")}
    for key, value in vote.items():  # the stage checks ranges; a value of the wrong kind is caught here
        wanted, said = accepts[kinds[key]]
        if (isinstance(value, bool) is not (wanted is bool) or not isinstance(value, wanted)
                or isinstance(value, (list, tuple)) and not all(isinstance(v, str) for v in value)):
            raise ConfigurationError(f"vote option {key} takes {said}, not {value!r}",
                                     hint="For example temperature=1.0, n=8 or select=majority.")
    settings: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in vote.items()}
    return _with_votes(pipe, "has no vote stage to set options of",
                       "Vote options apply to default, best and presets with a vote stage.", **settings)


def _with_votes(pipe: Pipeline, lacking: str, hint: str, floored: bool = False, **changes: Any) -> Pipeline:
    """``pipe`` with ``changes`` made to every vote stage (with ``floored``, every vote spent below a confidence);
    a pipeline without one is refused: "pipeline NAME ``lacking``", with ``hint``."""
    votes = [i for i, s in enumerate(pipe.stages)
             if isinstance(s, SelfConsistency) and (not floored or s.only_below is not None)]
    if not votes:
        raise ConfigurationError(f"pipeline {pipe.name!r} {lacking}", hint=hint)
    stages = list(pipe.stages)
    for i in votes:
        stages[i] = replace(stages[i], **changes)  # type: ignore[type-var]
    return replace(pipe, stages=tuple(stages))


def with_schema_budget(pipe: Pipeline, schema_budget: int | None) -> Pipeline:
    """``pipe`` with every stage that shows the schema capped at ``schema_budget`` tokens (``pipe`` itself for
    None). The HTTP and MCP doors apply a catalog database's ``schema_budget`` this way
    (:meth:`sqlweave.catalog.Catalog.pipeline_for`).

    >>> [s.budget for s in with_schema_budget(build_pipeline("default"), 1024).stages if hasattr(s, "budget")]
    [1024]
    """
    if schema_budget is None:
        return pipe
    check_schema_budget(schema_budget)
    for stage in pipe.stages:
        if hasattr(stage, "budget"):  # every stage is a dataclass; those that show the schema have a budget
            pipe = pipe.replace_stage(stage.name, replace(stage, budget=schema_budget))  # type: ignore[type-var]
    return pipe


def check_schema_budget(value: object, where: str = "") -> None:
    """Raise :class:`~sqlweave.errors.ConfigurationError` unless ``value`` is a whole number of tokens >= 1
    (``where`` names the setting's owner in the message, e.g. ``"database 'shop': "``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{where}schema_budget must be a number of tokens >= 1, not {value!r}",
                                 hint="For example 2048; leave it out to use what the model's context leaves.")


def _build(spelled: str, name: str, options: dict[str, object]) -> Pipeline:
    base, *addons = spelled.split("+")
    try:
        recipe = PRESETS[base]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(base, list(PRESETS), n=1)
        shipped = ", ".join(MEASURED)  # the presets measured and described; the others are research variants
        raise ConfigurationError(
            f"unknown pipeline {base!r}",
            hint=(f"Did you mean {close[0]!r}? " if close else "") + f"The shipped presets are {shipped}; "
                 "`sqlweave presets` lists every preset and what it is made of. A preset may be followed by "
                 "+STAGE, e.g. default+values.") from None
    pipe = _build(recipe, base, options) if isinstance(recipe, str) else recipe(base, **options)
    for addon in addons:
        pipe = find_addon(addon, ADDONS, spelled).apply(pipe, options)
    return replace(pipe, name=name)
