"""Keys read from the data: Spider's databases exported to CSV files, their declared keys against the ones sqlweave
finds in the files (no model).

    .venv/bin/python benchmarks/schema/bench_infer_keys.py [--data-dir ../shared/data/spider] [--split dev]
        [--out benchmarks/results/infer-keys-dev.json]

Each database of the split (those whose questions are in ``dev.json``, in ``train.json`` with ``--split train``,
or every one under ``database/`` with ``--split all``) is written as one CSV file per table (Python's csv module,
a header row, NULL as an empty field) into a temporary folder, opened by :class:`sqlweave.db.Database` as a folder of data files (a DuckDB copy whose
keys :mod:`sqlweave.db.infer_keys` declares), and its primary and foreign keys compared with the ones the SQLite
file declares. Declared keys are counted only when they can be found at all: single-column, and (foreign keys)
pointing at a single-column primary key. Found keys that the file does not declare are listed: some are real
keys Spider's files leave undeclared.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sqlite3
import sys
import tempfile
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import SPIDER, RESULTS

from sqlweave.database import Database  # noqa: E402
from sqlweave.errors import SqlweaveError  # noqa: E402


def export(sqlite_path: Path, folder: Path) -> None:
    with sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True) as conn:
        conn.text_factory = lambda b: b.decode("utf-8", "replace")
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            cur = conn.execute(f'SELECT * FROM "{table}"')
            with (folder / f"{table}.csv").open("w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow([d[0] for d in cur.description])
                writer.writerows(["" if v is None else v for v in row] for row in cur)


def keys(db: Database) -> tuple[set[tuple[str, str]], set[tuple[str, str, str, str]], set[str]]:
    """(single-column primary keys, foreign keys to them, tables with a key of several columns), lower case."""
    schema = db.schema()
    pks = {(t.name.lower(), t.primary_key[0].lower()) for t in schema.tables if len(t.primary_key) == 1}
    multi = {t.name.lower() for t in schema.tables if len(t.primary_key) > 1}
    fks = {(f.table.lower(), f.column.lower(), f.ref_table.lower(), f.ref_column.lower())
           for f in schema.foreign_keys}
    return pks, fks, multi


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=SPIDER)
    ap.add_argument("--split", choices=("dev", "train", "all"), default="dev",
                    help="dev: dev.json's databases; train: train.json's (none of dev's); all: every one")
    ap.add_argument("--out", type=Path, default=None,
                    help="default: benchmarks/results/infer-keys-SPLIT.json")
    args = ap.parse_args()
    args.out = args.out or RESULTS / f"infer-keys-{args.split}.json"
    if args.split in ("dev", "train"):
        names = sorted({q["db_id"] for q in json.loads((args.data_dir / f"{args.split}.json").read_text())})
    else:
        names = sorted(p.name for p in (args.data_dir / "database").iterdir() if p.is_dir())
    rows, extra_keys, totals, extra_found, failed = [], [], dict.fromkeys(
        ("pk_declared", "pk_found", "pk_extra", "fk_declared", "fk_found", "fk_extra"), 0), [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            source = args.data_dir / "database" / name / f"{name}.sqlite"
            if not source.is_file():
                continue
            folder = Path(tmp) / name
            folder.mkdir()
            export(source, folder)
            try:
                with Database.open(source) as original, Database.open(folder) as copy:
                    pk_d, fk_d, _ = keys(original)
                    pk_f, fk_f, _ = keys(copy)
            except SqlweaveError as err:
                failed[name] = str(err)
                continue
            fk_d = {fk for fk in fk_d if (fk[2], fk[3]) in pk_d}  # findable: to a single-column primary key
            row = {"database": name, "pk_declared": len(pk_d), "pk_found": len(pk_d & pk_f),
                   "pk_extra": len(pk_f - pk_d), "fk_declared": len(fk_d), "fk_found": len(fk_d & fk_f),
                   "fk_extra": len(fk_f - fk_d)}
            extra_found += [f"{name}: {t}.{c} -> {rt}.{rc}" for t, c, rt, rc in sorted(fk_f - fk_d)]
            extra_keys += [f"{name}: {t}.{c}" for t, c in sorted(pk_f - pk_d)]
            rows.append(row)
            for k in totals:
                totals[k] += row[k]
    print(f"{'database':28} {'PK declared':>11} {'found':>6} {'extra':>6} {'FK declared':>11} {'found':>6} "
          f"{'extra':>6}")
    for r in rows + [{"database": "all", **totals}]:
        print(f"{r['database']:28} {r['pk_declared']:>11} {r['pk_found']:>6} {r['pk_extra']:>6} "
              f"{r['fk_declared']:>11} {r['fk_found']:>6} {r['fk_extra']:>6}")
    pk_recall = totals["pk_found"] / max(1, totals["pk_declared"])
    fk_recall = totals["fk_found"] / max(1, totals["fk_declared"])
    print(f"primary keys found: {100 * pk_recall:.1f}%; foreign keys found: {100 * fk_recall:.1f}%; "
          f"failed databases: {len(failed)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "command": " ".join(["benchmarks/schema/bench_infer_keys.py", *sys.argv[1:]]), "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {platform.python_version()}", "split": args.split,
        "totals": totals, "pk_recall": round(pk_recall, 4), "fk_recall": round(fk_recall, 4),
        "databases": rows, "primary_keys_found_not_declared": extra_keys,
        "foreign_keys_found_not_declared": extra_found, "failed": failed}, indent=1) + "\n")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
