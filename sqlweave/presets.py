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
from typing import Any, Callable, Mapping

from .agent.loop import AgentLoop
from .errors import ConfigurationError
from .pipeline import Pipeline, Stage
from .stages import CheckQuestion, ExecuteSQL, ExtractSQL, GenerateSQL, RenderSchema
from .stages.approximate import ApproximateQuery
from .stages.correct import ErrorCorrection
from .stages.prune_schema import PruneSchema
from .stages.repair import SchemaRepair
from .stages.select_values import SelectValues
from .stages.simplify import SimplifyQuestion
from .stages.dac import DecomposedCorrection
from .stages.ensemble import PromptEnsemble
from .stages.generate_evidence import GenerateEvidence
from .stages.interpret_time import InterpretTime
from .stages.link_schema import LinkSchema
from .stages.name_keys import NameKeys
from .stages.readings import SecondReadings
from .stages.revise import RevisionChain
from .stages.rewrite import RewriteQuery
from .stages.select_examples import SelectExamples, default_pool_path
from .stages.vote import SelfConsistency


# --- base pipelines: the few that are not a preset plus stages ---------------------------------------------------


def zero_shot(name: str = "zero-shot", *, style: str = "create_table", **_: object) -> Pipeline:
    """Schema as CREATE TABLE statements (or another ``style``) with sample rows, then the question; one model call."""
    return Pipeline(name, (CheckQuestion(), RenderSchema(style=style), GenerateSQL(), ExtractSQL(), ExecuteSQL()))


def few_shot(name: str = "rag", *, examples: str | None = None, method: str = "bm25", k: int = 4,
             organisation: str = "pairs", approximate: bool = False, **_: object) -> Pipeline:
    """Zero-shot plus ``k`` examples retrieved from the pool at ``examples`` (a Spider-format train.json).

    ``approximate`` first writes a zero-shot query (ASTReS's approximated query), which ``ast_rerank``
    ranks the examples against."""
    first: tuple[Stage, ...] = (CheckQuestion(), ApproximateQuery()) if approximate else (CheckQuestion(),)
    return Pipeline(name, first + (
        RenderSchema(),
        SelectExamples(pool=examples or str(default_pool_path()), method=method, k=k, organisation=organisation),
        GenerateSQL(prompt="few_shot"), ExtractSQL(), ExecuteSQL(),
    ))


def pruned(name: str = "pruned", *, examples: str | None = None, few_shot: bool = False,
           method: str = "hybrid", **_: object) -> Pipeline:
    """Approximated query -> schema pruning (``method``) -> generation on the pruned schema, zero-shot or, with
    ``few_shot``, with 4 BM25-chosen examples."""
    stages: tuple[Stage, ...] = (CheckQuestion(), ApproximateQuery(), PruneSchema(method=method), RenderSchema())
    if few_shot:
        stages += (SelectExamples(pool=examples or str(default_pool_path())),)
    stages += (GenerateSQL(prompt="few_shot" if few_shot else "zero_shot"), ExtractSQL(), ExecuteSQL())
    return Pipeline(name, stages)


def agent(name: str = "agent", *, show_schema: bool = True, **_: object) -> Pipeline:
    """Agent mode (paper 002): the model calls tools instead of answering one prompt."""
    return Pipeline(name, (CheckQuestion(), AgentLoop(show_schema=show_schema)))


def correct_all(name: str = "correct-all", **_: object) -> Pipeline:
    """Every correction method, with the safety check: answers that run, return rows and on which the sampled
    candidates agree (>= 60%) are left alone by the model-judged stages."""
    return with_stages(zero_shot(), name, SelfConsistency(), SchemaRepair(), ErrorCorrection(),
                       DecomposedCorrection(skip_if_confident=0.6), RevisionChain(skip_if_confident=0.6))


