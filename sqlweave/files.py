"""Files and folders sqlweave keeps as it works.

:func:`append_jsonl` appends to the files it grows (example pools, simplified questions, feedback): JSON lines
that an interrupted write cannot corrupt for the next reader. :func:`private_folder` makes the folders of its
cache, which hold what it read from the user's databases (schema samples, value indexes, copies of data files,
questions and answers): each folder it creates is readable by the user alone (``0700``), as ``~/.ssh`` is.

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
import os
from pathlib import Path
from typing import Any, Iterable


def private_folder(path: Path) -> Path:
    """Create the folder ``path`` and each missing folder above it readable by the user alone (``0700``), and
    return ``path``. A folder that exists keeps its permissions (an administrator's shared cache stays shared).

    >>> import stat, tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> made = private_folder(root / "cache" / "schemas")
    >>> [oct(stat.S_IMODE(p.stat().st_mode)) for p in (root / "cache", made)]
    ['0o700', '0o700']
    """
    missing = []
    folder = Path(path)
    while not folder.is_dir():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:  # another process made it meanwhile (a file there fails below, as mkdir would)
            if not folder.is_dir():
                raise
        else:
            os.chmod(folder, 0o700)  # whatever the umask: only the user's own bits count here
    return path


def append_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Append ``rows`` to ``path`` as JSON lines (creating its folder). A last line cut short by an
    interruption is ended first, so it cannot swallow the first new row; readers skip it."""
    private_folder(path.parent)
    with path.open("a+b") as fh:
        fh.seek(0, 2)
        if fh.tell() > 0:
            fh.seek(-1, 2)
            if fh.read(1) != b"\n":
                fh.write(b"\n")
        for row in rows:
            fh.write((json.dumps(row) + "\n").encode("utf-8"))
        fh.flush()


__all__ = ["append_jsonl", "private_folder"]
