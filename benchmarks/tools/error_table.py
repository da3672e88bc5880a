"""Why the wrong answers of a run are wrong: every miss classified from the ASTs of prediction and gold.

    .venv/bin/python benchmarks/tools/error_table.py .eval-runs/arch-before/default --out benchmarks/results/errors-default-200.json

Reads a run folder's ``results.jsonl`` (``sqlweave eval --out FOLDER``); prints a Markdown table of the kinds of
mistake (:mod:`sqlweave.eval.error_kinds`), overall and by hardness, with one example question per kind; writes
the counts and every classified question as JSON. Several folders give one column each.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import write_json  # noqa: E402
from sqlweave.eval.error_kinds import KINDS, classify
from sqlweave.eval.runner import load_results


def table(folder: Path) -> dict:
    results = load_results(folder)
    wrong = [r for r in results if not r.match]
    kinds = {r.id: classify(r.prediction, r.gold, executable=r.executable) for r in wrong}
    by_level: dict[str, Counter[str]] = {}
    for r in wrong:
        by_level.setdefault(r.hardness, Counter())[kinds[r.id]] += 1
    return {"run": str(folder), "questions": len(results), "wrong": len(wrong), "kinds": dict(Counter(kinds.values())),
            "by_hardness": {lv: dict(c) for lv, c in by_level.items()},
            "questions_by_kind": {k: [i for i, v in kinds.items() if v == k] for k in KINDS},
            "example": {k: next(({"id": r.id, "question": r.question, "gold": r.gold, "prediction": r.prediction}
                                 for r in wrong if kinds[r.id] == k), None) for k in KINDS}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    tables = [table(f) for f in args.runs]
    print("| kind of mistake | " + " | ".join(f"{Path(t['run']).name} ({t['wrong']} wrong of {t['questions']})"
                                             for t in tables) + " |")
    print("|---|" + "---|" * len(tables))
    for kind in KINDS:
        cells = [f"{t['kinds'].get(kind, 0)} ({100 * t['kinds'].get(kind, 0) / max(1, t['wrong']):.0f}%)"
                 for t in tables]
        if any(t["kinds"].get(kind) for t in tables):
            print(f"| {kind} | " + " | ".join(cells) + " |")
    if args.out:
        write_json(args.out, tables if len(tables) > 1 else tables[0])


if __name__ == "__main__":
    main()
