"""Stage: error correction (RB-SQL, section 4.4 and appendix A).

When the answer fails, the failure is classified (syntax error; schema-linking error,
found by qualifying the SQL against the schema with sqlglot or reported by the
database; other execution error; empty result) and the model is re-prompted with that
specific error, continuing the generation conversation so the prompt prefix is reused.
When the model forges schema elements while the prompt shows a pruned schema, or keeps
failing, the prompt switches to the full schema. A repair is adopted only if it is not
worse than the answer it replaces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..db.render import render_schema
from ..llm.base import Message
from ..pipeline import State
from .base import BaseStage, check_options
from .candidate import Attempt, adopt, assistant_turn, attempt, current_attempt, feedback
from .generate import dialect_name, generation_prompt

CORRECTABLE = ("schema_linking", "syntax", "execution", "timeout", "no_sql", "empty")


def full_schema_prompt(state: State, template: str) -> list[Message]:
    """The generation prompt rebuilt with the full schema (same style), for the full-schema fallback."""
    style = state.rendered_schema.style if state.rendered_schema else "create_table"
    state.prompt_schema = state.schema
    state.rendered_schema = render_schema(state.schema, style, count=state.llm.count_tokens)
    return generation_prompt(state, template, state.rendered_schema.text)


@dataclass(frozen=True)
class ErrorCorrection(BaseStage):
    """Re-prompt with the specific failure, up to ``max_rounds`` times.

    ``fix_empty`` also treats an empty result as a failure; ``full_schema_after`` failed
    rounds (or at once, on forged schema elements) switch a pruned prompt to the full schema.
    """

    max_rounds: int = 3
    fix_empty: bool = True
    full_schema_after: int = 2
    max_tokens: int = 384
    #: A greedy model that is shown its failure often writes the same query again; after a repeat, the
    #: next round samples at this temperature instead (0 keeps every round greedy).
    resample_temperature: float = 0.7
    name: str = "correct"
    requires: ClassVar[tuple[str, ...]] = ("result",)
    provides: ClassVar[tuple[str, ...]] = ("sql", "result", "error", "candidates", "prompt_schema",
                                             "rendered_schema", "signals")
    recovers: bool = True

    def _needs_fix(self, a: Attempt) -> bool:
        return a.kind in CORRECTABLE and (a.kind != "empty" or self.fix_empty)

    def __post_init__(self) -> None:
        check_options(self, at_least={"max_rounds": 0, "full_schema_after": 0, "max_tokens": 1},
                      between={"resample_temperature": (0.0, 2.0)})

    def __call__(self, state: State) -> None:
        first = current_attempt(state)
        if not state.prompt or not self._needs_fix(first):
            state.note(skipped=True, outcome=first.kind)
            return
        best = current = first
        messages = list(state.prompt)
        rounds = []
        tried = {first.sql}
        repeated = False
        for i in range(1, self.max_rounds + 1):
            pruned = state.prompt_schema is not state.schema
            switched = pruned and (current.kind == "schema_linking" or i > self.full_schema_after)
            if switched:
                messages = full_schema_prompt(state, (state.prompt_template or "zero_shot"))
            dialect = dialect_name(state.db.dialect)
            messages = messages + [
                assistant_turn(state, current),
                Message("user", f"{feedback(state, current)}\nWrite the corrected {dialect} query in a ```sql block."),
            ]
            temperature = self.resample_temperature if repeated else 0.0
            out = state.complete(messages, temperature=temperature, max_tokens=self.max_tokens,
                                 **({"seed": i} if temperature else {}))
            state.signals.corrected = True
            was = current.kind
            current = attempt(state, out.text)
            repeated = current.sql in tried
            tried.add(current.sql)
            rounds.append({"round": i, "was": was, "now": current.kind, "sql": current.sql, "full_schema": switched,
                           "temperature": temperature, "repeated": repeated})
            if current.better_than(best):
                best = current
            if not self._needs_fix(current):
                break
        if best is not first:
            adopt(state, best)
        state.note(rounds=rounds, outcome=best.kind, changed=best is not first)