def ensemble(name: str = "ensemble", *, examples: str | None = None, **_: object) -> Pipeline:
    """The default's answer (repaired), a pruned-schema answer and a few-shot answer vote by execution result,
    then correction of what still fails."""
    variants = tuple(build_pipeline(v, examples=str(examples or default_pool_path())) for v in ENSEMBLE_VARIANTS)
    return with_stages(zero_shot(), name, SchemaRepair(), PromptEnsemble(variants), ErrorCorrection(fix_empty=False))


def vote_below(name: str = "best", *, floor: float = 0.9, **_: object) -> Pipeline:
    """``default`` voting on every answer whose calibrated confidence is below ``floor`` (``default``: 0.6)."""
    vote = ADDONS["vote-if-unsure"]
    assert isinstance(vote, SelfConsistency)
    return renamed(build_pipeline(DEFAULT).replace_stage(vote.name, replace(vote, only_below=floor)), name)


def with_stages(base: Pipeline, name: str, *extra: Stage) -> Pipeline:
    """``base`` with ``extra`` stages appended (correction stages run after execution)."""
    return Pipeline(name, base.stages + tuple(extra))


def renamed(pipe: Pipeline, name: str) -> Pipeline:
    return replace(pipe, name=name)


@dataclass(frozen=True)
class Recipe:
    """A base pipeline: ``build(name, **fixed, **options)``."""

    build: Callable[..., Pipeline]
    fixed: Mapping[str, object] = field(default_factory=dict)

    def __call__(self, name: str, **options: object) -> Pipeline:
        return self.build(name, **{**options, **self.fixed})


#: The preset used when none is named.
DEFAULT = "default"

#: ``default`` votes on answers whose calibrated confidence is below this (BENCHMARKS.md: EX against calls).
VOTE_BELOW = 0.6

#: How much a result group's size counts against the question's likelihood when a vote is settled (chosen on the
#: 200-question sample among 0, 1, 2, 4, 8, 16; BENCHMARKS.md: weighing the groups).
VOTE_SUPPORT = 2.0

#: The pipelines whose answers vote with the default's in the ``ensemble`` preset.
ENSEMBLE_VARIANTS = ("pruned+repair", "rag-simplify+repair")

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
    "zero-shot": Recipe(zero_shot),
    "zero-shot-compact": Recipe(zero_shot, {"style": "compact"}),
    # XiYan-SQL's M-Schema: one line per column, with its type, key and example values.
    "zero-shot-mschema": Recipe(zero_shot, {"style": "mschema"}),
    "rag": Recipe(few_shot),
    "rag-qskeleton": Recipe(few_shot, {"method": "question_skeleton"}),
    "rag-skeleton-org": Recipe(few_shot, {"organisation": "skeleton"}),
    "rag-desem": Recipe(few_shot, {"method": "question_skeleton", "organisation": "masked"}),
    # ASTReS: examples re-ranked by AST similarity to a zero-shot approximated query.
    "rag-ast": Recipe(few_shot, {"method": "ast_rerank", "approximate": True}),
    # RB-SQL: examples whose SQL skeleton is closest to the approximated query's.
    "rag-sql-skeleton": Recipe(few_shot, {"method": "sql_skeleton", "approximate": True}),
    # Guo et al.: dense retrieval over question skeletons; rag-simplify also simplifies the question by model.
    "rag-dense-skeleton": Recipe(few_shot, {"method": "dense_skeleton"}),
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
    "correct-all": Recipe(correct_all),
    "rag-correct": "rag+correct",
    "pruned": Recipe(pruned),
    "pruned-rag": Recipe(pruned, {"few_shot": True}),
    # ASTReS: values the question names are found first and their columns survive the pruning.
    "pruned-values": "pruned+values",
    "pruned-dense": Recipe(pruned, {"method": "hybrid-dense"}),
    "pruned-correct": "pruned+correct",
    # Agent mode (paper 002). "agent" also shows the compact schema (helps small models); "agent-tools-only" is
    # the paper's setting, where the model sees only what the tools return.
    "agent": Recipe(agent),
    "agent-tools-only": Recipe(agent, {"show_schema": False}),
    "ensemble": Recipe(ensemble),
    # default voting on more of its answers, below confidence 0.9 (78.4% on all 972 Spider dev questions against
    # 77.0% for default, at a median of 11.49 s; BENCHMARKS.md). It was "best" until +examples was measured.
    "vote-more": Recipe(vote_below, {"floor": 0.9}),
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
            made_of = f"{recipe.build.__name__}({fixed})"
        measured = MEASURED.get(name)
        rows.append({"name": name, "made_of": made_of,
                     "spider_dev_ex": measured.ex if measured else None,
                     "calls_per_question": measured.calls if measured else None,
                     "median_seconds": measured.median_s if measured else None,
                     "measured": measured.date if measured else None})
    return rows


