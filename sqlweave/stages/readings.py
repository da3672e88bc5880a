"""Stage: the leading readings of a question sqlweave is not sure of.

:meth:`Pipeline.run <sqlweave.pipeline.Pipeline.run>` runs it after the other stages when an answer's confidence
is below the ``min_confidence`` asked for. It samples the generation prompt ``n`` more times, runs each sample
(names repaired by rule, as voting does), groups the answers by result, and keeps the answer's own reading and the
largest other one, each with the share of answers behind it. The pipeline's answer itself is not changed: the user
sees both readings and chooses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import SqlweaveError
from ..pipeline import Reading, State
from .base import BaseStage, check_options
from .candidate import Attempt, attempt, current_attempt, result_groups
from .repair import repair_attempt


@dataclass(frozen=True)
class SecondReadings(BaseStage):
    """Sample ``n`` more answers at ``temperature`` and keep the ``keep`` leading readings (the answer's first)."""

    n: int = 4
    temperature: float = 0.8
    max_tokens: int = 200
    seed: int = 7
    keep: int = 2
    name: str = "readings"
    requires: ClassVar[tuple[str, ...]] = ("result",)
    provides: ClassVar[tuple[str, ...]] = ("readings",)
    recovers: bool = False

    def __post_init__(self) -> None:
        check_options(self, at_least={"n": 1, "max_tokens": 1, "keep": 1}, between={"temperature": (0.0, 2.0)})

    def __call__(self, state: State) -> None:
        current = current_attempt(state)
        prompt = next((list(e.calls[0].messages) for e in state.trace if e.stage == "generate" and e.calls),
                      state.prompt)
        candidates: list[Attempt] = [current]
        failed: str | None = None
        if prompt:
            try:
                out = state.complete(prompt, n=self.n, temperature=self.temperature, max_tokens=self.max_tokens,
                                     seed=self.seed)
            except SqlweaveError as err:  # the answer stands; only the second look is lost
                failed = f"{err.code}: {err.message}"
            else:
                candidates += [repair_attempt(state, attempt(state, t))[0] for t in out.texts]
        groups = result_groups(candidates) + result_groups(candidates, "empty")
        own = next((g for g in groups if 0 in g), [0])
        others = [g for g in groups if g is not own]
        chosen = [own] + others[: self.keep - 1]
        state.readings = []
        for group in chosen:
            first = candidates[group[0]]
            if first.sql is not None and first.result is not None:
                state.readings.append(Reading(first.sql, first.result, len(group) / len(candidates)))
        state.note(sampled=len(candidates) - 1, groups=[len(g) for g in groups],
                   shares=[round(r.share, 3) for r in state.readings],
                   **({} if prompt else {"no_prompt": "this pipeline has no generation prompt to sample"}),
                   **({"sampling_failed": failed} if failed else {}))
