"""Spider's databases as CSV files: `default` with the keys sqlweave reads from the data, and without keys.

    .venv/bin/python benchmarks/accuracy/bench_datafiles.py [--sample benchmarks/samples/spider-dev-200.json]
        [--model local:1.5b] [--pipeline default] [--runs .eval-runs] [--out benchmarks/results/datafiles-200.json]
        [--arms keys,nokeys,declared]

Each database of the sample is written as one CSV file per table (as ``benchmarks/schema/bench_infer_keys.py`` writes
them) and read as a folder of data files twice: with the keys :mod:`sqlweave.db.infer_keys` declares, and with no
keys at all, which is what data files give a tool that reads no keys from them. The pipeline answers every question
on both copies, an ordinary ``sqlweave eval`` run each (``RUNS/datafiles-keys-N`` and ``RUNS/datafiles-nokeys-N``,
checkpointed: a rerun resumes), and each answer is scored by the official rule against the gold query run on the
copy, then scored again against the gold query run on the original SQLite database, which is the score shown: a
gold query written for SQLite does not always run on DuckDB (a bare column in a ``GROUP BY`` query), so the first
score counts some right answers wrong. Rows are compared as ``benchmarks/accuracy/bench_dialects.py`` compares them (dates
as ISO text, numbers to 4 decimals), by Spider's rule (order only when gold orders, columns in any order). Both
arms run on DuckDB, so the difference between them is the keys'; the SQLite run of the same questions
(``--sqlite RUN``, optional) is shown beside them for scale, engine and types included.

A third arm, ``declared`` (``--arms keys,nokeys,declared``), reads the same CSV files and declares on the copy the
keys the SQLite file declares (single-column primary keys, and foreign keys to them), as far as DuckDB accepts them
(the keys it refuses are counted): the same engine and types with the keys a schema's author wrote, which parts
what the keys cost from what the engine and types cost. A fourth, ``knowledge``, is the keys arm with a knowledge
file per database whose ``joins`` are the SQLite file's foreign keys the data did not show: what a user who writes
them down gets.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, SPIDER, RESULTS, SAMPLES, save  # noqa: E402

from benchmarks.accuracy.bench_dialects import normal  # noqa: E402
from benchmarks.schema.bench_infer_keys import export  # noqa: E402

from sqlweave.database import Database  # noqa: E402
from sqlweave.db.datafiles import data_database  # noqa: E402
from sqlweave.db.infer_keys import Keys, declare_keys  # noqa: E402
from sqlweave.errors import SqlweaveError  # noqa: E402
from sqlweave.eval.metrics import order_matters, spider_result_eq  # noqa: E402
from sqlweave.eval.datasets import Dataset, load_spider  # noqa: E402
from sqlweave.eval.runner import load_results, run_eval, summarize  # noqa: E402
from sqlweave.eval.sample import read_sample  # noqa: E402
from sqlweave.llm.registry import get_llm  # noqa: E402
from sqlweave.presets import build_pipeline  # noqa: E402


class CopiedDataset(Dataset):
    """A dataset whose databases are the DuckDB copies of its CSV exports (with a knowledge file each in the
    ``knowledge`` arm)."""

    copies: dict[str, Path] = {}
    knowledge: dict[str, Path] = {}

    def db_path(self, db_id: str) -> Path:
        return self.copies[db_id]

    def descriptions_path(self, db_id: str) -> Path | None:
        return self.knowledge.get(db_id)


def knowledge_file(sqlite_path: Path, copy: Path, target: Path) -> tuple[Path, int]:
    """A knowledge file at ``target`` whose ``joins`` are the foreign keys ``sqlite_path`` declares and the copy's
    keys read from the data miss (what a user would write down for sqlweave): (the file, joins written)."""
    with Database.open(sqlite_path) as db:
        schema = db.schema()
    with Database.open(copy) as db:
        found = {(f.table.lower(), f.column.lower()) for f in db.schema().foreign_keys}
    keyed = {t.name.lower(): t.primary_key for t in schema.tables}
    joins = [f"{f.table}.{f.column} = {f.ref_table}.{f.ref_column}" for f in schema.foreign_keys
             if (f.table.lower(), f.column.lower()) not in found and keyed.get(f.ref_table.lower()) == (f.ref_column,)]
    target.write_text("joins:\n" + "".join(f"  - {json.dumps(j)}\n" for j in joins) if joins else "notes: []\n")
    return target, len(joins)


def rescored(results: list, copies: dict[str, Path], dataset: Dataset) -> list:
    """``results`` with ``match`` set by the gold query's rows on the original SQLite database."""
    out = []
    with ExitStack() as stack:
        opened: dict[Path, Database] = {}

        def db(path: Path) -> Database:  # each database opened once for the whole scoring
            if path not in opened:
                opened[path] = stack.enter_context(Database.open(path))
            return opened[path]

        for r in results:
            match = False
            if r.prediction:
                try:
                    pred = [tuple(normal(v) for v in row) for row in db(copies[r.db_id]).execute(r.prediction).rows]
                    gold = [tuple(normal(v) for v in row) for row in db(dataset.db_path(r.db_id)).execute(r.gold).rows]
                    match = spider_result_eq(gold, pred, order_matters(r.gold))
                except SqlweaveError:
                    match = False
            out.append(replace(r, match=match))
    return out


