"""What a conversation store keeps: a :class:`Turn` (one question and what came of it) and a
:class:`ConversationRecord` (a conversation, with or without its turns), their titles and their times.

>>> make_title("Which singers are from France?")
'Which singers are from France?'
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from ..pipeline import Answer, PriorTurn

#: Titles are the first question, cut to about this many characters.
TITLE_CHARS = 80

#: Result rows kept per stored turn (the query itself is capped by the database's ``max_rows``).
STORED_ROWS = 200


# --- records -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One question of a conversation and what came of it.

    ``number`` counts from 1; ``builds_on`` is the number of the earlier turn the answer continues (``None``:
    it stands alone); ``answer`` is :meth:`Answer.as_dict <sqlweave.pipeline.Answer.as_dict>` without the prompts
    (each stage's name, seconds, error and SQL are kept under ``stages``; at most :data:`STORED_ROWS` rows).
    """

    number: int
    question: str
    sql: str | None
    ok: bool
    error_code: str | None
    error_message: str | None
    builds_on: int | None
    row_count: int | None
    created_at: str
    answer: dict[str, Any] = field(default_factory=dict, compare=False)

    def prior(self) -> PriorTurn:
        """The turn as later prompts show it."""
        return PriorTurn(self.question, self.sql)

    def as_dict(self) -> dict[str, Any]:
        return {"number": self.number, "question": self.question, "sql": self.sql, "ok": self.ok,
                "error_code": self.error_code, "error_message": self.error_message, "builds_on": self.builds_on,
                "row_count": self.row_count, "created_at": self.created_at, "answer": self.answer}


@dataclass(frozen=True)
class ConversationRecord:
    """A stored conversation. ``turns`` is empty in :meth:`ConversationStore.list` (``turn_count`` says how many)."""

    id: str
    database: str
    title: str
    created_at: str
    updated_at: str
    turns: tuple[Turn, ...] = ()
    turn_count: int = 0
    owner: str | None = None

    def as_dict(self, *, turns: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "database": self.database, "title": self.title,
                             "created_at": self.created_at, "updated_at": self.updated_at,
                             "turn_count": self.turn_count}
        if turns:
            d["turns"] = [t.as_dict() for t in self.turns]
        return d


def make_title(question: str, limit: int = TITLE_CHARS) -> str:
    """The conversation title a first question gives: one line, cut at a word to about ``limit`` characters.

    >>> make_title("Which singers are from France?")
    'Which singers are from France?'
    >>> make_title("word " * 30)
    'word word word word word word word word word word word word word word word…'
    """
    text = " ".join(question.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2:]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip() + "…"


_clock_lock = threading.Lock()
_last_time = datetime.min.replace(tzinfo=timezone.utc)


def now_stamp() -> str:
    """ISO 8601 UTC time with microseconds, strictly increasing within this process (stable ordering)."""
    global _last_time
    with _clock_lock:
        now = datetime.now(timezone.utc)
        if now <= _last_time:
            now = _last_time + timedelta(microseconds=1)
        _last_time = now
    return now.isoformat(timespec="microseconds")


def stored_answer(answer: Answer, max_rows: int = STORED_ROWS) -> dict[str, Any]:
    """``answer.as_dict()`` made small enough to store with every turn: no prompts, at most ``max_rows`` rows."""
    d = answer.as_dict()
    d["stages"] = [{"stage": e["stage"], "seconds": e["seconds"], "error": e["error"], "sql": e["sql"]}
                   for e in d.pop("trace")]
    rewrite = next((e for e in answer.trace if e.stage == "rewrite_question"), None)
    if rewrite is not None and rewrite.notes.get("rewritten"):
        d["rewritten_question"] = rewrite.notes["rewritten"]
    if len(d["rows"]) > max_rows:
        d["rows"] = d["rows"][:max_rows]
        d["rows_stored"] = max_rows
    return json.loads(json.dumps(d, default=str))