#: Options :func:`build_pipeline` accepts (a preset that does not use one ignores it).
OPTIONS = ("examples", "k", "organisation")


def _add_values(pipe: Pipeline, **_: object) -> Pipeline:
    """Value selection before pruning (whose columns it then keeps) and before generation."""
    if any(s.name == "prune_schema" for s in pipe.stages):
        return pipe.insert_before("prune_schema", SelectValues())
    return pipe.insert_after("check_question", SelectValues())


def _add_evidence(pipe: Pipeline, **_: object) -> Pipeline:
    """Generated evidence (RB-SQL) just before generation, on the schema the prompt shows."""
    if not any(s.name == "generate" for s in pipe.stages):
        raise ConfigurationError(f"pipeline {pipe.name!r} has no generate stage to write evidence for",
                                 hint="Add +evidence to a preset that generates SQL from a prompt (default, rag, ...).")
    return pipe.insert_before("generate", GenerateEvidence())


def _add_links(pipe: Pipeline, **_: object) -> Pipeline:
    """Schema links by meaning, on the schema the prompt shows, just before generation."""
    if not any(s.name == "render_schema" for s in pipe.stages):
        raise ConfigurationError(f"pipeline {pipe.name!r} has no render_schema stage whose schema words could link to",
                                 hint="Add +link to a preset that shows the schema in a prompt (default, rag, ...).")
    return pipe.insert_after("render_schema", LinkSchema())


def _with_generation(pipe: Pipeline, lacking: str, hint: str, asks: str | None = None, **changes: Any) -> Pipeline:
    """``pipe`` with ``changes`` made to its generate stage (with ``asks``: one that asks with that template); a
    pipeline without one is refused: "pipeline NAME ``lacking``", with ``hint``."""
    generate = next((s for s in pipe.stages if s.name == "generate"), None)
    if not isinstance(generate, GenerateSQL) or (asks is not None and generate.prompt != asks):
        raise ConfigurationError(f"pipeline {pipe.name!r} {lacking}", hint=hint)
    return pipe.replace_stage("generate", replace(generate, **changes))


def _add_grammar(pipe: Pipeline, **_: object) -> Pipeline:
    """Generation held to the schema's query grammar (llama.cpp GBNF, in the spirit of PICARD)."""
    return _with_generation(pipe, "has no generate stage to constrain",
                            "Add +grammar to a preset that generates SQL from a prompt (default, rag, ...).", grammar=True)


def _with_votes(pipe: Pipeline, lacking: str, hint: str, floored: bool = False, **changes: Any) -> Pipeline:
    """``pipe`` with ``changes`` made to every vote stage (with ``floored``, every vote spent below a confidence);
    a pipeline without one is refused: "pipeline NAME ``lacking``", with ``hint``."""
    votes = [s for s in pipe.stages if isinstance(s, SelfConsistency) and (not floored or s.only_below is not None)]
    if not votes:
        raise ConfigurationError(f"pipeline {pipe.name!r} {lacking}", hint=hint)
    for vote in votes:
        pipe = pipe.replace_stage(vote.name, replace(vote, **changes))
    return pipe


