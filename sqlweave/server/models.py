"""Request and response bodies of the HTTP API (pydantic; requests refuse unknown fields).

Values are JSON data (rows as arrays of cells), never text pasted into prose or HTML: the page
puts them into the document as text nodes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..answer_schema import AnswerSchema, ReadingSchema


def _database() -> Any:
    """A database name as the catalog spells them (checked against the catalog by the routes)."""
    return Field(..., min_length=1, max_length=64, description="A configured database name (GET /api/databases).")


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Response(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- requests -----------------------------------------------------------------------------------


class AskIn(_Request):
    database: str = _database()
    question: str = Field(..., max_length=100_000, description="One question in plain language (any language).")
    preset: str | None = Field(None, min_length=1, max_length=200,
                               description="A pipeline preset (sqlweave.presets), e.g. 'default' or 'repair+vote'.")
    conversation_id: str | None = Field(None, min_length=1, max_length=64,
                                        description="Continue this conversation (its earlier turns reach the model).")
    new_conversation: bool = Field(False, description="Start a new conversation even if conversation_id is given.")
    min_confidence: float | None = Field(
        None, ge=0.0, le=1.0, description="Below this confidence (0 to 1) the answer comes back unsure, with the two "
        "leading readings of the question (a few more model calls).")


class SqlIn(_Request):
    database: str = _database()
    sql: str = Field(..., min_length=1, max_length=100_000)
    read: str | None = Field(None, max_length=40, description="The dialect the SQL is written in, when not the "
                             "database's (postgres, mysql, sqlite, duckdb, ...): it is translated first.")


class CsvIn(SqlIn):
    raw: bool = Field(False, description="Keep formula-like cells as stored (for programs, not spreadsheets).")


class ExplainIn(_Request):
    database: str = _database()
    sql: str = Field(..., min_length=1, max_length=100_000)
    question: str | None = Field(None, max_length=100_000)


class FeedbackIn(_Request):
    answer_id: str = Field(..., min_length=1, max_length=64, description=(
        "The answer's id, as /api/ask gave it: feedback is taken only on an answer this server gave this caller."))
    database: str = _database()
    question: str = Field(..., min_length=1, max_length=100_000, description="The answer's question, unchanged.")
    sql: str = Field(..., min_length=1, max_length=100_000, description="The answer's SQL, unchanged.")
    verdict: Literal["right", "wrong"]
    corrected_sql: str | None = Field(None, max_length=100_000, description=(
        "SQL that answers the question (your edit of the answer's): with verdict right, the edit you ran and "
        "found right; with wrong, the correction."))


# --- pieces ---------------------------------------------------------------------------------------


class ErrorOut(_Response):
    code: str
    message: str
    hint: str = ""
    retryable: bool = Field(False, description="Whether the same request may succeed later (a 503 says when in "
                                               "Retry-After).")


class ErrorBody(_Response):
    error: ErrorOut


class ChartOut(_Response):
    kind: Literal["number", "line", "bar", "none"] = "none"
    x: str | None = None
    y: str | None = None


class QueueOut(_Response):
    waiting: int
    running: int
    capacity: int


class TimingsOut(_Response):
    total_s: float
    queue_wait_s: float
    model_calls: int


# --- responses ------------------------------------------------------------------------------------


class HealthOut(_Response):
    status: Literal["ok"] = "ok"
    version: str
    model: str
    queue: QueueOut


class PresetOut(_Response):
    name: str
    made_of: str = Field(description="Another preset and the stages it adds, or a base recipe with its options.")
    spider_dev_ex: float | None = Field(None, description="Execution accuracy (%) on the 972 Spider dev questions "
                                                          "with the embedded 1.5B model, where measured.")
    calls_per_question: float | None = None
    median_seconds: float | None = Field(None, description="Median seconds per question on a 2-core machine.")
    measured: str | None = Field(None, description="The date of those figures.")
    server_median_seconds: float | None = Field(None, description="Median seconds of this preset's recent answers "
                                                                  "on this server (null: none yet).")
    server_answers: int = Field(0, description="How many answers that median is of (at most the last 50).")


class PresetsOut(_Response):
    default: str = Field(description="The preset a request that names none is answered with.")
    presets: list[PresetOut]


class DatabaseOut(_Response):
    name: str
    description: str = ""
    dialect: str | None = None


class DatabasesOut(_Response):
    databases: list[DatabaseOut]


class ColumnOut(_Response):
    name: str
    type: str
    primary_key: bool
    description: str = ""


class TableOut(_Response):
    name: str
    description: str = ""
    row_count: int | None = None
    columns: list[ColumnOut]


class ForeignKeyOut(_Response):
    table: str
    column: str
    ref_table: str
    ref_column: str


class SchemaOut(_Response):
    name: str
    dialect: str
    tables: list[TableOut]
    foreign_keys: list[ForeignKeyOut]
    #: the foreign keys were read from the data: the database declares none
    keys_from_data: bool = False
    #: the schemas its tables were read from, in the order a name is looked up, when more than one
    schemas: list[str] = []
    #: tables not read because an earlier schema holds a table of the same name, as ``schema.table``
    shadowed: list[str] = []
    #: how many tables the database has (``tables`` holds fewer when ``find`` is given)
    total_tables: int = 0


class SuggestionsOut(_Response):
    questions: list[str]


#: A reading, as :class:`~sqlweave.answer_schema.ReadingSchema` has it.
ReadingOut = ReadingSchema


class AnswerOut(AnswerSchema):
    """An answer (:class:`~sqlweave.answer_schema.AnswerSchema`, the same at every door), with what the HTTP door
    adds: its id (for feedback), its conversation and turn, a chart and its timings."""

    answer_id: str
    conversation_id: str | None
    turn: int | None
    chart: ChartOut
    timings: TimingsOut


class SqlOut(_Response):
    sql: str = Field("", description="The SQL that ran: the SQL sent, translated when `read` named its dialect.")
    columns: list[str]
    rows: list[list[Any]]
    row_count: int
    truncated: bool
    elapsed_s: float
    chart: ChartOut


class ExplainOut(_Response):
    explanation: str


class ExampleOut(_Response):
    question: str
    sql: str
    db_id: str


class FeedbackOut(_Response):
    added: bool = Field(description="The pair is in the example pool now.")
    pending: bool = Field(False, description="The pair waits for the operator's review (sqlweave examples pending).")
    example: ExampleOut | None


class ConversationSummaryOut(_Response):
    id: str
    database: str
    title: str
    created_at: str
    updated_at: str
    turn_count: int


class ConversationsOut(_Response):
    conversations: list[ConversationSummaryOut]


class TurnOut(_Response):
    number: int
    question: str
    sql: str | None
    ok: bool
    error_code: str | None
    builds_on: int | None
    row_count: int | None
    created_at: str


class ConversationOut(_Response):
    id: str
    database: str
    title: str
    turns: list[TurnOut]


# --- stream events (documented for clients; sent as SSE data) ---------------------------------------


class QueuedEvent(_Response):
    position: int = Field(..., description="Place in the line for the model (0: starts at once).")


class StageEvent(_Response):
    stage: str
    seconds: float
    error: str | None
    sql: str | None
    notes: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
