"""Stage: decomposed automation correction, DAC (Wang et al.).

Two sub-tasks give feedback the model can act on more easily than "is this SQL right?":

1. Entity linking: the model aligns question tokens to tables, columns and values. A
   backend that can constrain its output (llama.cpp grammars, OpenAI-style
   ``response_format``) is held to :data:`LINK_SCHEMA`; without it, small models tend to
   explain the task in prose and never reach the list. Either way the answer is parsed
   robustly: malformed entries and entities that are not in the schema are dropped,
   never fatal.
2. Skeleton parsing: the model writes SQL from the question alone (no schema); its
   skeleton (identifiers and values masked) is what the question's logic looks like.

The comparison needs no model: linked tables/columns the SQL does not use, and a SQL
skeleton different from the parsed one. Correction goes first with the entity feedback,
then with the skeleton feedback (DAC's appendix prompts), each adopted only if the new
SQL is not worse than the one it replaces.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import SqlweaveError
from ..llm.base import Message
from ..pipeline import State
from ..prompts import render
from ..sql.extract import extract_sql
from ..sql.skeleton import sql_entities, sql_skeleton
from .base import BaseStage, check_options
from .candidate import adopt, attempt, confident, current_attempt
from .generate import dialect_name


@dataclass(frozen=True)
class Alignment:
    token: str
    schema: str  # "table" or "table.column"
    type: str  # "tbl", "col" or "val"


#: The entity-linking answer's shape, for backends that constrain output to a JSON schema.
LINK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "alignments": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "token": {"type": "string"},
                    "schema": {"type": "string"},
                    "type": {"type": "string", "enum": ["tbl", "col", "val"]},
                },
                "required": ["token", "schema", "type"],
            },
        },
    },
    "required": ["alignments"],
}

_DICT = re.compile(r"\{[^{}]*\}")


def _entries(text: str) -> list[Any]:
    """Dict-like entries from the model's answer: a whole list if it parses, else dict by dict."""
    start, end = text.find("["), text.rfind("]")
    if start != -1 and end > start:
        chunk = text[start:end + 1]
        for loader in (json.loads, ast.literal_eval):
            try:
                data = loader(chunk)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(data, list):
                return data
    out = []
    for m in _DICT.finditer(text):
        for loader in (json.loads, ast.literal_eval):
            try:
                out.append(loader(m.group(0)))
                break
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
    return out


def parse_alignments(text: str, state_schema: Any) -> list[Alignment]:
    """Alignments that name real schema entities; everything else in ``text`` is ignored.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("singer", (Column("name"), Column("age"))),))
    >>> parse_alignments('[{"token": "singers", "schema": "singer", "type": "tbl"}, {"token": "x", "schema": "nope"}]', s)
    [Alignment(token='singers', schema='singer', type='tbl')]
    """
    found: list[Alignment] = []
    for item in _entries(text or ""):
        if not isinstance(item, dict):
            continue
        schema = item.get("schema")
        kind = str(item.get("type") or "").lower()
        if not isinstance(schema, str) or not schema.strip():
            continue
        name = schema.strip().strip("`\"'")
        resolved = _resolve(name, state_schema)
        if resolved is None:
            continue
        if kind not in ("tbl", "col", "val"):
            kind = "col" if "." in resolved else "tbl"
        if kind == "tbl" and "." in resolved:
            kind = "col"
        a = Alignment(str(item.get("token", "")), resolved, kind)
        if a not in found:
            found.append(a)
    return found


def _resolve(name: str, schema: Any) -> str | None:
    if "." in name:
        t, _, c = name.partition(".")
        if schema.has_table(t) and schema.table(t).has_column(c):
            table = schema.table(t)
            return f"{table.name}.{table.column(c).name}"
        return None
    if schema.has_table(name):
        return schema.table(name).name
    owners = [t for t in schema.tables if t.has_column(name)]
    if owners:
        return f"{owners[0].name}.{owners[0].column(name).name}"
    return None


