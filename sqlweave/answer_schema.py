"""One schema for an answer, at every door: the HTTP API, MCP's ``ask`` tool, ``sqlweave ask --json`` and
:meth:`Answer.as_dict <sqlweave.pipeline.Answer.as_dict>`.

Each door adds only what is its own (the HTTP answer's id, conversation and timings; MCP's database name), so a
client reads ``sql``, ``columns``, ``rows``, ``confidence``, ``cautions`` or ``error`` the same way wherever it
asked. How a cell is written is the door's choice (:mod:`sqlweave.cells`: the HTTP door cuts long bytes, the
record keeps every character).

>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.presets import build_pipeline
>>> answer = build_pipeline("zero-shot").run("How many products?", Database.open(demo_database_path()),
...                                         FakeLLM(["SELECT COUNT(*) FROM products"]))
>>> a = AnswerSchema.of(answer)
>>> a.sql, a.columns, a.rows, a.row_count, a.error
('SELECT COUNT(*) FROM products', ['COUNT(*)'], [[40]], 1, None)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from .cells import json_cell

if TYPE_CHECKING:
    from .db.connection import QueryResult
    from .errors import SqlweaveError
    from .pipeline import Answer


def exact_cell(value: Any) -> Any:
    """A cell as the record keeps it: every character (:func:`~sqlweave.cells.json_cell` with ``exact_text``)."""
    return json_cell(value, exact_text=True)


class ErrorSchema(BaseModel):
    """Why there is no result: a stable ``code`` to decide on, a ``message`` and a ``hint`` to show."""

    model_config = ConfigDict(extra="forbid")

    code: str
    message: str
    hint: str = ""
    retryable: bool = Field(False, description="Whether the same request may succeed later.")

    @classmethod
    def of(cls, err: "SqlweaveError", text: Callable[[str], str] = str) -> "ErrorSchema":
        return cls(code=err.code, message=text(err.message), hint=text(err.hint or ""),
                   retryable=bool(err.retryable))


class ReadingSchema(BaseModel):
    """One reading of a question sqlweave is not sure of: its query, its rows, and the samples behind it."""

    model_config = ConfigDict(extra="forbid")

    sql: str
    columns: list[str]
    rows: list[list[Any]]
    row_count: int = 0
    truncated: bool = False
    share: float = Field(..., description="Share of the sampled answers behind this reading.")


class AnswerSchema(BaseModel):
    """An answer as every door gives it."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The question as asked.")
    restated: str | None = Field(None, description="A follow-up as restated on its own and answered (null: "
                                                   "answered as asked).")
    sql: str | None = Field(None, description="The SQL that ran (or the last one tried, when it failed).")
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list, description="One list of cell values per row.")
    row_count: int = Field(0, description="Rows given here.")
    truncated: bool = Field(False, description="The query had more rows than were given.")
    elapsed_s: float | None = Field(None, description="Seconds the query took on the database.")
    confidence: float | None = Field(None, description="Calibrated chance that the answer is right (0 to 1).")
    agreement: float | None = Field(None, description="Voting pipelines: share of candidates behind the answer.")
    unsure: bool = Field(False, description="The confidence is below the min_confidence asked for.")
    readings: list[ReadingSchema] = Field(default_factory=list,
                                          description="When unsure: the leading readings, the answer's own first.")
    cautions: list[str] = Field(default_factory=list,
                                description="What to check before trusting the rows: a sum a join counts more "
                                            "than once, rows that tie at the limit, an answer cut short. Text that "
                                            "holds the model's SQL.")
    cut_short: bool = Field(False, description="The question's time budget ran out: this is the answer found so "
                                               "far (a caution says which stages did not finish).")
    builds_on: int | None = Field(None, description="The earlier turn of a conversation this answer continues.")
    error: ErrorSchema | None = None
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = Field(0.0, description="Seconds the pipeline took.")
    trace: list[dict[str, Any]] | None = Field(None, description="Each stage: prompts, outputs, tokens, seconds, "
                                                                 "notes (when asked for).")

    @staticmethod
    def rows_of(result: "QueryResult | None", cell: Callable[[Any], Any] = exact_cell,
                max_rows: int | None = None) -> dict[str, Any]:
        """``columns``, ``rows``, ``row_count``, ``truncated`` and ``elapsed_s`` of ``result``."""
        if result is None:
            return {"columns": [], "rows": [], "row_count": 0, "truncated": False, "elapsed_s": None}
        rows = result.rows if max_rows is None else result.rows[:max_rows]
        return {"columns": [str(c) for c in result.columns], "rows": [[cell(v) for v in row] for row in rows],
                "row_count": len(rows), "truncated": bool(result.truncated) or len(rows) < len(result.rows),
                "elapsed_s": round(result.elapsed_s, 4)}

    @classmethod
    def fields_of(cls, answer: "Answer", *, cell: Callable[[Any], Any] = exact_cell,
                  text: Callable[[str], str] = str, max_rows: int | None = None,
                  trace: bool = True) -> dict[str, Any]:
        """The schema's fields for ``answer``, as keywords for this class or a door's subclass of it. ``cell``
        writes each value, ``text`` each text the answer holds (the model's, the database's, the user's)."""
        readings = []
        for r in answer.readings:
            rows = cls.rows_of(r.result, cell, max_rows)
            rows.pop("elapsed_s")
            readings.append(ReadingSchema(sql=text(r.sql), share=round(r.share, 3), **rows))
        usage = answer.usage
        return {
            "question": text(answer.question),
            "restated": None if answer.restated is None else text(answer.restated),
            "sql": None if answer.sql is None else text(answer.sql),
            **cls.rows_of(answer.result, cell, max_rows),
            "confidence": answer.confidence, "agreement": answer.agreement, "unsure": answer.unsure,
            "readings": readings, "cautions": [text(c) for c in answer.cautions], "cut_short": answer.cut_short,
            "builds_on": answer.builds_on,
            "error": None if answer.error is None else ErrorSchema.of(answer.error, text),
            "model_calls": answer.model_calls, "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens, "seconds": round(answer.seconds, 4),
            "trace": [e.as_dict() for e in answer.trace] if trace else None,
        }

    @classmethod
    def of(cls, answer: "Answer", **options: Any) -> "AnswerSchema":
        """The schema of ``answer`` (options as :meth:`fields_of`)."""
        return cls(**cls.fields_of(answer, **options))


__all__ = ["AnswerSchema", "ErrorSchema", "ReadingSchema", "exact_cell"]
