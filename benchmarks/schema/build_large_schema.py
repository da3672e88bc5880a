"""Build the large-schema benchmark: one SQLite database holding the tables of many Spider databases.

    .venv/bin/python benchmarks/schema/build_large_schema.py [--tables 300] [--seed 0] [--out DIR]

Every Spider dev database (with its questions) goes in, then train databases in a fixed random order
(``--seed``) until the database holds at least ``--tables`` tables. Each table is named
``<database>__<table>`` (``concert_singer__singer``); its columns, declared types, primary key and foreign
keys (to the renamed tables) are kept and its rows copied. The gold query of every Spider dev question is
rewritten with sqlglot for the renamed tables (a table keeps its old name as its alias, so qualified column
references stay right) and kept only when it returns the same result on the large database as the original
does on its own database (Spider's comparison); the others are dropped and counted.

Writes, into ``DIR`` (default ``<sqlweave cache>/benchmarks/large-schema``, outside the repository; rebuilt from
``../shared/data/spider`` by this script): ``large.sqlite``, ``questions.json`` (per dev question: id, database,
question, original gold, rewritten gold) and ``manifest.json`` (databases, tables, counts, dropped queries).
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import SPIDER, parser
SEP = "__"


def default_out() -> Path:
    from sqlweave.config import cache_dir

    return cache_dir() / "benchmarks" / "large-schema"


def prefixed(db_id: str, table: str) -> str:
    return f"{db_id}{SEP}{table}"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def tables_of(con: sqlite3.Connection) -> list[str]:
    return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                                      "'sqlite_%' ORDER BY rowid")]


def table_ddl(src: sqlite3.Connection, db_id: str, table: str, names: dict[str, str]) -> str:
    """CREATE TABLE for ``table`` renamed, from its PRAGMAs: columns with declared types, NOT NULL, primary
    key, and the foreign keys whose target table exists (``names``: lowercased name -> name in this database)."""
    cols = src.execute(f"PRAGMA table_info({_q(table)})").fetchall()  # cid, name, type, notnull, dflt, pk
    defs = [f"{_q(c[1])} {c[2] or ''}".rstrip() + (" NOT NULL" if c[3] else "") for c in cols]
    pk = [c[1] for c in sorted(cols, key=lambda c: c[5]) if c[5]]
    if pk:
        defs.append(f"PRIMARY KEY ({', '.join(_q(c) for c in pk)})")
    fks: dict[int, list[tuple]] = {}
    for row in src.execute(f"PRAGMA foreign_key_list({_q(table)})").fetchall():  # id, seq, table, from, to, ...
        fks.setdefault(row[0], []).append(row)
    for rows in fks.values():
        target = names.get(str(rows[0][2]).lower())
        if target is None:
            continue  # a key to a table the database does not have
        tcols = {r[1].lower(): r[1] for r in src.execute(f"PRAGMA table_info({_q(target)})").fetchall()}
        tpk = [r[1] for r in sorted(src.execute(f"PRAGMA table_info({_q(target)})").fetchall(), key=lambda r: r[5])
               if r[5]]
        frm = [r[3] for r in sorted(rows, key=lambda r: r[1])]
        to = [r[4] for r in sorted(rows, key=lambda r: r[1])]
        if any(t is None for t in to):
            to = tpk
        if len(to) != len(frm) or any(str(t).lower() not in tcols for t in to):
            continue
        to = [tcols[str(t).lower()] for t in to]
        defs.append(f"FOREIGN KEY ({', '.join(_q(c) for c in frm)}) REFERENCES {_q(prefixed(db_id, target))}"
                    f"({', '.join(_q(c) for c in to)})")
    return f"CREATE TABLE {_q(prefixed(db_id, table))} (\n  " + ",\n  ".join(defs) + "\n)"


def copy_database(big: sqlite3.Connection, path: Path, db_id: str) -> list[str]:
    """Create and fill ``db_id``'s tables in ``big``; returns the new table names."""
    src = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    names = {t.lower(): t for t in tables_of(src)}
    created = []
    big.execute("ATTACH DATABASE ? AS src", (f"file:{path}?mode=ro",))
    try:
        for t in names.values():
            big.execute(table_ddl(src, db_id, t, names))
            big.execute(f"INSERT INTO main.{_q(prefixed(db_id, t))} SELECT * FROM src.{_q(t)}")
            created.append(prefixed(db_id, t))
        big.commit()
    finally:
        big.execute("DETACH DATABASE src")
        src.close()
    return created