def missing_entities(alignments: list[Alignment], sql: str, dialect: str) -> list[str]:
    """Linked tables and columns (not values) that ``sql`` does not use."""
    try:
        tables, columns = sql_entities(sql, dialect)
    except SqlweaveError:
        return []
    missing = []
    for a in alignments:
        if a.type == "tbl" and a.schema.lower() not in tables:
            missing.append(a.schema)
        elif a.type == "col" and a.schema.split(".")[-1].lower() not in columns:
            missing.append(a.schema)
    return list(dict.fromkeys(missing))


@dataclass(frozen=True)
class DecomposedCorrection(BaseStage):
    """DAC: entity-linking feedback first, then skeleton feedback; either can be switched off."""

    entities: bool = True
    skeleton: bool = True
    skip_if_confident: float | None = None
    max_tokens: int = 384
    name: str = "dac"
    requires: ClassVar[tuple[str, ...]] = ("result",)
    provides: ClassVar[tuple[str, ...]] = ("sql", "result", "error", "candidates", "signals")
    recovers: bool = True

    def __post_init__(self) -> None:
        check_options(self, at_least={"max_tokens": 1}, between={"skip_if_confident": (0.0, 1.0)},
                      optional=("skip_if_confident",))

    def __call__(self, state: State) -> None:
        current = current_attempt(state)
        if (current.sql is None or current.kind == "refused" or state.rendered_schema is None
                or confident(state, current, self.skip_if_confident)):
            state.note(skipped=True)
            return
        dialect = state.db.dialect
        schema_text = state.rendered_schema.text
        notes: dict[str, Any] = {}
        if self.entities:
            system, user = render("dac_link", schema=schema_text, sql=current.sql, question=state.question)
            constrained = {"json_schema": LINK_SCHEMA} if state.llm.supports_json_schema else {}
            out = state.complete([Message("system", system), Message("user", user)], temperature=0.0, max_tokens=300,
                                 **constrained)
            state.signals.corrected = True
            links = parse_alignments(out.text, state.schema)
            missing = missing_entities(links, current.sql, dialect)
            notes["alignments"] = [f"{a.token}->{a.schema}:{a.type}" for a in links]
            notes["missing_entities"] = missing
            if missing:
                notification = f"<<<{', '.join(missing)}>>> are mentioned by the question"
                new = self._fix(state, "dac_fix_entities", current.sql, notification=notification)
                notes["entity_fix"] = {"sql": new.sql, "outcome": new.kind}
                if not current.better_than(new):
                    current = new
        if self.skeleton and current.sql is not None:
            system, user = render("dac_skeleton", question=state.question)
            out = state.complete([Message("system", system), Message("user", user)], temperature=0.0, max_tokens=200)
            state.signals.corrected = True
            parsed: str | None  # None: either side does not parse
            mine: str | None
            try:
                parsed = sql_skeleton(extract_sql(out.text, dialect), dialect)
                mine = sql_skeleton(current.sql, dialect)
            except SqlweaveError:
                parsed = mine = None
            notes["skeleton"] = parsed
            notes["skeleton_mismatch"] = parsed is not None and parsed != mine
            if parsed is not None and parsed != mine:
                new = self._fix(state, "dac_fix_skeleton", current.sql, skeleton=parsed)
                notes["skeleton_fix"] = {"sql": new.sql, "outcome": new.kind}
                if not current.better_than(new):
                    current = new
        if current.sql != state.sql:
            adopt(state, current)
        notes["outcome"] = current.kind
        state.note(**notes)

    def _fix(self, state: State, template: str, sql: str, **values: str):
        system, user = render(template, dialect=dialect_name(state.db.dialect),
                              schema=state.rendered_schema.text if state.rendered_schema else "",
                              sql=sql, question=state.question, **values)
        out = state.complete([Message("system", system), Message("user", user)], temperature=0.0, max_tokens=self.max_tokens)
        state.signals.corrected = True
        return attempt(state, out.text)
