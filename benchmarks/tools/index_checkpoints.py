"""The index of the kept checkpoints: one row per folder of ``benchmarks/checkpoints`` (no model).

For each folder: the pipeline, the model, the data set, how many questions it scored, their EX, the date of the
run (all read from its ``run.json`` and its results), and the pages that cite it: the sections of BENCHMARKS.md,
the experiment pages and the documentation that name the folder. A folder cited nowhere is listed as such.

    .venv/bin/python benchmarks/tools/index_checkpoints.py          # writes benchmarks/checkpoints/INDEX.md
    .venv/bin/python benchmarks/tools/index_checkpoints.py --check  # exits 1 if INDEX.md is not current

Three layouts are read: a ``sqlweave eval`` folder (``run.json`` and ``results.jsonl``, one line per question), a
``bench_defog.py`` folder (``run.json`` and one ``PRESET__ENGINE.jsonl`` per column, EX given per column), and a
``bench_large_schema.py`` folder (``results.jsonl`` alone, one line per question and setting, EX per setting).
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import CHECKPOINTS, ROOT, parser, scored  # noqa: E402

INDEX = CHECKPOINTS / "INDEX.md"


@dataclass(frozen=True)
class Checkpoint:
    """One row of the index."""

    name: str
    pipeline: str
    model: str
    dataset: str
    questions: str
    ex: str
    date: str
    cited_by: tuple[str, ...]


def _pct(right: int, n: int) -> str:
    return f"{100.0 * right / n:.1f}" if n else "-"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:  # a torn last line of a stopped run
            continue
    return rows


def _columns(groups: dict[str, dict[str, bool]]) -> tuple[str, str]:
    """``(questions, EX)`` cells for results grouped by column: one figure each when there is one column."""
    if len(groups) == 1:
        (rows,) = groups.values()
        return str(len(rows)), _pct(sum(rows.values()), len(rows))
    sizes = {len(v) for v in groups.values()}
    return (f"{sizes.pop()} in each" if len(sizes) == 1 else ", ".join(f"{k} {len(v)}" for k, v in groups.items()),
            ", ".join(f"{k} {_pct(sum(v.values()), len(v))}" for k, v in groups.items()))


def read_folder(folder: Path) -> dict[str, str]:
    """What a checkpoint folder says of its run: pipeline, model, dataset, questions, ex and date."""
    run = json.loads((folder / "run.json").read_text(encoding="utf-8")) if (folder / "run.json").exists() else {}
    date = str(run.get("created", "-"))[:10]
    columns = sorted(folder.glob("*__*.jsonl"))
    if columns:  # bench_defog.py: PRESET__ENGINE.jsonl
        groups: dict[str, dict[str, bool]] = {}
        models = {str(run.get("model", "-"))}
        for path in columns:
            rows = _jsonl(path)
            groups[path.stem.replace("__", "/")] = {r["id"]: bool(r["correct"]) for r in rows}
            models |= {r["model"] for r in rows if r.get("model")}
        questions, ex = _columns(groups)
        presets = sorted({p.stem.split("__")[0] for p in columns})
        return {"pipeline": ", ".join(presets), "model": ", ".join(sorted(models - {"-"}) or ["-"]),
                "dataset": "defog", "questions": questions, "ex": ex, "date": date}
    rows = _jsonl(folder / "results.jsonl")
    if rows and "setting" in rows[0]:  # bench_large_schema.py: one line per question and setting
        by_setting: dict[str, dict[str, bool]] = defaultdict(dict)
        for r in rows:
            by_setting[r["setting"]][r["id"]] = bool(r["match"])
        questions, ex = _columns(dict(sorted(by_setting.items())))
        budget = {r.get("schema_budget") for r in rows} - {None}
        # one --ex-budget for every question; without it each question's budget follows from the context
        pipeline = "default, schema budget " + (str(budget.pop()) if len(budget) == 1 else "from the context")
        return {"pipeline": pipeline, "model": str(run.get("model", "-")), "dataset": "spider-dev, large schema",
                "questions": questions, "ex": ex, "date": date}
    results = scored(folder)  # sqlweave eval: one line per question (the last one of a repeated id)
    return {"pipeline": str(run.get("pipeline", "-")), "model": str(run.get("model", "-")),
            "dataset": str(run.get("dataset", "-")), "questions": str(len(results)),
            "ex": _pct(sum(bool(r["match"]) for r in results.values()), len(results)), "date": date}


def citing_pages() -> list[Path]:
    """The pages whose mentions of a checkpoint count: BENCHMARKS.md, the experiment pages, the docs, README."""
    return [ROOT / "BENCHMARKS.md", *sorted((ROOT / "benchmarks" / "experiments").glob("*.md")),
            *sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]


def _mentions(name: str) -> re.Pattern[str]:
    # a name not inside a longer one: best-200 is not cited by det-best-200 nor by best-2000
    return re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w-])")


def citations(names: list[str], pages: list[Path], root: Path = ROOT) -> dict[str, list[str]]:
    """For each checkpoint name, where it is cited: ``BENCHMARKS.md § <section>`` or the page's path (from
    ``root``): ``citations(["det-best-972"], citing_pages())["det-best-972"][0]``."""
    found: dict[str, list[str]] = {name: [] for name in names}
    patterns = {name: _mentions(name) for name in names}
    for page in pages:
        if not page.exists():
            continue
        rel = page.relative_to(root).as_posix()
        section = ""
        for line in page.read_text(encoding="utf-8").splitlines():
            if page.name == "BENCHMARKS.md" and re.match(r"#{2,3} ", line):
                section = line.lstrip("#").strip()
            for name, pattern in patterns.items():
                if pattern.search(line):
                    where = f"{rel} § {section}" if page.name == "BENCHMARKS.md" and section else rel
                    if where not in found[name]:
                        found[name].append(where)
    return found


def index(checkpoints: Path = CHECKPOINTS, pages: list[Path] | None = None) -> list[Checkpoint]:
    """Every checkpoint folder, in name order: ``index()[0].name``."""
    folders = sorted(p for p in checkpoints.iterdir() if p.is_dir())
    cited = citations([f.name for f in folders], citing_pages() if pages is None else pages)
    return [Checkpoint(f.name, **read_folder(f), cited_by=tuple(cited[f.name])) for f in folders]


def _link(where: str) -> str:
    page, _, section = where.partition(" § ")
    target = "../../" + page if not page.startswith("benchmarks/") else "../" + page[len("benchmarks/"):]
    label = page.rsplit("/", 1)[-1] if page.startswith("benchmarks/experiments/") else page
    return f"[{label}]({target})" + (f" § {section}" if section else "")


def render(rows: list[Checkpoint]) -> str:
    """INDEX.md: the table of every checkpoint, then the folders no page cites."""
    lines = [
        "# Checkpoint index",
        "",
        "<!-- Generated by benchmarks/tools/index_checkpoints.py; do not edit by hand. -->",
        "",
        "Every folder of `benchmarks/checkpoints/` (what each holds: [README.md](README.md)): the run's pipeline,",
        "model and data set, how many questions it scored and their EX (%), the date the run began, and the pages",
        "that cite it. EX is execution match over the questions in the folder, as `sqlweave eval` counts it; defog's",
        "columns are scored by defog's own rule, per preset and engine. A stopped run counts the questions it scored.",
        "",
        "| checkpoint | pipeline | model | dataset | questions | EX % | date | cited by |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cited = "; ".join(_link(w) for w in r.cited_by) or "cited nowhere"
        lines.append(f"| `{r.name}` | `{r.pipeline}` | {r.model} | {r.dataset} | {r.questions} | {r.ex} | {r.date} "
                     f"| {cited} |")
    nowhere = [r.name for r in rows if not r.cited_by]
    lines += ["", f"{len(rows)} checkpoints; {len(nowhere)} cited by no page of BENCHMARKS.md, the experiments, "
              "the docs or the README" + (":" if nowhere else ".")]
    if nowhere:
        lines += [""] + [f"- `{name}`" for name in nowhere]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--check", action="store_true", help="exit 1 if INDEX.md is not what this script writes")
    ap.add_argument("--out", type=Path, default=INDEX)
    args = ap.parse_args(argv)
    text = render(index())
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is not current: run benchmarks/tools/index_checkpoints.py", file=sys.stderr)
            return 1
        print(f"{args.out} is current")
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}: "
          f"{text.count(chr(10) + '| `')} checkpoints")
    return 0


if __name__ == "__main__":
    sys.exit(main())