def _selecting(how: str, addon: str) -> Callable[..., Pipeline]:
    """Close votes settled by the model (``how``: a :data:`~sqlweave.stages.vote.SELECTIONS` name) instead of
    by group size."""

    def add(pipe: Pipeline, **_: object) -> Pipeline:
        return _with_votes(pipe, "has no vote stage whose choice the model could make",
                           f"Add +{addon} to a preset that votes (default, best, vote, ...).", select=how)

    return add


#: The candidates ``+diverse`` adds to a vote: the question asked again with the schema shown in these styles,
#: greedily and sampled this many times (the smallest set that reached the most answers by majority on the
#: 200-question sample; BENCHMARKS.md, candidates diverse by design).
DIVERSE_VIEWS = ("compact", "mschema")
DIVERSE_SAMPLES = 2


def _diversify(pipe: Pipeline, **_: object) -> Pipeline:
    """Votes that also hear the question asked with the schema shown other ways (candidates diverse by design)."""
    return _with_votes(pipe, "has no vote stage to add candidates to",
                       "Add +diverse to a preset that votes (default, best, vote, ...).",
                       views=DIVERSE_VIEWS, view_samples=DIVERSE_SAMPLES)


#: The view ``+examples`` adds to a vote: this many few-shot pairs chosen by the answer's SQL skeleton (RB-SQL's
#: k), asked greedily and sampled this many times.
EXAMPLES_K = 4
EXAMPLES_SAMPLES = 2


def _examples_view(pipe: Pipeline, examples: str | None = None, **_: object) -> Pipeline:
    """Votes that also hear the question asked with few-shot examples like the answer (from ``examples``, a
    Spider-format train.json; default: the settings' pool, else the bundled one)."""
    return _with_votes(pipe, "has no vote stage to add candidates to",
                       "Add +examples to a preset that votes (default, best, vote, ...).",
                       examples=EXAMPLES_K, examples_pool=str(examples or default_pool_path()),
                       view_samples=EXAMPLES_SAMPLES)


#: The view ``+link-first`` adds to a vote: the question asked once more, greedily, with the tables it needs named
#: before the query (BENCHMARKS.md, a view that names its tables first).
LINK_FIRST_VIEWS = ("zero_shot_link_first",)


def _link_first_view(pipe: Pipeline, **_: object) -> Pipeline:
    """Votes that also hear the question answered with its tables named first (schema linking before SQL)."""
    return _with_votes(pipe, "has no vote stage to add candidates to",
                       "Add +link-first to a preset that votes (default, best, vote, ...).",
                       prompt_views=LINK_FIRST_VIEWS)


#: ``+more-if-split``: a vote whose largest result group holds fewer than this many of its 5 candidates (no 4 of 5
#: agree) draws this many more samples and votes again (adaptive consistency).
SPLIT_BELOW = 4
SPLIT_SAMPLES = 4


def _more_if_split(pipe: Pipeline, **_: object) -> Pipeline:
    """Votes that draw more samples when split (adaptive consistency)."""
    return _with_votes(pipe, "has no vote stage to draw more samples for",
                       "Add +more-if-split to a preset that votes (default, best, vote, ...).",
                       more=SPLIT_SAMPLES, more_below=SPLIT_BELOW)


def _conventions(pipe: Pipeline, **_: object) -> Pipeline:
    """Generation (and the votes that sample its prompt) asked with SQL conventions among the instructions."""
    return _with_generation(pipe, "has no zero-shot generate stage to instruct",
                            "Add +conventions to a zero-shot preset (default, best, zero-shot, ...).",
                            asks="zero_shot", prompt="zero_shot_conventions")


