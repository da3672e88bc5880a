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

from dataclasses import replace
from typing import Callable

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
from .stages.revise import RevisionChain
from .stages.select_examples import SelectExamples, default_pool_path
from .stages.vote import SelfConsistency


def zero_shot(style: str = "create_table", **_: object) -> Pipeline:
    """Schema as CREATE TABLE statements with sample rows, then the question; one model call."""
    return Pipeline(
        "zero-shot" if style == "create_table" else f"zero-shot-{style.replace('_', '-')}",
        (CheckQuestion(), RenderSchema(style=style), GenerateSQL(), ExtractSQL(), ExecuteSQL()),
    )


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


def pruned(name: str, *, examples: str | None = None, few_shot: bool = False, correct: bool = False,
           **_: object) -> Pipeline:
    """Approximated query -> hybrid schema pruning -> generation on the pruned schema, zero-shot or, with
    ``few_shot``, with 4 BM25-chosen examples (-> error correction with full-schema fallback)."""
    stages: tuple[Stage, ...] = (CheckQuestion(), ApproximateQuery(), PruneSchema(), RenderSchema())
    if few_shot:
        stages += (SelectExamples(pool=examples or str(default_pool_path())),)
    stages += (GenerateSQL(prompt="few_shot" if few_shot else "zero_shot"), ExtractSQL(), ExecuteSQL())
    if correct:
        stages += (ErrorCorrection(),)
    return Pipeline(name, stages)


def with_stages(base: Pipeline, name: str, *extra: Stage) -> Pipeline:
    """``base`` with ``extra`` stages appended (correction stages run after execution)."""
    return Pipeline(name, base.stages + tuple(extra))


def default(**_: object) -> Pipeline:
    """What ``connect``, ``ask`` and ``demo`` use: the best measured pipeline for its cost (see BENCHMARKS.md).

    Zero-shot generation, then the rule-based name repair (no model call), then model correction for
    answers that still fail to run (empty results are left alone: on Spider, re-prompting them changed no
    answer for 0.26 extra calls per question).
    """
    return with_stages(zero_shot(), "default", SchemaRepair(), ErrorCorrection(fix_empty=False))


def renamed(pipe: Pipeline, name: str) -> Pipeline:
    return replace(pipe, name=name)


#: The preset used when none is named.
DEFAULT = "default"

#: The pipelines whose answers vote with the default's in the ``ensemble`` preset.
ENSEMBLE_VARIANTS = ("pruned+repair", "rag-simplify+repair")

PRESETS: dict[str, Callable[..., Pipeline]] = {
    "default": default,
    "zero-shot": zero_shot,
    "zero-shot-compact": lambda **o: zero_shot("compact"),
    "rag": lambda **o: few_shot("rag", **o),
    "rag-qskeleton": lambda **o: few_shot("rag-qskeleton", method="question_skeleton", **o),
    "rag-skeleton-org": lambda **o: few_shot("rag-skeleton-org", organisation="skeleton", **o),
    "rag-desem": lambda **o: few_shot("rag-desem", method="question_skeleton", organisation="masked", **o),
    # ASTReS: examples re-ranked by AST similarity to a zero-shot approximated query.
    "rag-ast": lambda **o: few_shot("rag-ast", method="ast_rerank", approximate=True, **o),
    # RB-SQL: examples whose SQL skeleton is closest to the approximated query's.
    "rag-sql-skeleton": lambda **o: few_shot("rag-sql-skeleton", method="sql_skeleton", approximate=True, **o),
    # Guo et al.: dense retrieval over question skeletons.
    "rag-dense-skeleton": lambda **o: few_shot("rag-dense-skeleton", method="dense_skeleton", **o),
    "repair": lambda **o: with_stages(zero_shot(), "repair", SchemaRepair()),
    # ASTReS value selection: stored values that match the question, shown before it.
    "values": lambda **o: renamed(zero_shot().insert_after("check_question", SelectValues()), "values"),
    # Self-consistency before repair: 5 sampled candidates (names repaired by rule) vote on the result.
    "default-vote": lambda **o: with_stages(zero_shot(), "default-vote", SelfConsistency(), SchemaRepair(),
                                            ErrorCorrection(fix_empty=False)),
    "default-values": lambda **o: renamed(default().insert_after("check_question", SelectValues()), "default-values"),
    "correct": lambda **o: with_stages(zero_shot(), "correct", ErrorCorrection()),
    "repair-correct": lambda **o: with_stages(zero_shot(), "repair-correct", SchemaRepair(), ErrorCorrection()),
    "revise": lambda **o: with_stages(zero_shot(), "revise", RevisionChain()),
    "vote": lambda **o: with_stages(zero_shot(), "vote", SelfConsistency()),
    "vote-correct": lambda **o: with_stages(zero_shot(), "vote-correct", SelfConsistency(), ErrorCorrection()),
    "dac": lambda **o: with_stages(zero_shot(), "dac", DecomposedCorrection()),
    # Every correction method, with the safety check: answers that run, return rows and on which
    # the sampled candidates agree (>= 60%) are left alone by the model-judged stages.
    "correct-all": lambda **o: with_stages(
        zero_shot(), "correct-all", SelfConsistency(), SchemaRepair(), ErrorCorrection(),
        DecomposedCorrection(skip_if_confident=0.6), RevisionChain(skip_if_confident=0.6),
    ),
    "rag-correct": lambda **o: with_stages(few_shot("rag-correct", **o), "rag-correct", ErrorCorrection()),
    "pruned": lambda **o: pruned("pruned", **o),
    "pruned-rag": lambda **o: pruned("pruned-rag", few_shot=True, **o),
    # ASTReS: values the question names are found first and their columns survive the pruning.
    "pruned-values": lambda **o: renamed(pruned("pruned-values", **o).insert_before("prune_schema", SelectValues()),
                                         "pruned-values"),
    "pruned-dense": lambda **o: renamed(pruned("pruned-dense", **o).replace_stage(
        "prune_schema", PruneSchema(method="hybrid-dense")), "pruned-dense"),
    # Guo et al.: the question simplified by the model, examples retrieved by both wordings' skeletons.
    "rag-simplify": lambda **o: renamed(few_shot("rag-simplify", method="dense_skeleton", **o).insert_after(
        "check_question", SimplifyQuestion()), "rag-simplify"),
    # Agent mode (paper 002): tools instead of one prompt. "agent" also shows the compact schema (helps small
    # models); "agent-tools-only" is the paper's setting, where the model sees only what the tools return.
    "agent": lambda **o: Pipeline("agent", (CheckQuestion(), AgentLoop())),
    "agent-tools-only": lambda **o: Pipeline("agent-tools-only", (CheckQuestion(), AgentLoop(show_schema=False))),
    "pruned-correct": lambda **o: pruned("pruned-correct", correct=True, **o),
    # The default's answer, a pruned-schema answer and a few-shot answer vote by execution result.
    "ensemble": lambda **o: with_stages(zero_shot(), "ensemble", SchemaRepair(), PromptEnsemble(tuple(
        build_pipeline(variant, examples=str(o.get("examples") or default_pool_path()))
        for variant in ENSEMBLE_VARIANTS)), ErrorCorrection(fix_empty=False)),
}

