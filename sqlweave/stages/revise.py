"""Stage: the dynamic revision chain (Guo et al., section 3.2).

Each round collects fine-grained feedback on the previous SQL: the execution error if
any; a natural-language explanation of what the SQL does, compared by the model with
the question; and related database contents (stored values of the columns the SQL
filters on, close to the literals it uses). The model revises; the chain stops when two
consecutive rounds give the same result, or after ``max_rounds``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..cells import json_cell
from ..llm.base import Message
from ..pipeline import State
from ..prompts import render
from .base import BaseStage, check_options
from .candidate import adopt, assistant_turn, attempt, confident, current_attempt, feedback, value_hint
from .generate import dialect_name


@dataclass(frozen=True)
class RevisionChain(BaseStage):
    """Revise the SQL with execution, explanation and database-content feedback until it converges.

    ``skip_if_ok`` leaves an answer alone when it executes and returns rows; ``skip_if_confident``
    does so only when voting also agreed at least that much (the safety check).
    """

    max_rounds: int = 3
    explain: bool = True
    db_contents: bool = True
    skip_if_ok: bool = False
    skip_if_confident: float | None = None
    max_tokens: int = 384
    name: str = "revise"
    requires: ClassVar[tuple[str, ...]] = ("result",)
    provides: ClassVar[tuple[str, ...]] = ("sql", "result", "error", "candidates", "signals")
    recovers: bool = True

    def __post_init__(self) -> None:
        check_options(self, at_least={"max_rounds": 0, "max_tokens": 1}, between={"skip_if_confident": (0.0, 1.0)},
                      optional=("skip_if_confident",))

    def __call__(self, state: State) -> None:
        current = current_attempt(state)
        if (not state.prompt or current.kind in ("refused",) or (self.skip_if_ok and current.kind == "ok")
                or confident(state, current, self.skip_if_confident)):
            state.note(skipped=True, outcome=current.kind)
            return
        dialect = dialect_name(state.db.dialect)
        rounds = []
        stop = "max_rounds"
        for i in range(1, self.max_rounds + 1):
            parts = []
            if current.kind != "ok":
                parts.append(f"Execution feedback: {feedback(state, current)}")
            else:
                assert current.result is not None
                # as Python writes the row, each value as JSON carries it (no Decimal(...) or datetime.date(...))
                preview = ", ".join(repr(tuple(json_cell(v) for v in r)) for r in current.result.rows[:3])
                parts.append(f"Execution feedback: the query ran and returned {current.result.row_count} row(s): {preview}")
            if self.explain and current.sql:
                system, user = render("explain", schema=state.rendered_schema.text if state.rendered_schema else "",
                                      question=state.question, sql=current.sql)
                explained = state.complete([Message("system", system), Message("user", user)], temperature=0.0,
                                           max_tokens=160)
                state.signals.corrected = True
                parts.append("Explanation: " + explained.text.strip())
            if self.db_contents:
                hint = value_hint(state, current)
                if hint:
                    parts.append(f"Related database contents:\n{hint}")
            messages = list(state.prompt) + [
                assistant_turn(state, current),
                Message("user", "\n\n".join(parts) + f"\n\nIf the query does not answer the question, revise it. "
                                f"Answer with the final {dialect} query in a ```sql block."),
            ]
            out = state.complete(messages, temperature=0.0, max_tokens=self.max_tokens)
            state.signals.corrected = True
            new = attempt(state, out.text)
            converged = new.kind in ("ok", "empty") and new.rows_key() == current.rows_key()
            rounds.append({"round": i, "was": current.kind, "now": new.kind, "sql": new.sql, "same_result": converged})
            if current.better_than(new):
                continue  # a revision that breaks a working query is not taken; go on from the last good one
            current = new
            if converged:
                stop = "converged"
                break
        if current.sql != state.sql:
            adopt(state, current)
        state.note(rounds=rounds, stop=stop, outcome=current.kind)
