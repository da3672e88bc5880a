"""Files sqlweave appends to as it works (example pools, simplified questions, feedback): JSON lines that an
interrupted write cannot corrupt for the next reader.

>>> import json, tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.jsonl"
>>> path.write_bytes(b'{"a": 1}\\n{"a": 2, "cut sho')   # a run killed mid-line
26
>>> append_jsonl(path, [{"a": 3}])
>>> [json.loads(line)["a"] for line in path.read_text().splitlines() if line.endswith("}")]
[1, 3]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable


def append_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Append ``rows`` to ``path`` as JSON lines (creating its folder). A last line cut short by an
    interruption is ended first, so it cannot swallow the first new row; readers skip it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as fh:
        fh.seek(0, 2)
        if fh.tell() > 0:
            fh.seek(-1, 2)
            if fh.read(1) != b"\n":
                fh.write(b"\n")
        for row in rows:
            fh.write((json.dumps(row) + "\n").encode("utf-8"))
        fh.flush()


__all__ = ["append_jsonl"]
