"""Read the agent's thought and action from what the model wrote, forgivingly.

Accepted forms: ``Action: SearchValue("Paris", table="city")`` (Python call syntax), unquoted arguments
(``SearchColumn(age of singer)``), SQL in a fenced block after ``ExecuteSQL``, a bare fenced SQL block
with no action (taken as ``ExecuteSQL``), ``Done`` / ``Done()``, and JSON
(``{"thought": ..., "action": "SearchValue", "args": ["Paris"]}``, what JSON-constrained decoding produces).

>>> a = parse_action('Thought: find the name.\\nAction: SearchValue("Paris", table="city")')
>>> (a.thought, a.name, a.args, a.kwargs)
('find the name.', 'SearchValue', ['Paris'], {'table': 'city'})
>>> parse_action("Action: ExecuteSQL(SELECT count(*) FROM singer)").args
['SELECT count(*) FROM singer']
>>> parse_action("Thought: that answers it.\\nAction: Done").name
'Done'
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .tools import TOOL_NAMES

_ACTION = re.compile(r"^\s*\**Action\**\s*[:：]\**\s*", re.IGNORECASE | re.MULTILINE)
_THOUGHT = re.compile(r"^\s*\**Thought\**\s*[:：]\**\s*", re.IGNORECASE | re.MULTILINE)
_CALL = re.compile(r"^\s*`*([A-Za-z_]\w*)\s*(?:\((.*)\))?", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*(?:sql|sqlite)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)
_CANONICAL = {n.lower(): n for n in TOOL_NAMES}


@dataclass(frozen=True)
class Action:
    """One parsed turn: the thought, the tool name and its arguments; ``error`` says why parsing failed."""

    thought: str
    name: str | None
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def text(self) -> str:
        """The action written back in canonical form (for the conversation and the trace)."""
        if self.name is None:
            return ""
        if self.name == "Done":
            return "Done"
        parts = [json.dumps(a, ensure_ascii=False) for a in self.args]
        parts += [f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(parts)})"


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return ast.unparse(node)


def _arguments(name: str, inner: str) -> tuple[list[Any], dict[str, Any]]:
    inner = inner.strip()
    if not inner:
        return [], {}
    fence = _FENCE.search(inner)
    if fence and name == "ExecuteSQL":
        return [fence.group(1).strip()], {}
    try:
        call = ast.parse(f"f({inner})", mode="eval").body
        assert isinstance(call, ast.Call)
        args = [_literal(a) for a in call.args]
        kwargs = {k.arg: _literal(k.value) for k in call.keywords if k.arg}
        if name == "ExecuteSQL" and (len(args) != 1 or not isinstance(args[0], str)):
            raise ValueError
        return args, kwargs
    except (SyntaxError, ValueError, AssertionError):
        # Unquoted or oddly quoted text: the whole inner text is the one argument.
        text = inner.strip()
        for q in ('"""', "'''", '"', "'", "`"):
            if text.startswith(q) and text.endswith(q) and len(text) >= 2 * len(q):
                text = text[len(q):-len(q)]
                break
        if name == "FindShortestPath" and "," in text:
            return [p.strip().strip("\"'`") for p in text.split(",", 1)], {}
        return [text.strip()], {}


def _from_json(text: str) -> Action | None:
    start = text.find("{")
    if start < 0:
        return None
    try:
        obj = json.loads(text[start:text.rfind("}") + 1])
    except ValueError:
        return None
    if not isinstance(obj, dict) or "action" not in obj:
        return None
    name = _CANONICAL.get(str(obj.get("action", "")).strip().lower())
    args = obj.get("args") or []
    if not isinstance(args, list):
        args = [args]
    thought = str(obj.get("thought", "")).strip()
    if name is None:
        return Action(thought, str(obj.get("action")), [], {}, error=f"unknown tool {obj.get('action')!r}")
    return Action(thought, name, [a if isinstance(a, (str, int, float)) else str(a) for a in args], {})


def parse_action(text: str) -> Action:
    """Parse one model turn. Never raises: a turn with no usable action has ``error`` set."""
    text = text or ""
    if text.lstrip().startswith("{"):
        parsed = _from_json(text)
        if parsed is not None:
            return parsed
    m = _ACTION.search(text)
    if m is None:
        thought = _THOUGHT.sub("", text, count=1).strip()
        fence = _FENCE.search(text)
        if fence and fence.group(1).strip():
            return Action(thought[: fence.start()].strip(), "ExecuteSQL", [fence.group(1).strip()], {})
        if re.search(r"\bDone\b", text.strip().splitlines()[-1] if text.strip() else ""):
            return Action(thought, "Done")
        return Action(thought, None, error="no action found: end each turn with one line 'Action: Tool(arguments)'")
    thought = _THOUGHT.sub("", text[: m.start()], count=1).strip()
    rest = text[m.end():].strip()
    call = _CALL.match(rest)
    if call is None:
        return Action(thought, None, error=f"cannot read the action {rest[:80]!r}: write it as Tool(arguments)")
    raw_name, inner = call.group(1), call.group(2)
    name = _CANONICAL.get(raw_name.lower())
    if name is None:
        return Action(thought, raw_name, error=f"unknown tool {raw_name!r}")
    if name == "Done":
        return Action(thought, "Done")
    if inner is None:
        # ExecuteSQL followed by a fenced block or bare SQL on the next lines.
        after = rest[call.end():]
        fence = _FENCE.search(after)
        if name == "ExecuteSQL" and (fence or after.strip()):
            return Action(thought, name, [(fence.group(1) if fence else after).strip()], {})
        return Action(thought, name, error=f"{name} needs arguments in parentheses")
    args, kwargs = _arguments(name, inner)
    return Action(thought, name, args, kwargs)
