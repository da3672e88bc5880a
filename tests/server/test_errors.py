"""An error's HTTP status is its type's (``http_status``), never read from its code string."""

from __future__ import annotations

import pytest

from tests.extras import need_extra

need_extra("server")

from sqlweave.catalog import UnknownDatabaseError  # noqa: E402
from sqlweave.conversation import ConversationStoreError  # noqa: E402
from sqlweave.errors import (  # noqa: E402
    AccessDeniedError,
    ConversationMismatchError,
    ConversationNotFoundError,
    DatabaseLoginError,
    LLMResponseError,
    NoSQLInOutputError,
    QuestionTimeoutError,
    SqlweaveError,
    UnknownColumnError,
)
from sqlweave.server.errors import HTTPProblem, RateLimitedError, headers_for, status_for  # noqa: E402
from sqlweave.server.gate import ServerBusyError  # noqa: E402


@pytest.mark.parametrize(("err", "status"), [
    (ConversationNotFoundError("gone"), 404),
    (ConversationStoreError("locked"), 503),
    (ConversationMismatchError("another database"), 409),
    (UnknownDatabaseError("nope"), 404),
    (DatabaseLoginError("refused"), 503),
    (AccessDeniedError("hidden"), 400),
    (UnknownColumnError("no such column"), 400),
    (QuestionTimeoutError("out of time"), 504),
    (LLMResponseError("garbled"), 502),
    (NoSQLInOutputError("no SQL"), 500),
    (ServerBusyError("full"), 503),
    (RateLimitedError("slow down"), 429),
    (HTTPProblem("gone", status=499, code="cancelled"), 499),
])
def test_the_status_is_the_error_types(err: SqlweaveError, status: int) -> None:
    assert status_for(err) == status == err.http_status


def test_a_code_string_alone_chooses_no_status() -> None:
    class SaysNotFound(SqlweaveError):
        code = "conversation_not_found"

    class SaysStore(SqlweaveError):
        code = "conversation_store"
        retryable = True

    class Gone(ConversationNotFoundError):
        code = "something_else"

    assert status_for(SaysNotFound("x")) == 500 and status_for(SaysStore("x")) == 500
    assert "Retry-After" not in headers_for(SaysStore("x"))  # only a retryable 503 gets one
    assert status_for(Gone("x")) == 404  # a subclass keeps its family's status, whatever its code


def test_a_retryable_503_says_when_to_come_back() -> None:
    assert headers_for(ConversationStoreError("locked")) == {"Retry-After": "5"}
    assert headers_for(ServerBusyError("full", retry_after=12))["Retry-After"] == "12"
    assert headers_for(DatabaseLoginError("refused")) == {}  # not retryable: waiting mends nothing