#: Options :func:`build_pipeline` accepts (a preset that does not use one ignores it).
OPTIONS = ("examples", "k", "organisation")


def _add_values(pipe: Pipeline) -> Pipeline:
    """Value selection before pruning (whose columns it then keeps) and before generation."""
    if any(s.name == "prune_schema" for s in pipe.stages):
        return pipe.insert_before("prune_schema", SelectValues())
    return pipe.insert_after("check_question", SelectValues())


def _add_evidence(pipe: Pipeline) -> Pipeline:
    """Generated evidence (RB-SQL) just before generation, on the schema the prompt shows."""
    if not any(s.name == "generate" for s in pipe.stages):
        raise ConfigurationError(f"pipeline {pipe.name!r} has no generate stage to write evidence for",
                                 hint="Add +evidence to a preset that generates SQL from a prompt (default, rag, ...).")
    return pipe.insert_before("generate", GenerateEvidence())


#: Stages that ``+NAME`` adds to a preset (``"rag-ast+repair+correct"``). Correction stages go after
#: what is already there; ``values`` and ``evidence`` go before generation.
ADDONS: dict[str, Callable[[Pipeline], Pipeline]] = {
    "repair": lambda p: with_stages(p, p.name, SchemaRepair()),
    "correct": lambda p: with_stages(p, p.name, ErrorCorrection()),
    "correct-failed": lambda p: with_stages(p, p.name, ErrorCorrection(fix_empty=False)),
    "revise": lambda p: with_stages(p, p.name, RevisionChain()),
    "dac": lambda p: with_stages(p, p.name, DecomposedCorrection()),
    "vote": lambda p: with_stages(p, p.name, SelfConsistency()),
    "values": _add_values,
    "evidence": _add_evidence,
}


def build_pipeline(name: str = DEFAULT, **options: object) -> Pipeline:
    """The pipeline preset called ``name``; ``options`` (e.g. ``examples=PATH``) go to presets that use them.

    ``name`` may add stages to a preset: ``"repair+dac"`` is the ``repair`` preset followed by
    decomposed correction (see :data:`ADDONS`).
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], OPTIONS, n=1)
        raise ConfigurationError(f"unknown pipeline option {unknown[0]!r}",
                                 hint=(f"Did you mean {close[0]!r}? " if close else "")
                                 + f"Pipelines take: {', '.join(OPTIONS)}.")
    base, *addons = name.split("+")
    try:
        factory = PRESETS[base]
    except KeyError:
        raise ConfigurationError(f"unknown pipeline {base!r}", hint=f"Use one of: {', '.join(sorted(PRESETS))}, "
                                 f"optionally followed by +STAGE ({', '.join(ADDONS)}).") from None
    pipe = factory(**options)
    for addon in addons:
        try:
            pipe = ADDONS[addon](pipe)
        except KeyError:
            raise ConfigurationError(f"unknown stage {addon!r} in pipeline {name!r}",
                                     hint=f"Stages a preset can be extended with: {', '.join(ADDONS)}.") from None
    return renamed(pipe, name) if addons else pipe
