"""Stage: a multi-prompt ensemble. Differently built prompts each write a candidate; candidates vote by result.

Schema pruning and few-shot examples each fix some questions and break others for a small model
(BENCHMARKS.md): on the 200-question Spider dev sample the full-schema, pruned-schema and
few-shot answers are right on different questions. Instead of betting on one prompt, this stage
runs other pipelines on the same question (the ``ensemble`` preset gives it ``pruned+repair`` and
``rag-simplify+repair``),
groups every candidate, the pipeline's current answer first, by its execution result, and adopts a
result that at least ``min_votes`` candidates agree on. Without such agreement the current answer
stays, unless it fails or returns nothing and a candidate runs and returns rows. The share of
candidates behind the answer is ``answer.agreement``.

The presets' model calls are recorded in this stage's trace entry (so tokens and calls are counted),
and their own traces are summarised in its notes. Presets that start from an approximated query
(``pruned``) reuse the pipeline's first answer as it, instead of asking the model again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..pipeline import Pipeline, State
from .base import check_options
from .candidate import Attempt, adopt, current_attempt, result_groups


@dataclass(frozen=True)
class _GivenApproximation:
    """Stands in for ``approximate`` in a sub-pipeline: the outer pipeline's first answer is the approximation."""

    sql: str | None
    name: str = "approximate"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    provides: ClassVar[tuple[str, ...]] = ("approx_sql",)

    def __call__(self, state: State) -> None:
        state.approx_sql = self.sql
        state.note(approx_sql=self.sql, given=True)


@dataclass(frozen=True)
class PromptEnsemble:
    """Run ``pipelines`` on the question and vote over all candidates (the current answer's first) by result.

    >>> from sqlweave.presets import build_pipeline
    >>> PromptEnsemble((build_pipeline("zero-shot-compact"),)).variants
    ('zero-shot-compact',)
    """

    pipelines: tuple[Pipeline, ...] = ()
    min_votes: int = 2
    name: str = "ensemble"
    recovers: bool = True
    requires: ClassVar[tuple[str, ...]] = ("result",)
    provides: ClassVar[tuple[str, ...]] = ("sql", "result", "error", "candidates", "agreement")

    def __post_init__(self) -> None:
        check_options(self, at_least={"min_votes": 1})

    @property
    def variants(self) -> tuple[str, ...]:
        """The names of the pipelines that vote with the current answer."""
        return tuple(p.name for p in self.pipelines)

    def __call__(self, state: State) -> None:
        current = current_attempt(state)
        if current.kind == "refused":
            state.note(skipped=True)
            return
        first = state.candidates[0] if state.candidates else state.sql
        candidates: list[Attempt] = [current]
        runs: list[dict[str, Any]] = []
        for pipe in self.pipelines:
            if any(s.name == "approximate" for s in pipe.stages):
                pipe = pipe.replace_stage("approximate", _GivenApproximation(first))
            answer = pipe.run(state.question, state.db, state.llm, schema=state.schema)
            state.record_calls(call for entry in answer.trace for call in entry.calls)
            cand = Attempt(answer.sql, answer.result, answer.error)
            candidates.append(cand)
            runs.append({"variant": pipe.name, "sql": answer.sql, "outcome": cand.kind})
        groups = result_groups(candidates)
        if groups and len(groups[0]) >= self.min_votes:
            chosen = groups[0][0]
        elif current.kind != "ok" and groups:
            chosen = min(g[0] for g in groups)  # the first candidate that runs and returns rows
        else:
            chosen = 0
        if chosen:
            adopt(state, candidates[chosen])
        backing = next((g for g in groups if chosen in g), [])
        state.agreement = len(backing) / len(candidates)
        state.note(candidates=runs, groups=[len(g) for g in groups],
                   chosen="current" if chosen == 0 else self.variants[chosen - 1],
                   agreement=round(state.agreement, 3))
