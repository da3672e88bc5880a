"""Names written by people in side files (``table.column``, each part bare or quoted with ``"``, backticks or
``[]``), as the knowledge file's joins and the access policy's hidden columns take them.

>>> split_column('orders."Customer ID"')
('orders', 'Customer ID')
>>> split_column("[order items].qty")
('order items', 'qty')
>>> split_column("orders") is None
True
"""

from __future__ import annotations

import re

_PART = r'"[^"]+"|`[^`]+`|\[[^\]]+\]|[^\s."`\[\]]+'
_COLUMN_REF = re.compile(rf"^\s*({_PART})\s*\.\s*({_PART})\s*$")


def unquote(name: str) -> str:
    """``name`` without the quotes around it (``"x"``, backticks, ``[x]``)."""
    return name[1:-1] if name[:1] in "\"`[" and len(name) > 1 else name


def split_column(text: str) -> tuple[str, str] | None:
    """``(table, column)`` of a ``table.column`` reference, unquoted, or ``None`` when it is not one."""
    m = _COLUMN_REF.match(text)
    return None if m is None else (unquote(m.group(1)), unquote(m.group(2)))


__all__ = ["split_column", "unquote"]
