"""Typed sqlweave errors -> HTTP status and a JSON body ``{"error": {"code", "message", "hint"}}``.

Never a traceback: an unexpected exception becomes 500 with code ``internal`` and no details (the log
has them, one JSON line).

>>> from sqlweave.errors import RefusedStatementError, QueryTimeoutError
>>> status_for(RefusedStatementError("DROP is not a read"))
400
>>> status_for(QueryTimeoutError("too slow"))
504
>>> error_body(RefusedStatementError("DROP is not a read"))["error"]["code"]
'refused_statement'
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import DatabaseUnavailableError, SqlweaveError, StorageError
from ..logs import log_event
from ..text import well_formed


class HTTPProblem(SqlweaveError):
    """A request-level problem the server itself finds (authentication, limits, malformed bodies, ...)."""

    code = "bad_request"
    default_hint = 'Check the request against the API schema (GET /openapi.json).'
    http_status = 400

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None,
                 headers: dict[str, str] | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        if status is not None:
            self.http_status = status
        if code is not None:
            self.code = code
        self.headers = headers or {}


class UnauthorizedError(HTTPProblem):
    code = "unauthorized"
    http_status = 401
    default_hint = "Send the server's API key as 'Authorization: Bearer KEY' or 'X-API-Key: KEY'."


class RateLimitedError(HTTPProblem):
    code = "rate_limited"
    http_status = 429
    retryable = True
    default_hint = "Slow down: retry after the number of seconds in Retry-After."


class RequestTooLargeError(HTTPProblem):
    code = "request_too_large"
    http_status = 413
    default_hint = "Send a shorter question or SQL text."


class InvalidRequestError(HTTPProblem):
    code = "invalid_request"
    http_status = 422
    default_hint = "Check the request body against the API schema (GET /openapi.json)."


class UnknownAnswerError(HTTPProblem):
    """Feedback names an answer this server did not give to this caller (or changes its question or SQL)."""

    code = "unknown_answer"
    default_hint = 'Send feedback with the answer_id, question and sql of an answer /api/ask gave you, unchanged.'
    http_status = 422


class NotFoundError(HTTPProblem):
    code = "not_found"
    default_hint = "The API's paths are listed at GET /openapi.json."
    http_status = 404


log = logging.getLogger("sqlweave.server")


def status_for(err: SqlweaveError) -> int:
    """The HTTP status of a typed error: its class's ``http_status`` (500 for one the server does not know)."""
    return int(err.http_status)


def error_dict(err: SqlweaveError) -> dict[str, Any]:
    """``{"code", "message", "hint", "retryable"}``: what a client may see of an error (as the MCP door says it)."""
    return {"code": err.code, "message": well_formed(err.message), "hint": well_formed(err.hint or ""),
            "retryable": bool(err.retryable)}


def error_body(err: SqlweaveError) -> dict[str, Any]:
    return {"error": error_dict(err)}


#: ``Retry-After`` (seconds) of a 503 that may pass by itself (a database away, a store locked) and names no time.
RETRY_AFTER_S = 5


def headers_for(err: SqlweaveError) -> dict[str, str]:
    """Extra response headers: ``Retry-After`` for busy and rate-limited answers, and for any retryable 503."""
    headers = dict(getattr(err, "headers", {}) or {})
    retry = getattr(err, "retry_after", None)
    if retry is None and err.retryable and status_for(err) == 503:
        retry = RETRY_AFTER_S
    if retry is not None:
        headers.setdefault("Retry-After", str(int(retry)))
    return headers


INTERNAL = {"error": {"code": "internal", "message": "the server failed to answer this request",
                      "hint": "Try again; if it keeps failing, the server log has the details.", "retryable": True}}


def install_handlers(app: Any) -> None:
    """Register the JSON error handlers on a FastAPI app."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    async def sqlweave_error(request: Any, err: SqlweaveError) -> JSONResponse:
        if isinstance(err, DatabaseUnavailableError):  # the operator's side: what the driver said, in the log
            log_event(log, "database_unavailable", level=logging.ERROR, path=request.url.path,
                      error=err.message, driver=str(err.details.get("driver", "")))
        if isinstance(err, StorageError):  # names a file of the server's: in the log, not in the answer
            log_event(log, "storage_error", level=logging.ERROR, path=request.url.path, error=err.message)
            err = StorageError("the server cannot keep this right now",
                               hint="Try again later; the server's operator can see why in the server log.")
        return JSONResponse(error_body(err), status_code=status_for(err), headers=headers_for(err))

    async def validation_error(_request: Any, err: RequestValidationError) -> JSONResponse:
        errors = err.errors()
        if any(e.get("type") == "json_invalid" for e in errors):  # decided by pydantic's type, not its words
            body = error_body(InvalidRequestError(
                "the request body is not valid JSON",
                hint='Send one JSON object, e.g. {"database": "shop", "question": "How many customers?"}, with '
                     "Content-Type: application/json."))
            return JSONResponse(body, status_code=422)
        problems = []
        for e in errors[:5]:
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body" and not isinstance(p, int)) or "body"
            problems.append(f"{where}: {e.get('msg', 'invalid')}")
        body = error_body(InvalidRequestError("the request is not valid: " + "; ".join(problems)))
        return JSONResponse(body, status_code=422)

    async def http_error(_request: Any, err: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized", 413: "request_too_large",
                400: "bad_request"}.get(err.status_code, "http_error")
        message = {404: "no such resource", 405: "this method is not allowed here"}.get(
            err.status_code, str(err.detail) if isinstance(err.detail, str) else "request failed")
        hint = {413: RequestTooLargeError.default_hint,
                404: "The API's paths are listed at GET /openapi.json; the page is at /.",
                405: "The API's paths and their methods are listed at GET /openapi.json."}.get(
            err.status_code, "Check the request against the API schema (GET /openapi.json).")
        return JSONResponse({"error": {"code": code, "message": message, "hint": hint, "retryable": False}},
                            status_code=err.status_code, headers=getattr(err, "headers", None))

    app.add_exception_handler(SqlweaveError, sqlweave_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