def _add_time(pipe: Pipeline, **_: object) -> Pipeline:
    """The question's time expressions stated exactly, as evidence, just before the first stage that asks the
    model for SQL (generation, or an approximated query) and after generated evidence (write ``+evidence+time``);
    right after the question's check in a pipeline with neither (the agent)."""
    names = [s.name for s in pipe.stages]
    if "generate_evidence" in names:  # after it: generated evidence is not asked for when a question has some
        return pipe.insert_after("generate_evidence", InterpretTime())
    for name in ("approximate", "generate"):
        if name in names:
            return pipe.insert_before(name, InterpretTime())
    return pipe.insert_after("check_question", InterpretTime())


def _add_simplify(pipe: Pipeline, **_: object) -> Pipeline:
    """The question simplified by the model (Guo et al.) right after it is checked."""
    return pipe.insert_after("check_question", SimplifyQuestion())


#: What ``+NAME`` adds to a preset (``"rag-ast+repair+correct"``): a stage appended after what is already there
#: (correction stages), or a rule that places one (value selection, evidence and simplification go before
#: generation). A rule is called with the pipeline and :func:`build_pipeline`'s options, and, like a recipe,
#: ignores the options it does not use.
ADDONS: dict[str, "Stage | Callable[..., Pipeline]"] = {
    "repair": SchemaRepair(),
    "correct": ErrorCorrection(),
    "correct-failed": ErrorCorrection(fix_empty=False),
    "revise": RevisionChain(),
    "rewrite": RewriteQuery(),
    "dac": DecomposedCorrection(),
    "vote": SelfConsistency(),
    # Voting spent only where the calibrated confidence is low, after the answer is final (rewrite included).
    # Every result group is weighed by reviewer reranking plus its size (log p(question | query) + 2 ln(size);
    # BENCHMARKS.md: weighing the groups).
    "vote-if-unsure": SelfConsistency(n=4, only_below=VOTE_BELOW, rewrite=True, select="review", margin=None,
                                      support=VOTE_SUPPORT, name="vote_if_unsure"),
    # After any vote: a key shown where the question asks for no ids is followed by the name of its row.
    "name-keys": NameKeys(),
    "values": _add_values,
    "evidence": _add_evidence,
    "link": _add_links,
    "simplify": _add_simplify,
    # Time stated exactly: "last month", "Q3 2023", "on weekends" resolved on the database's date, as evidence.
    "time": _add_time,
    "grammar": _add_grammar,
    # Conventions in the instructions: join only the tables needed; superlatives as ORDER BY ... LIMIT.
    "conventions": _conventions,
    # CHASE-SQL's pairwise selector, and reviewer reranking (the question's likelihood given each query).
    "select": _selecting("pairwise", "select"),
    "review": _selecting("review", "review"),
    # Candidates diverse by design: the question asked again with the schema as compact lines and as M-Schema.
    "diverse": _diversify,
    # Adaptive consistency: a split vote draws 4 more samples.
    "more-if-split": _more_if_split,
    # A few-shot view in the vote: examples whose SQL skeleton is like the answer's (from the example pool).
    "examples": _examples_view,
    # One more view in the vote: the question answered with the tables it needs named before the query.
    "link-first": _link_first_view,
}


def _extend(pipe: Pipeline, addon: str, spelled: str, options: Mapping[str, object]) -> Pipeline:
    try:
        rule = ADDONS[addon]
    except KeyError:
        raise ConfigurationError(f"unknown stage {addon!r} in pipeline {spelled!r}",
                                 hint=f"Stages a preset can be extended with: {', '.join(ADDONS)}.") from None
    if isinstance(rule, Stage):
        return with_stages(pipe, pipe.name, rule)
    return rule(pipe, **options)


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
                "view_samples", "question_examples", "review_examples", "review_examples_by", "examples_prompt",
                "examples_by", "prompt_views", "finish", "fenced")


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
                                     hint="For example temperature=1.0, n=8, select=majority or fenced=true.")
    settings: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in vote.items()}
    return _with_votes(pipe, "has no vote stage to set options of",
                       "Vote options apply to default, best and presets with a vote stage.", **settings)


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
        pipe = _extend(pipe, addon, spelled, options)
    return renamed(pipe, name)