def rewrite_gold(sql: str, db_id: str, tables: list[str]) -> str:
    """``sql`` over ``db_id``'s tables renamed ``<db_id>__<table>``; each renamed table keeps its old name (or
    its own alias) as alias, so column references stay right. CTE names are left alone.

    >>> rewrite_gold("SELECT count(*) FROM singer", "concert_singer", ["singer"])
    'SELECT COUNT(*) FROM concert_singer__singer AS singer'
    >>> rewrite_gold("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.sid", "c", ["singer", "concert"])
    'SELECT T1.name FROM c__singer AS T1 JOIN c__concert AS T2 ON T1.id = T2.sid'
    """
    import sqlglot
    from sqlglot import exp

    names = {t.lower(): t for t in tables}
    tree = sqlglot.parse_one(sql, read="sqlite")
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for t in list(tree.find_all(exp.Table)):
        low = t.name.lower()
        if low in ctes or low not in names or t.args.get("db"):
            continue
        if not t.alias:
            t.set("alias", exp.TableAlias(this=exp.to_identifier(t.name)))
        t.set("this", exp.to_identifier(prefixed(db_id, names[low])))
    return tree.sql(dialect="sqlite")


def choose_databases(spider: Path, target: int, seed: int) -> tuple[list[str], list[str], dict[str, int]]:
    """The dev databases, and train databases in a fixed random order until ``target`` tables are reached."""
    db_root = spider / "database"
    dev = sorted({e["db_id"] for e in json.loads((spider / "dev.json").read_text())})
    train = sorted({e["db_id"] for e in json.loads((spider / "train.json").read_text())} - set(dev))
    counts: dict[str, int] = {}
    for d in dev + train:
        p = db_root / d / f"{d}.sqlite"
        if p.is_file():
            con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
            counts[d] = len(tables_of(con))
            con.close()
    dev = [d for d in dev if d in counts]
    total = sum(counts[d] for d in dev)
    rng = random.Random(seed)
    pool = [d for d in train if d in counts]
    rng.shuffle(pool)
    extra = []
    for d in pool:
        if total >= target:
            break
        extra.append(d)
        total += counts[d]
    return dev, extra, counts


def _reader(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "surrogateescape")  # text as stored, undecodable bytes too
    return con


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--spider", type=Path, default=SPIDER, help="the Spider folder (dev.json, train.json, database/)")
    ap.add_argument("--tables", type=int, default=300, help="at least this many tables (default 300)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: <cache>/benchmarks/large-schema)")
    args = ap.parse_args()
    from sqlweave.eval.metrics import order_matters, spider_result_eq

    out = args.out or default_out()
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    dev, extra, counts = choose_databases(args.spider, args.tables, args.seed)
    path = out / "large.sqlite"
    tmp = out / "large.sqlite.tmp"
    tmp.unlink(missing_ok=True)
    big = sqlite3.connect(tmp)
    tables: dict[str, list[str]] = {}
    for d in dev + extra:
        created = copy_database(big, args.spider / "database" / d / f"{d}.sqlite", d)
        tables[d] = [t[len(d) + len(SEP):] for t in created]
    big.execute("VACUUM")
    big.close()
    tmp.replace(path)

    questions, dropped = [], {"parse": 0, "error": 0, "different_result": 0}
    big = _reader(path)
    dev_questions = json.loads((args.spider / "dev.json").read_text())
    for i, item in enumerate(dev_questions):
        d = item["db_id"]
        if d not in tables:
            continue
        gold = item["query"]
        try:
            new = rewrite_gold(gold, d, tables[d])
        except Exception:  # sqlglot cannot read it: dropped and counted
            dropped["parse"] += 1
            continue
        own = _reader(args.spider / "database" / d / f"{d}.sqlite")
        try:
            want = own.execute(gold).fetchall()
            got = big.execute(new).fetchall()
        except sqlite3.Error:
            dropped["error"] += 1
            continue
        finally:
            own.close()
        if not spider_result_eq(want, got, order_matters(gold)):
            dropped["different_result"] += 1
            continue
        questions.append({"id": f"dev-{i}", "db_id": d, "question": item["question"], "gold": gold, "gold_large": new})
    big.close()
    (out / "questions.json").write_text(json.dumps(questions, indent=1) + "\n")
    manifest = {
        "tables": sum(len(v) for v in tables.values()), "databases": len(tables), "dev_databases": dev,
        "train_databases": extra, "seed": args.seed, "target_tables": args.tables,
        "dev_questions_on_included_databases": sum(1 for q in dev_questions if q["db_id"] in tables),
        "questions_kept": len(questions), "questions_dropped": dropped, "bytes": path.stat().st_size,
        "seconds": round(time.perf_counter() - start, 1),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(json.dumps({k: v for k, v in manifest.items() if k not in ("dev_databases", "train_databases")}), file=sys.stderr)
    print(out)


if __name__ == "__main__":
    main()
