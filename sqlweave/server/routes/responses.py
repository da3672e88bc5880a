"""The error responses every route documents: ``{"error": {"code", "message", "hint", "retryable"}}``."""

from __future__ import annotations

from typing import Any

from .. import models as m

#: Status -> the error body's model, as FastAPI's ``responses=`` takes it.
ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": m.ErrorBody} for s in (400, 401, 404, 409, 413, 422, 429, 500, 502, 503, 504)}
