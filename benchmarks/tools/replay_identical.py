"""Are two evaluation folders the same answers, question by question? (A refactoring must leave them so.)

    .venv/bin/python benchmarks/tools/replay_identical.py BEFORE_DIR AFTER_DIR [--name NAME] [--out benchmarks/results]

Each folder is an ``sqlweave eval --out`` folder (``results.jsonl``) or a ``benchmarks/accuracy/bench_defog.py --out``
folder (one ``PRESET__ENGINE.jsonl`` per column, whose questions are keyed ``PRESET__ENGINE/id`` and whose match
is ``correct``). For every question of either, the predicted SQL and the match are compared; the table prints how many questions each holds, how many have the same
prediction, the same match, and lists those that differ. The figures go to ``OUT/replay-identical-NAME.json``.
Exit status 1 when a question differs or is missing from one side.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md


def read(folder: Path) -> dict[str, dict[str, Any]]:
    """Each question of ``folder`` by id, with its ``prediction``, ``match`` and ``error``."""
    rows: dict[str, dict[str, Any]] = {}
    files = [(folder / "results.jsonl", "")] if (folder / "results.jsonl").is_file() else [
        (f, f"{f.stem}/") for f in sorted(folder.glob("*__*.jsonl"))]
    for path, prefix in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if "match" not in row:
                    row["match"] = row.get("correct")
                rows[prefix + str(row["id"])] = row
    return rows


def compare(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ids = sorted(set(before) | set(after))
    missing = [i for i in ids if i not in before or i not in after]
    both = [i for i in ids if i in before and i in after]
    sql_diff = [i for i in both if before[i].get("prediction") != after[i].get("prediction")]
    match_diff = [i for i in both if bool(before[i].get("match")) != bool(after[i].get("match"))]
    error_diff = [i for i in both if before[i].get("error") != after[i].get("error")]
    return {"questions": len(ids), "compared": len(both), "missing": missing,
            "same_prediction": len(both) - len(sql_diff), "same_match": len(both) - len(match_diff),
            "prediction_differs": sql_diff, "match_differs": match_diff, "error_differs": error_diff,
            "matches_before": sum(bool(before[i].get("match")) for i in both),
            "matches_after": sum(bool(after[i].get("match")) for i in both)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--name", default=None, help="name of the comparison (default: the after folder's name)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = ap.parse_args(argv)
    before, after = read(args.before), read(args.after)
    result = compare(before, after)
    result.update(before=args.before.name, after=args.after.name)  # folder names: no path of this machine
    print(f"{'questions':<22}{result['questions']:>6}")
    for key in ("compared", "same_prediction", "same_match", "matches_before", "matches_after"):
        print(f"{key:<22}{result[key]:>6}")
    for key in ("missing", "prediction_differs", "match_differs", "error_differs"):
        print(f"{key:<22}{len(result[key]):>6}  {' '.join(result[key][:20])}")
    for i in result["prediction_differs"][:10]:
        print(f"  {i}\n    before: {before[i].get('prediction')}\n    after:  {after[i].get('prediction')}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"replay-identical-{args.name or args.after.name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"written: {path}")
    identical = not (result["missing"] or result["prediction_differs"] or result["match_differs"])
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
