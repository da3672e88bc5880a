"""Stage: the agent loop (paper 002, Interactive-T2S).

Instruction + two exemplars with complete interactions + the question; each turn the model writes a
thought and one action, sqlweave runs the tool and appends its observation as the next user message, so
the conversation only grows at the end and llama.cpp reuses the evaluated prefix across turns. The loop
stops on ``Done`` or after ``max_turns``; the answer is the last query that executed without error.

Unlike the paper, the prompt shows the compact schema by default (``show_schema``): a 1.5B model
explores far less reliably than GPT-4o, and Spider-size schemas fit the context easily. Set it to
``False`` for the paper's setting (the model only sees what the tools return), or leave it at ``"auto"``
to show schemas up to ``schema_token_limit`` tokens.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.db.demo import demo_database_path
>>> from sqlweave.database import Database
>>> from sqlweave.pipeline import Pipeline
>>> llm = FakeLLM(["Thought: count them.\\nAction: ExecuteSQL(\\"SELECT count(*) FROM customers\\")",
...                "Thought: done.\\nAction: Done"])
>>> answer = Pipeline("agent", (AgentLoop(),)).run("How many customers?", Database.open(demo_database_path()), llm)
>>> answer.sql, answer.result.rows
('SELECT count(*) FROM customers', ((60,),))
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..db.connection import QueryResult
from ..db.render import render_schema
from ..errors import PipelineError
from ..llm.base import Message
from ..pipeline import State
from ..prompts import render
from ..stages.base import BaseStage
from ..stages.generate import dialect_name
from .actions import Action, parse_action
from .tools import Toolkit

#: Stop sequences: the model must not write the observation itself.
STOP = ("\nObservation", "Observation:", "\nObservation:")

#: Strict JSON output for backends that can constrain decoding to a schema.
ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "thought": {"type": "string"},
        "action": {"type": "string", "enum": ["SearchColumn", "SearchValue", "FindShortestPath", "ExecuteSQL", "Done"]},
        "args": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["thought", "action", "args"],
}

_JSON_NOTE = ('\nAnswer each turn with one JSON object: {"thought": "...", "action": "ToolName", "args": ["..."]} '
              '(args as a list of strings; Done takes no args).')


@dataclass(frozen=True)
class AgentLoop(BaseStage):
    """Think-act-observe with SearchColumn, SearchValue, FindShortestPath and ExecuteSQL until ``Done``."""

    max_turns: int = 10
    show_schema: bool | Literal["auto"] = True
    schema_token_limit: int = 2500
    mode: Literal["text", "json"] = "text"
    temperature: float = 0.0
    max_tokens: int = 384
    search_k: int = 4
    name: str = "agent"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    provides: ClassVar[tuple[str, ...]] = ("sql", "result", "candidates", "prompt", "extras.toolkit",
                                             "extras.agent_turns")

    def _schema_block(self, state: State) -> str:
        if self.show_schema is False:
            return ""
        rendered = render_schema(state.prompt_schema, style="compact")
        if self.show_schema == "auto":
            tokens, _ = state.llm.count_tokens(rendered.text)
            if tokens > self.schema_token_limit:
                return ""
        return f"\nDatabase schema (table(columns), keys marked):\n{rendered.text}"

    def __call__(self, state: State) -> None:
        if self.mode == "json" and not state.llm.supports_json_schema:
            raise PipelineError(f"the model backend {state.llm.model_id!r} cannot constrain output to JSON",
                                hint="Use the agent with mode='text' (the default) for this backend.")
        kit: Toolkit = state.extras.setdefault("toolkit", Toolkit(state.db, resources=state.resources))
        system, user = render("agent", dialect=dialect_name(state.db.dialect), question=state.question,
                              schema_block=self._schema_block(state))
        if self.mode == "json":
            system += _JSON_NOTE
        messages = [Message("system", system), Message("user", user)]
        turns: list[dict[str, Any]] = []
        last_ok: tuple[str, QueryResult] | None = None
        last_sql: str | None = None
        previous: str | None = None
        stop_reason = "turn_limit"
        for turn in range(1, self.max_turns + 1):
            options: dict[str, Any] = dict(temperature=self.temperature, max_tokens=self.max_tokens)
            if self.mode == "json":
                options["json_schema"] = ACTION_SCHEMA
            else:
                options["stop"] = STOP
            out = state.complete(messages, **options)
            action = parse_action(out.text)
            record: dict[str, Any] = {"turn": turn, "thought": action.thought, "action": action.text or None,
                                      "prompt_tokens": out.usage.prompt_tokens,
                                      "completion_tokens": out.usage.completion_tokens,
                                      "seconds": round(out.seconds, 3)}
            messages.append(Message("assistant", _assistant_text(out.text, action, self.mode)))
            if action.name == "Done":
                record["observation"] = None
                turns.append(record)
                stop_reason = "done"
                break
            start = time.perf_counter()
            if action.error is not None:
                observation = f"Error: {action.error}. Available: SearchColumn, SearchValue, FindShortestPath, ExecuteSQL, Done."
            elif action.text == previous:
                observation = "Error: you already did exactly this; use its observation above and take the next step."
            else:
                kwargs = dict(action.kwargs)
                if action.name == "SearchColumn":
                    kwargs.setdefault("k", self.search_k)
                observation, result = kit.call(action.name or "", action.args, kwargs)
                if action.name == "ExecuteSQL" and action.args:
                    last_sql = str(action.args[0])
                    if isinstance(result, QueryResult):
                        last_sql = result.sql  # the repaired query, when ExecuteSQL corrected names
                        last_ok = (last_sql, result)
            previous = action.text or previous
            record["observation"] = observation
            record["tool_seconds"] = round(time.perf_counter() - start, 4)
            turns.append(record)
            messages.append(Message("user", f"Observation: {observation}"))
        state.prompt = messages
        state.extras["agent_turns"] = turns
        state.note(turns=len(turns), stop=stop_reason, trajectory=turns)
        if last_ok is not None:
            state.sql, state.result = last_ok
            state.candidates.append(last_ok[0])
            return
        if last_sql is not None:
            state.sql = last_sql
            state.candidates.append(last_sql)
            state.result = None
            # Re-run to surface the typed error of the last attempt as the answer's error.
            state.result = state.db.execute(last_sql)
            return
        raise PipelineError(f"the agent stopped ({stop_reason.replace('_', ' ')}) after {len(turns)} turns "
                            "without executing a query",
                            hint="Raise max_turns, try a larger model, or use a prompting pipeline such as zero-shot.")


def _assistant_text(raw: str, action: Action, mode: str) -> str:
    """What goes back into the conversation: the thought and action as written, cut after the action line."""
    if mode == "json" or action.name is None:
        return raw.strip()
    thought = f"Thought: {action.thought}\n" if action.thought else ""
    return f"{thought}Action: {action.text}"
