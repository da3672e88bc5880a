"""What the benchmark scripts share: where things are, the machine they ran on, the JSON they write, the run
folders they read back.

Every script under ``benchmarks/<area>/`` is run as a file from the repository's root and begins with the same
bootstrap, which puts the repository first on ``sys.path`` so that the script imports this checkout's sqlweave
and this module (see ``benchmarks/README.md``)::

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
    from benchmarks.common import ROOT, SPIDER, save

    save(RESULTS / "scoring.json", {"rows": rows})  # with the date, the machine and the command
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
from datetime import date
from pathlib import Path
from typing import Any, Iterator

#: The repository's root.
ROOT = Path(__file__).resolve().parents[1]
#: The benchmark scripts, their samples, data, results and kept checkpoints.
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "results"
SAMPLES = BENCHMARKS / "samples"
CHECKPOINTS = BENCHMARKS / "checkpoints"
#: The benchmarks' data sets, beside the repository (``../shared/data``): Spider, defog, ...
SHARED_DATA = ROOT.parent / "shared" / "data"
SPIDER = SHARED_DATA / "spider"
DEFOG = SHARED_DATA / "defog"


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A script's argument parser, its ``--help`` the script's docstring as written:
    ``args = parser(__doc__).parse_args()``."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def machine() -> str:
    """The machine a figure was measured on, as the results name it: ``"x86_64, 2 cores"``."""
    return f"{platform.machine()}, {os.cpu_count()} cores"


def command() -> str:
    """The command that is running, as a reader would type it again: ``"python benchmarks/votes/vote_curve.py RUN"``."""
    return " ".join(["python", *sys.argv])


def write_json(out: Path, payload: Any) -> None:
    """Write ``payload`` as indented JSON to ``out``, creating its folder: ``write_json(RESULTS / "x.json", rows)``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")


def save(out: Path, payload: dict[str, Any]) -> None:
    """Write a script's figures as JSON, with the date, the machine and the command that produced them.

    >>> save(Path("/tmp/figures.json"), {"rows": []})  # doctest: +SKIP
    """
    write_json(out, {"date": date.today().isoformat(), "machine": machine(), "command": command(), **payload})


def traces(folder: Path) -> Iterator[dict[str, Any]]:
    """The trace lines of a run folder, kept plain (``traces.jsonl``) or compressed (``traces.jsonl.gz``, as
    ``benchmarks/checkpoints`` keeps them): ``next(traces(CHECKPOINTS / "best-200"))["trace"]``."""
    plain, packed = folder / "traces.jsonl", folder / "traces.jsonl.gz"
    with (plain.open(encoding="utf-8") if plain.exists() else gzip.open(packed, "rt", encoding="utf-8")) as fh:
        for line in fh:
            yield json.loads(line)


def has_traces(folder: Path) -> bool:
    """Whether a run folder keeps its traces (plain or compressed), which :func:`traces` reads."""
    return any((folder / name).exists() for name in ("traces.jsonl", "traces.jsonl.gz"))


def scored(folder: Path) -> dict[str, dict[str, Any]]:
    """The results of a run folder, by question id: ``scored(CHECKPOINTS / "best-200")["spider-dev-0"]["ex"]``."""
    with (folder / "results.jsonl").open(encoding="utf-8") as fh:
        return {r["id"]: r for r in map(json.loads, fh)}
