"""Structured logs: one JSON object per line, so no question, value or SQL can forge a log line.

Every string goes through :func:`json.dumps` with ASCII escapes, so a newline, a carriage return, an
escape sequence or a bidi override inside a question becomes ``\\n``, ``\\u001b``, ``\\u202e`` in the line:
a log reader sees one event per line, whatever the text held. The server uses this for its request
log and uvicorn's own messages; any program embedding sqlweave can use it too.

>>> import io, json, logging
>>> stream = io.StringIO()
>>> logger = configure_json_logging(stream=stream, name="sqlweave.doc")
>>> log_event(logger, "ask", question="How many?\\n{\\"level\\": \\"CRITICAL\\"}\\x1b[2J", status=200)
>>> lines = stream.getvalue().splitlines()
>>> len(lines), json.loads(lines[0])["question"].startswith("How many?\\n")
(1, True)
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

#: Attributes every LogRecord has; anything else on a record came from ``extra=`` and is logged as a field.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None)).keys()) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line: time, level, logger, message and the record's extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_") and key != "color_message":  # uvicorn's ANSI copy
                entry[key] = value
        if record.exc_info:
            # The exception's type and message only: a traceback spans lines and may quote user data.
            exc = record.exc_info[1]
            entry["exception"] = f"{type(exc).__name__}: {exc}"
        return json.dumps(entry, ensure_ascii=True, default=str)


def configure_json_logging(stream: TextIO | None = None, *, level: int = logging.INFO,
                           name: str = "sqlweave") -> logging.Logger:
    """Send logger ``name`` (and its children) to ``stream`` (stderr by default) as JSON lines; returns it."""
    logger = logging.getLogger(name)
    for handler in list(logger.handlers):
        if getattr(handler, "_sqlweave_json", False):
            logger.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._sqlweave_json = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger


def log_event(logger: logging.Logger, event: str, *, level: int = logging.INFO, **fields: Any) -> None:
    """Log ``event`` with structured ``fields`` (each becomes a JSON field, never part of the message text)."""
    clash = _STANDARD.intersection(fields)
    if clash:  # a field named like a LogRecord attribute would make logging raise: keep it under another name
        fields = {(f"field_{k}" if k in clash else k): v for k, v in fields.items()}
    logger.log(level, event, extra=fields)
