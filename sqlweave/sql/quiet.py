"""Keep sqlglot's warnings about text sqlweave did not write off the user's terminal.

When sqlglot meets a statement it cannot read, it logs a warning that quotes the text ("'set of values. ...'
contains unsupported syntax. Falling back to parsing as a 'Command'."). sqlweave parses model output and users'
SQL all the time, and tries pieces of a model's prose to find the SQL in it; with no logging configured, Python's
last-resort handler then printed that prose raw on stderr, in the middle of the CLI's output, control characters
included. Inside :func:`reading_untrusted_text` (each pipeline stage, each ``Database.execute``), sqlglot's records
are dropped; its warnings anywhere else in the process are left alone. What went wrong is still reported, as
sqlweave's own typed errors and trace notes.

>>> import logging, sqlglot
>>> with reading_untrusted_text():
...     _ = sqlglot.parse("set of values.")  # no warning printed
"""

from __future__ import annotations

import contextvars
import logging
from contextlib import contextmanager
from typing import Iterator

_READING = contextvars.ContextVar("sqlweave_reading_untrusted_text", default=False)


class _DropWhileReading(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _READING.get()


_FILTER = _DropWhileReading()
for _name in ("sqlglot",):
    _logger = logging.getLogger(_name)
    if not any(isinstance(f, _DropWhileReading) for f in _logger.filters):
        _logger.addFilter(_FILTER)


@contextmanager
def reading_untrusted_text() -> Iterator[None]:
    """Within this block (this thread or task only), sqlglot's log records are dropped."""
    token = _READING.set(True)
    try:
        yield
    finally:
        _READING.reset(token)
