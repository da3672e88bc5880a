"""Untrusted text: made well-formed for models, made visible for people.

Almost every string sqlweave shows came from someone else: cell values, names and comments from the
database, SQL and explanations from the model, questions and paths from the user, messages from drivers.
Two rules apply to all of them, and they live here so every door applies the same ones:

- :func:`visible` is what a person sees: control characters (C0, DEL, C1), escape sequences,
  bidirectional overrides, zero-width and other invisible format characters, line and paragraph
  separators and lone surrogates (bytes that were not valid UTF-8) are written as visible escapes
  (``\\x1b``, ``\\u202e``, ``\\udcff``); very long text is cut with a marker that says how much is left out.
  The terminal (:mod:`sqlweave.display`), the web page and CSV export build on it.
- :func:`well_formed` is what a model or a tokenizer receives: lone surrogates become U+FFFD, exactly
  what decoding the original bytes with ``errors="replace"`` gives, so prompts do not depend on how
  the database layer decoded them.

>>> visible("\\x1b]0;pwned\\x07\\x1b[2J")
'\\\\x1b]0;pwned\\\\x07\\\\x1b[2J'
>>> visible("abc\\u202edef")
'abc\\\\u202edef'
>>> visible("line one\\nline two"), visible("line one\\nline two", keep_newlines=True)
('line one\\\\nline two', 'line one\\nline two')
>>> visible("x" * 30, max_chars=10)
'xxxxxxxxxx… (20 more characters)'
>>> well_formed(b"caf\\xe9".decode("utf-8", "surrogateescape"))
'caf\\ufffd'
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

#: Values longer than this are cut in table cells unless a door asks otherwise.
DEFAULT_MAX_CHARS = 1000

#: Unicode categories that are invisible or change how the text around them is shown:
#: controls, format characters (bidi overrides, zero-width ...), surrogates, line/paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}

_SURROGATE = re.compile("[\ud800-\udfff]")


@lru_cache(maxsize=4096)
def _is_hidden(ch: str) -> bool:
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES


def escape_char(ch: str) -> str:
    """The visible escape of one character: ``\\x1b``, ``\\u202e`` or ``\\U000e0041``.

    >>> escape_char("\\x00"), escape_char("\\u200b"), escape_char("\\U000e0041")
    ('\\\\x00', '\\\\u200b', '\\\\U000e0041')
    """
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


#: Bytes shown at most where a person or a model reads them (tables, HTTP, MCP); exports keep every byte.
SHOWN_BYTES = 512


def hex_literal(data: bytes | bytearray | memoryview, max_bytes: int | None = None) -> str:
    """Bytes as the SQL hex literal ``X'...'``, cut after ``max_bytes`` with how many more there are.

    >>> hex_literal(b"\\xde\\xad\\xbe\\xef"), hex_literal(b"\\x00" * 3, max_bytes=2)
    ("X'deadbeef'", "X'0000'… (1 more bytes)")
    """
    raw = bytes(data)
    if max_bytes is None or len(raw) <= max_bytes:
        return f"X'{raw.hex()}'"
    return f"X'{raw[:max_bytes].hex()}'… ({len(raw) - max_bytes} more bytes)"


def as_text(value: Any) -> str:
    """Any value as the text a person should see: ``None`` is ``NULL``, bytes are shown as a hex literal.

    >>> as_text(None), as_text(3.5), as_text(b"\\x00\\xff")
    ('NULL', '3.5', "X'00ff'")
    """
    if value is None:
        return "NULL"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return hex_literal(value, SHOWN_BYTES)
    if isinstance(value, str):
        return value
    try:
        return str(value)
    except Exception:  # a driver type whose __str__ fails must not break a table
        return f"<{type(value).__name__}>"


def visible(value: Any, *, max_chars: int | None = DEFAULT_MAX_CHARS, keep_newlines: bool = False) -> str:
    """``value`` as text in which every character is one a person can see.

    Hidden characters become escapes (:func:`escape_char`); with ``keep_newlines`` a ``\\n`` stays a
    line break (SQL, prompts, messages), and a tab stays a tab. Text longer than ``max_chars``
    characters is cut and ends with ``… (N more characters)``. Never raises.
    """
    text = as_text(value)
    cut = 0
    if max_chars is not None and len(text) > max_chars:
        cut = len(text) - max_chars
        text = text[:max_chars]
    out: list[str] = []
    for ch in text:
        if ch.isprintable() and not _is_hidden(ch):
            out.append(ch)
        elif keep_newlines and ch in "\n\t":
            out.append(ch)
        elif ch == " ":
            out.append(ch)
        elif _is_hidden(ch) or not ch.isprintable():
            out.append(escape_char(ch))
        else:
            out.append(ch)
    shown = "".join(out)
    if cut:
        shown += f"… ({cut} more character{'s' if cut != 1 else ''})"
    return shown


def well_formed(text: str) -> str:
    """``text`` with every lone surrogate (an undecodable byte kept by ``surrogateescape``) as U+FFFD.

    The result is exactly what decoding the original bytes with ``errors="replace"`` gives, always
    encodes as UTF-8, and is ``text`` itself when there was nothing to replace.
    """
    if not _SURROGATE.search(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # surrogates that are not decoding escapes (e.g. from JSON): one by one
        return _SURROGATE.sub("\ufffd", text)