def declared_copy(sqlite_path: Path, folder: Path, target: Path) -> tuple[Path, int, int]:
    """A DuckDB copy of ``folder``'s CSV files at ``target`` with the keys ``sqlite_path`` declares: (the copy,
    keys declared, keys DuckDB refused)."""
    import duckdb

    shutil.copyfile(data_database(folder, keys=False), target)
    with Database.open(sqlite_path) as db:
        schema = db.schema()
    with duckdb.connect(str(target)) as con:
        names = {r[0].lower(): r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        columns = {t: {r[0].lower(): r[0] for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = ?", [t]).fetchall()} for t in names.values()}

        def name(table: str, column: str) -> tuple[str, str]:
            t = names[table.lower()]
            return t, columns[t][column.lower()]

        keys = Keys()
        for t in schema.tables:
            if len(t.primary_key) == 1:
                table, column = name(t.name, t.primary_key[0])
                keys.primary[table] = column
        for f in schema.foreign_keys:
            ref, ref_column = name(f.ref_table, f.ref_column)
            if keys.primary.get(ref) == ref_column:
                keys.foreign.append((*name(f.table, f.column), ref, ref_column))
        left_out = declare_keys(con, keys)
        refused = {t for t, *_ in left_out}
        declared = sum(t not in refused for t in keys.primary) + len(keys.foreign) - len(left_out)
    return target, declared, len(keys.primary) + len(keys.foreign) - declared


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=SPIDER)
    ap.add_argument("--sample", type=Path, default=SAMPLES / "spider-dev-200.json")
    ap.add_argument("--model", default="local:1.5b")
    ap.add_argument("--pipeline", default="default")
    ap.add_argument("--runs", type=Path, default=ROOT / ".eval-runs")
    ap.add_argument("--sqlite", type=Path, default=None, help="a sqlweave eval run of the same questions on SQLite")
    ap.add_argument("--out", type=Path, default=None, help="default: benchmarks/results/datafiles-N.json")
    ap.add_argument("--arms", default="keys,nokeys",
                    help="keys (read from the data), nokeys, declared (the SQLite file's keys), knowledge (keys read "
                         "and a knowledge file's joins), comma-separated")
    args = ap.parse_args()
    dataset = load_spider(args.data_dir, "dev")
    examples = read_sample(args.sample, dataset.examples, dataset.left_out)
    n = len(examples)
    llm = get_llm(args.model, cache=True)
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = set(arms) - {"keys", "nokeys", "declared", "knowledge"}
    if unknown:
        ap.error(f"unknown arm(s): {', '.join(sorted(unknown))}")
    rows, refused = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        folders = {}
        for db_id in sorted({e.db_id for e in examples}):
            folders[db_id] = Path(tmp) / db_id
            folders[db_id].mkdir()
            export(dataset.db_path(db_id), folders[db_id])
        for arm in arms:
            copied = CopiedDataset(**{f: getattr(dataset, f) for f in dataset.__dataclass_fields__})
            CopiedDataset.knowledge = {}
            if arm == "knowledge":
                CopiedDataset.copies = {db_id: data_database(folder) for db_id, folder in folders.items()}
                written = 0
                for db_id in folders:
                    CopiedDataset.knowledge[db_id], joins = knowledge_file(
                        dataset.db_path(db_id), CopiedDataset.copies[db_id], Path(tmp) / f"{db_id}.yaml")
                    written += joins
                print(f"knowledge: {written} joins written down")
            elif arm == "declared":
                CopiedDataset.copies, counts = {}, [0, 0]
                for db_id, folder in folders.items():
                    CopiedDataset.copies[db_id], kept, lost = declared_copy(
                        dataset.db_path(db_id), folder, Path(tmp) / f"{db_id}.declared.duckdb")
                    counts[0] += kept
                    counts[1] += lost
                refused[arm] = counts[1]
                print(f"declared: {counts[0]} keys declared, {counts[1]} refused by DuckDB")
            else:
                CopiedDataset.copies = {db_id: data_database(folder, keys=arm == "keys")
                                        for db_id, folder in folders.items()}
            out = args.runs / f"datafiles-{arm}-{n}"
            # the nokeys arm: what data files give a tool that reads no keys (sqlweave would read them at
            # introspection too, from a copy that declares none)
            results = run_eval(replace(copied, name=f"{dataset.name} as CSV files ({arm})",
                                       keys_from_data=arm != "nokeys"), examples,
                               build_pipeline(args.pipeline), llm, out,
                               meta={"data_files": arm, "sample": str(args.sample)})
            rows[arm] = (out, rescored(results, CopiedDataset.copies, dataset))
    table = {}
    if args.sqlite:
        ids = {e.id for e in examples}
        table["sqlite"] = summarize([r for r in load_results(args.sqlite) if r.id in ids])
    for arm, (_, results) in rows.items():
        table[f"csv, {arm}"] = summarize(results)
    matches = {arm: {r.id: r.match for r in results} for arm, (_, results) in rows.items()}
    pairs = [(a, b) for a, b in (("keys", "nokeys"), ("declared", "keys"), ("knowledge", "keys"))
             if a in matches and b in matches]
    differ = {f"right_only_{a}_not_{b}": sorted(i for i in matches[a] if matches[a][i] and not matches[b].get(i))
              for a, b in pairs + [(b, a) for a, b in pairs]}
    print(f"| databases | n | EX | easy | medium | hard | extra | median s / q |\n|---|---|---|---|---|---|---|---|")
    for name, s in table.items():
        by = s.by_level
        cells = " | ".join(f"{by[h][1]:.1f}" if h in by else "-" for h in ("easy", "medium", "hard", "extra"))
        print(f"| {name} | {s.n} | {s.ex:.1f} | {cells} | {s.median_seconds:.2f} |")
    for a, b in pairs:
        print(f"{a} against {b}: {len(differ[f'right_only_{a}_not_{b}'])} right only with {a}, "
              f"{len(differ[f'right_only_{b}_not_{a}'])} right only with {b}")
    save(args.out or RESULTS / f"datafiles-{n}.json", {
        "model": args.model, "pipeline": args.pipeline, "sample": str(args.sample),
        "runs": {arm: str(out) for arm, (out, _) in rows.items()},
        "ex": {name: round(s.ex, 1) for name, s in table.items()},
        "keys_refused_by_duckdb": refused, **differ})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
