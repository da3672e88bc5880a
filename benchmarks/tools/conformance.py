"""Evaluation conformance: sqlweave's per-question verdicts against the official evaluators' own.

Runs the official Spider evaluator (``taoyds/test-suite-sql-eval``: ``evaluation.py``,
``process_sql.py``, ``exec_eval.py``, ``parse.py``) and sqlweave's scorer
(:mod:`sqlweave.eval`) on the same predictions and compares, question by question:

- ``EX`` (DISTINCT removed, the official default) and ``EX keep-distinct``: ``eval_exec_match``
  without value plugging, the prediction read as ``evaluate()`` reads it (``value`` -> ``1``);
- ``exact``: exact-set-match (``get_sql``, ``rebuild_sql_val``/``rebuild_sql_col`` with the
  ``tables.json`` foreign-key map, ``eval_exact_match``; a prediction the reader rejects is
  scored as the empty query, as ``evaluate()`` does);
- ``hardness`` of the gold query (``eval_hardness`` over ``get_sql``);
- ``test-suite``: ``eval_exec_match`` over every database file of a suite folder, here on a
  small suite built for the purpose (each database plus two copies with rows removed);
- ``BIRD EX`` / ``BIRD VES``: the official BIRD ``evaluation.py`` / ``evaluation_ves.py``
  (``AlibabaResearch/DAMO-ConvAI``, ``bird/llm/src``) on a small BIRD-format set built for the
  purpose from Spider databases (the BIRD databases are not needed).

Prediction sets (``--sets``):

- ``gold``: every dev gold query as its own prediction;
- ``mutations``: deterministic, model-like edits of every dev gold query, made with sqlglot
  (wrong column, DISTINCT added or dropped, ORDER BY direction, LIMIT changes, an extra join,
  a join on a column the table lacks, OR in a join condition, aliases named like tables,
  ``value`` literals, DISTINCT inside aggregates, nested set operations, ORDER BY + LIMIT in
  subqueries, case changes, quoted identifiers, ...);
- ``odd``: the hand-written ``benchmarks/data/conformance-odd.jsonl``;
- ``file``: any prediction file given with ``--predictions``: a ``results.jsonl`` written by
  ``sqlweave eval`` / ``sqlweave eval score --out`` (``id`` ``dev-<i>`` and ``prediction``), or a
  plain file with one query per line aligned with ``dev.json``, so real model runs can be compared
  the same way.

The official scripts are copied outside the repository (``~/.cache/sqlweave/official/``) from a
clone or snapshot of their repositories (``--spider-official``/``--bird-official``: a git dir or
a folder), with one change: ``process_sql.py`` calls ``word_tokenize(s, preserve_line=True)``, so
NLTK's sentence-splitter data is not needed. They need ``nltk``, ``sqlparse``, ``tqdm``,
``numpy`` and ``func_timeout`` (``pip install -e '.[dev]'``). Official verdicts are cached per
question in ``~/.cache/sqlweave/conformance/`` (an interrupted run resumes where it stopped).

Example::

    .venv/bin/python benchmarks/tools/conformance.py --sets gold,mutations,odd,ts,bird
    .venv/bin/python benchmarks/tools/conformance.py --sets file --predictions runs/spider-dev-zero-shot/results.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import io
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

# the bootstrap (benchmarks/README.md), appended: an installed or PYTHONPATH sqlweave comes first
sys.path.append(str(Path(__file__).resolve().parents[2]))
from benchmarks.common import ROOT, SPIDER, RESULTS  # noqa: E402

import sqlglot  # noqa: E402
from sqlglot import exp  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

CACHE = Path(os.environ.get("SQLWEAVE_CACHE", Path.home() / ".cache" / "sqlweave"))
SPIDER_REPO = "taoyds/test-suite-sql-eval"
BIRD_REPO = "AlibabaResearch/DAMO-ConvAI"
SPIDER_FILES = ("evaluation.py", "process_sql.py", "exec_eval.py", "parse.py")
BIRD_FILES = ("bird/llm/src/evaluation.py", "bird/llm/src/evaluation_ves.py")
DEFAULT_MIRRORS = {SPIDER_REPO: Path("/work/.mirror/taoyds+test-suite-sql-eval/repo"),
                   BIRD_REPO: Path("/work/.mirror/AlibabaResearch+DAMO-ConvAI/repo")}
console = Console()


# --- the official scripts ------------------------------------------------------------------------


def _read_source(src: Path, path: str) -> tuple[str, str]:
    """``(text, commit)`` of ``path`` in a git dir (bare or not) or a plain folder."""
    if (src / "HEAD").is_file() or (src / ".git").exists():
        git = ["git", f"--git-dir={src / '.git' if (src / '.git').exists() else src}"]
        commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        text = subprocess.run(git + ["show", f"HEAD:{path}"], capture_output=True, text=True, check=True).stdout
        return text, commit
    return (src / path).read_text(encoding="utf-8"), "unknown"


def install_official(src: Path, repo: str, files: Iterable[str]) -> tuple[Path, str]:
    """Copy the official scripts into ``~/.cache/sqlweave/official/<repo>-<commit>/``; return (folder, commit)."""
    texts = {}
    commit = "unknown"
    for f in files:
        texts[f], commit = _read_source(src, f)
    folder = CACHE / "official" / f"{repo.replace('/', '+')}-{commit[:12]}"
    folder.mkdir(parents=True, exist_ok=True)
    for f, text in texts.items():
        if f.endswith("process_sql.py"):
            patched = text.replace("word_tokenize(string)", "word_tokenize(string, preserve_line=True)")
            assert patched != text, "process_sql.py no longer calls word_tokenize(string)"
            text = patched
        (folder / Path(f).name).write_text(text, encoding="utf-8")
    (folder / "tmp").mkdir(exist_ok=True)
    return folder, commit


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class OfficialSpider:
    """The official Spider scripts, called per question exactly as their ``evaluate()`` loop calls them."""

    def __init__(self, folder: Path, tables_json: Path) -> None:
        sys.path.insert(0, str(folder))
        self.process_sql = _load("process_sql", folder / "process_sql.py")
        _load("parse", folder / "parse.py")
        self.exec_eval = _load("exec_eval", folder / "exec_eval.py")
        self.evaluation = _load("evaluation", folder / "evaluation.py")
        sys.path.remove(str(folder))
        self.kmaps = self.evaluation.build_foreign_key_map_from_json(str(tables_json))

    def score(self, db: Path, g_str: str, pred_line: str, exec_modes: bool = True) -> dict[str, Any]:
        ev, ps = self.evaluation, self.process_sql
        p_str = pred_line.replace("value", "1")
        schema = ps.Schema(ps.get_schema(str(db)))
        g_sql = ps.get_sql(schema, g_str)
        out: dict[str, Any] = {"hardness": ev.Evaluator().eval_hardness(g_sql)}
        try:
            p_sql = ps.get_sql(schema, p_str)
        except Exception:  # noqa: BLE001 - the official loop's bare except
            p_sql = {"except": None, "from": {"conds": [], "table_units": []}, "groupBy": [], "having": [],
                     "intersect": None, "limit": None, "orderBy": [], "select": [False, []], "union": None, "where": []}
        if exec_modes:
            for key, keep in (("ex", False), ("ex_kd", True)):
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        out[key] = bool(self.exec_eval.eval_exec_match(db=str(db), p_str=p_str, g_str=g_str, plug_value=False,
                                                                       keep_distinct=keep, progress_bar_for_each_datapoint=False))
                except Exception as err:  # noqa: BLE001 - recorded, never hidden
                    out[key] = f"crash: {type(err).__name__}: {err}"
        try:
            kmap = self.kmaps[db.stem]
            g_valid = ev.build_valid_col_units(g_sql["from"]["table_units"], schema)
            g_sql = ev.rebuild_sql_col(g_valid, ev.rebuild_sql_val(g_sql), kmap)
            p_valid = ev.build_valid_col_units(p_sql["from"]["table_units"], schema)
            p_sql = ev.rebuild_sql_col(p_valid, ev.rebuild_sql_val(p_sql), kmap)
            out["exact"] = bool(ev.Evaluator().eval_exact_match(p_sql, g_sql))
        except Exception as err:  # noqa: BLE001
            out["exact"] = f"crash: {type(err).__name__}: {err}"
        return out

    def ts(self, suite_db: Path, g_str: str, pred_line: str) -> bool | str:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                return bool(self.exec_eval.eval_exec_match(db=str(suite_db), p_str=pred_line.replace("value", "1"), g_str=g_str,
                                                           plug_value=False, keep_distinct=False,
                                                           progress_bar_for_each_datapoint=False))
        except Exception as err:  # noqa: BLE001
            return f"crash: {type(err).__name__}: {err}"


# --- prediction sets -----------------------------------------------------------------------------


class Item(dict):
    """``{"set", "kind", "index", "db_id", "gold", "pred"}``: one prediction for dev question ``index``."""


def one_line(pred: str) -> str:
    """A prediction as it stands on one line of an official prediction file (what both scorers then read)."""
    return " ".join(pred.split()).split("\t")[0].strip()


def read_prediction_file(path: Path, dev: list[dict[str, Any]]) -> list[Item]:
    """A ``results.jsonl`` of ``sqlweave eval`` (ids ``dev-<i>``) or one SQL per line aligned with ``dev.json``."""
    text = path.read_text(encoding="utf-8")
    items = []
    first = text.lstrip()[:1]
    if first == "{":
        for line in text.splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            i = int(str(r["id"]).rsplit("-", 1)[1])
            if r.get("prediction"):
                items.append(Item(set="file", kind=path.name, index=i, pred=r["prediction"]))
    else:
        for i, line in enumerate(text.splitlines()):
            if line.strip():
                items.append(Item(set="file", kind=path.name, index=i, pred=line.split("\t")[0]))
    return items


def read_odd(path: Path) -> list[Item]:
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("//"):
            r = json.loads(line)
            items.append(Item(set="odd", kind=r.get("case", "odd"), index=int(r["index"]), pred=r["pred"]))
    return items


def _fk_pairs(tables_entry: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    t = tables_entry["table_names_original"]
    c = tables_entry["column_names_original"]
    return [(t[c[a][0]], c[a][1], t[c[b][0]], c[b][1]) for a, b in tables_entry["foreign_keys"]]


class Mutator:
    """Model-like edits of one gold query; each method returns SQL text or None when it does not apply."""

    def __init__(self, schema: dict[str, list[str]], fks: list[tuple[str, str, str, str]], rng: random.Random) -> None:
        self.schema = {t.lower(): cols for t, cols in schema.items()}
        self.fks = fks
        self.rng = rng

    def _tree(self, sql: str) -> exp.Expression | None:
        try:
            return sqlglot.parse_one(sql, read="sqlite")
        except Exception:  # noqa: BLE001
            return None

    @staticmethod
    def _sql(tree: exp.Expression) -> str:
        return tree.sql(dialect="sqlite")

    def _aliases(self, select: exp.Select) -> dict[str, str]:
        out = {}
        for t in select.find_all(exp.Table):
            out[(t.alias or t.name).lower()] = t.name.lower()
        return out

    def wrong_column(self, sql: str) -> str | None:
        tree = self._tree(sql)
        sel = tree if isinstance(tree, exp.Select) else None
        if sel is None:
            return None
        aliases = self._aliases(sel)
        tables = [t.name.lower() for t in sel.find_all(exp.Table)]
        for col in sel.expressions:
            c = col.find(exp.Column)
            if c is None or isinstance(c.this, exp.Star):
                continue
            table = aliases.get(c.table.lower()) if c.table else (tables[0] if tables else None)
            others = [x for x in self.schema.get(table or "", []) if x.lower() != c.name.lower()]
            if others:
                c.set("this", exp.to_identifier(self.rng.choice(others)))
                return self._sql(tree)
        return None

    def toggle_distinct(self, sql: str) -> str | None:
        tree = self._tree(sql)
        if not isinstance(tree, exp.Select):
            return None
        tree.set("distinct", None if tree.args.get("distinct") else exp.Distinct())
        return self._sql(tree)

    def flip_order(self, sql: str) -> str | None:
        tree = self._tree(sql)
        order = tree.find(exp.Order) if tree else None
        if order is None:
            return None
        for o in order.expressions:
            o.set("desc", not o.args.get("desc"))
        return self._sql(tree)

    def change_limit(self, sql: str) -> str | None:
        tree = self._tree(sql)
        if not isinstance(tree, exp.Select):
            return None
        if tree.args.get("limit"):
            tree.set("limit", None)
        elif tree.args.get("order"):
            tree = tree.limit(3)
        else:
            return None
        return self._sql(tree)

    def extra_join(self, sql: str) -> str | None:
        tree = self._tree(sql)
        if not isinstance(tree, exp.Select) or tree.args.get("from_") is None:
            return None
        first = tree.args["from_"].this
        if not isinstance(first, exp.Table):
            return None
        name = first.name.lower()
        used = {t.name.lower() for t in tree.find_all(exp.Table)}
        for a, ac, b, bc in self.fks:
            if a.lower() == name and b.lower() not in used:
                ref = first.alias or first.name
                tree = tree.join(f"{b} AS xj", on=f"{ref}.{ac} = xj.{bc}")
                return self._sql(tree)
            if b.lower() == name and a.lower() not in used:
                ref = first.alias or first.name
                tree = tree.join(f"{a} AS xj", on=f"{ref}.{bc} = xj.{ac}")
                return self._sql(tree)
        return None

    def join_on_missing_column(self, sql: str) -> str | None:
        tree = self._tree(sql)
        if tree is None:
            return None
        for join in tree.find_all(exp.Join):
            on = join.args.get("on")
            eq = on.find(exp.EQ) if on is not None else None
            if eq is None or not isinstance(eq.right, exp.Column) or not isinstance(eq.left, exp.Column):
                continue
            sel = join.find_ancestor(exp.Select)
            aliases = self._aliases(sel) if sel else {}
            rt = aliases.get(eq.right.table.lower(), "")
            lt = aliases.get(eq.left.table.lower(), "")
            missing = [c for c in self.schema.get(lt, []) if c not in self.schema.get(rt, [])]
            if rt and missing:
                eq.right.set("this", exp.to_identifier(missing[0]))  # e.g. cars_data.MakeId
                return self._sql(tree)
        return None

    def or_in_join(self, sql: str) -> str | None:
        tree = self._tree(sql)
        join = tree.find(exp.Join) if tree else None
        on = join.args.get("on") if join else None
        if on is None or not isinstance(on, exp.EQ):
            return None
        join.set("on", exp.or_(on.copy(), exp.EQ(this=on.right.copy(), expression=on.left.copy())))
        return self._sql(tree)

    def shadow_alias(self, sql: str) -> str | None:
        tree = self._tree(sql)
        if tree is None:
            return None
        used = {t.name.lower() for t in tree.find_all(exp.Table)}
        spare = [t for t in self.schema if t not in used and t != "sqlite_sequence"]
        for t in tree.find_all(exp.Table):
            if t.alias and spare:
                old, new = t.alias, spare[0]
                for c in tree.find_all(exp.Column):
                    if c.table == old:
                        c.set("table", exp.to_identifier(new))
                t.set("alias", exp.TableAlias(this=exp.to_identifier(new)))
                return self._sql(tree)
        return None

    def value_literal(self, sql: str) -> str | None:
        tree = self._tree(sql)
        lit = tree.find(exp.Literal) if tree else None
        if lit is None:
            return None
        lit.replace(exp.Literal.string("value") if lit.is_string else exp.column("value"))
        return self._sql(tree)

    def distinct_in_aggregate(self, sql: str) -> str | None:
        tree = self._tree(sql)
        if tree is None:
            return None
        for agg in tree.find_all(exp.Count, exp.Sum, exp.Avg, exp.Max, exp.Min):
            inner = agg.this
            if isinstance(inner, exp.Distinct):
                agg.set("this", inner.expressions[0])
                return self._sql(tree)
            if isinstance(inner, exp.Column):
                agg.set("this", exp.Distinct(expressions=[inner.copy()]))
                return self._sql(tree)
        return None

    def nested_set_operation(self, sql: str) -> str | None:
        tree = self._tree(sql)
        if not isinstance(tree, exp.Select) or tree.args.get("order") or tree.args.get("limit"):
            return None
        return f"{sql} UNION SELECT * FROM ({sql} EXCEPT {sql})"

    def order_limit_in_subquery(self, sql: str) -> str | None:
        tree = self._tree(sql)
        sub = tree.find(exp.Subquery) if tree else None
        inner = sub.this if sub is not None else None
        if not isinstance(inner, exp.Select) or inner.args.get("order") or len(inner.expressions) != 1:
            return None
        c = inner.expressions[0].find(exp.Column)
        if c is None:
            return None
        sub.set("this", inner.order_by(c.copy()).limit(1))
        return self._sql(tree)

    def upper_case(self, sql: str) -> str | None:
        return sql.upper()

    def lower_case(self, sql: str) -> str | None:
        return sql.lower()

    def quoted_identifiers(self, sql: str) -> str | None:
        tree = self._tree(sql)
        return tree.sql(dialect="sqlite", identify=True) if tree else None

    def backticks(self, sql: str) -> str | None:
        tree = self._tree(sql)
        return tree.sql(dialect="mysql", identify=True) if tree else None

    def round_trip(self, sql: str) -> str | None:
        tree = self._tree(sql)
        return self._sql(tree) if tree else None

    def swap_aggregate(self, sql: str) -> str | None:
        tree = self._tree(sql)
        if tree is None:
            return None
        for a, b in ((exp.Max, exp.Min), (exp.Min, exp.Max), (exp.Avg, exp.Sum), (exp.Sum, exp.Avg)):
            node = tree.find(a)
            if node is not None:
                node.replace(b(this=node.this.copy()))
                return self._sql(tree)
        node = tree.find(exp.Count)
        if node is not None and isinstance(node.this, exp.Star):
            sel = tree if isinstance(tree, exp.Select) else None
            tables = [t.name.lower() for t in sel.find_all(exp.Table)] if sel else []
            cols = self.schema.get(tables[0], []) if tables else []
            if cols:
                node.set("this", exp.column(cols[0]))
                return self._sql(tree)
        return None

    def change_operator(self, sql: str) -> str | None:
        swaps = [(" > ", " >= "), (" < ", " <= "), (" = ", " != "), (" >= ", " > "), ("  =  ", " = ")]
        for a, b in swaps:
            if a in sql:
                return sql.replace(a, b, 1)
        return None

    def drop_where(self, sql: str) -> str | None:
        tree = self._tree(sql)
        if not isinstance(tree, exp.Select) or tree.args.get("where") is None:
            return None
        tree.set("where", None)
        return self._sql(tree)

    def spaced_operators(self, sql: str) -> str | None:
        if ">=" in sql or "<=" in sql or "!=" in sql:
            return sql.replace(">=", "> =").replace("<=", "< =").replace("!=", "! =")
        return None

    def double_space_order(self, sql: str) -> str | None:
        return re.sub(r"(?i)order\s+by", "ORDER  BY", sql) if re.search(r"(?i)order\s+by", sql) else None

    def trailing_statement(self, sql: str) -> str | None:
        return f"{sql}; SELECT 1" if "distinct" in sql.lower() else None

    KINDS = ("wrong_column", "toggle_distinct", "flip_order", "change_limit", "extra_join", "join_on_missing_column",
             "or_in_join", "shadow_alias", "value_literal", "distinct_in_aggregate", "nested_set_operation",
             "order_limit_in_subquery", "upper_case", "lower_case", "quoted_identifiers", "backticks", "round_trip",
             "swap_aggregate", "change_operator", "drop_where", "spaced_operators", "double_space_order",
             "trailing_statement")

    def all(self, sql: str) -> Iterator[tuple[str, str]]:
        seen = {sql}
        for kind in self.KINDS:
            try:
                out = getattr(self, kind)(sql)
            except Exception:  # noqa: BLE001 - an edit sqlglot cannot make is skipped
                out = None
            if out and out not in seen:
                seen.add(out)
                yield kind, out


def mutations(dev: list[dict[str, Any]], indices: list[int], spider: Path) -> list[Item]:
    tables = {e["db_id"]: e for e in json.loads((spider / "tables.json").read_text())}

    def sqlite_schema(path: Path) -> dict[str, list[str]]:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            return {n: [c[1] for c in conn.execute(f'PRAGMA table_info("{n}")')] for n in names}
        finally:
            conn.close()

    items = []
    for i in indices:
        ex = dev[i]
        rng = random.Random(f"{i}")
        m = Mutator(sqlite_schema(spider / "database" / ex["db_id"] / f"{ex['db_id']}.sqlite"),
                    _fk_pairs(tables[ex["db_id"]]), rng)
        for kind, sql in m.all(ex["query"]):
            items.append(Item(set="mutations", kind=kind, index=i, pred=sql))
    return items


# --- sqlweave's verdicts --------------------------------------------------------------------------


class Sqlweave:
    def __init__(self, spider: Path) -> None:
        from sqlweave.eval.datasets import load_spider
        from sqlweave.eval.runner import DatabasePool, GoldCache

        self.ds = load_spider(spider, "dev")
        self.by_index = {int(e.id.rsplit("-", 1)[1]): e for e in self.ds.examples}
        self.pool = DatabasePool(self.ds)
        self.cache = GoldCache()

    def score(self, index: int, pred: str, suite_dir: Path | None = None) -> dict[str, Any]:
        from sqlweave.eval.runner import example_hardness, score_sql

        ex = self.by_index[index]
        db = self.pool.get(ex.db_id)
        s = score_sql(db, ex, pred, self.cache, "spider", suite_dir)
        try:
            from sqlweave.eval.runner import spider_hardness  # present once hardness follows the official reader
            hard = spider_hardness(db, ex)
        except ImportError:
            hard = example_hardness(ex)
        return {"ex": s.match, "ex_kd": s.match_keep_distinct, "exact": s.exact, "hardness": hard, "ts": s.ts_match}


# --- the small test suite and the BIRD-format set -------------------------------------------------


SUITE_DBS = ("concert_singer", "pets_1", "car_1", "flight_2", "cre_Doc_Template_Mgt", "employee_hire_evaluation")


def build_suite(spider: Path, folder: Path) -> Path:
    """``<folder>/<db_id>/``: the database and two copies with every other row (odd / even rowid) removed."""
    for db_id in SUITE_DBS:
        out = folder / db_id
        if (out / f"{db_id}_odd.sqlite").exists():
            continue
        out.mkdir(parents=True, exist_ok=True)
        src = spider / "database" / db_id / f"{db_id}.sqlite"
        shutil.copy(src, out / f"{db_id}.sqlite")
        for suffix, keep in (("odd", 1), ("even", 0)):
            path = out / f"{db_id}_{suffix}.sqlite"
            shutil.copy(src, path)
            conn = sqlite3.connect(path)
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            for t in tables:
                if t != "sqlite_sequence":
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute(f'DELETE FROM "{t}" WHERE rowid % 2 != {keep}')
            conn.commit()
            conn.close()
    return folder


BIRD_ITEMS = [
    # (db_id, gold, [predictions]) - each prediction one question of the BIRD-format set.
    ("concert_singer", "SELECT name, age FROM singer WHERE age > 30",
     ["SELECT name, age FROM singer WHERE age > 30", "SELECT age, name FROM singer WHERE age > 30",
      "SELECT DISTINCT name, age FROM singer WHERE age > 30", "SELECT name, age FROM singer WHERE age > 30 ORDER BY age DESC",
      "SELECT name, age FROM singer WHERE age > 40", "SELECT name FROM singer WHERE age > 30",
      "SELECT name, age FROM singer WHERE age > 30 UNION ALL SELECT name, age FROM singer WHERE age > 30",
      "SELECT name, age FROM singers", "SELECT name, CAST(age AS REAL) FROM singer WHERE age > 30"]),
    ("concert_singer", "SELECT count(*) FROM singer",
     ["SELECT count(*) FROM singer", "SELECT count(singer_id) FROM singer", "SELECT count(*) + 0.0 FROM singer",
      "SELECT count(*) FROM singer;", "SELECT count(*) FROM singer WHERE 0", "SELECT 6"]),
    ("pets_1", "SELECT petid, weight FROM pets ORDER BY weight",
     ["SELECT petid, weight FROM pets ORDER BY weight DESC", "SELECT petid, weight FROM pets",
      "SELECT weight, petid FROM pets ORDER BY weight", "SELECT petid, weight FROM pets LIMIT 1"]),
    ("car_1", "SELECT T1.Maker FROM car_makers AS T1 JOIN model_list AS T2 ON T1.Id = T2.Maker GROUP BY T1.Id HAVING count(*) >= 2",
     ["SELECT T1.Maker FROM car_makers AS T1 JOIN model_list AS T2 ON T1.Id = T2.Maker GROUP BY T1.Id HAVING count(*) >= 2",
      "SELECT DISTINCT T1.Maker FROM car_makers AS T1 JOIN model_list AS T2 ON T1.Id = T2.Maker",
      "SELECT T1.Maker FROM car_makers AS T1 JOIN model_list AS T2 ON T1.Id = T2.Maker GROUP BY T1.Id HAVING count(*) > 2",
      "SELECT Maker FROM car_makers WHERE Id IN (SELECT Maker FROM model_list GROUP BY Maker HAVING count(*) >= 2)",
      "SELECT T1.Maker FROM car_makers AS T1 JOIN cars_data AS T2 ON T1.Id = T2.MakeId"]),
    ("bird_odd", "SELECT name FROM t ORDER BY id",
     ["SELECT name FROM t", "SELECT name FROM t ORDER BY id DESC", "SELECT name FROM t WHERE id = 1"]),
    ("bird_odd", "SELECT id FROM t WHERE id < 3",
     ["SELECT id FROM t WHERE id < 3", "SELECT id FROM t WHERE id <= 2", "SELECT id, name FROM t WHERE id < 3"]),
]


def build_bird(spider: Path, folder: Path) -> Path:
    """A BIRD-format folder: ``dev.json``, ``dev_gold.sql``, ``predict_dev.json``, ``dev_databases/``."""
    dbs = folder / "dev_databases"
    dbs.mkdir(parents=True, exist_ok=True)
    for db_id in {d for d, _, _ in BIRD_ITEMS}:
        out = dbs / db_id / f"{db_id}.sqlite"
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.exists():
            continue
        if db_id == "bird_odd":  # text that is not valid UTF-8, as some BIRD databases hold
            conn = sqlite3.connect(out)
            conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
            conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, "ok"), (2, "caf\u00e9"), (3, "x")])
            conn.execute("UPDATE t SET name = CAST(X'6361666599' AS TEXT) WHERE id = 3")
            conn.commit()
            conn.close()
        else:
            shutil.copy(spider / "database" / db_id / f"{db_id}.sqlite", out)
    entries, gold_lines, predict = [], [], {}
    for db_id, gold, preds in BIRD_ITEMS:
        for p in preds:
            qid = len(entries)
            entries.append({"question_id": qid, "db_id": db_id, "question": f"question {qid}", "evidence": "",
                            "SQL": gold, "difficulty": ("simple", "moderate", "challenging")[qid % 3]})
            gold_lines.append(f"{gold}\t{db_id}")
            predict[str(qid)] = f"{p}\t----- bird -----\t{db_id}"
    (folder / "dev.json").write_text(json.dumps(entries, indent=1))
    (folder / "dev_gold.sql").write_text("\n".join(gold_lines) + "\n")
    (folder / "predict_dev.json").write_text(json.dumps(predict, indent=1))
    return folder


def run_bird(folder: Path, official_dir: Path) -> tuple[dict[str, list[int]], list[dict[str, Any]]]:
    """BIRD EX and VES correctness per question, official vs sqlweave, plus the VES formula on fixed ratios."""
    from sqlweave.database import Database
    from sqlweave.eval.bird_metrics import _clean_abnormal, time_ratio, ves
    from sqlweave.eval.datasets import load_bird
    from sqlweave.eval.runner import execution_match

    ev = _load("bird_evaluation", official_dir / "evaluation.py")
    ves_mod = _load("bird_evaluation_ves", official_dir / "evaluation_ves.py")
    preds, dbp = ev.package_sqls(str(folder) + "/", str(folder / "dev_databases") + "/", mode="gpt")
    golds, _ = ev.package_sqls(str(folder) + "/", str(folder / "dev_databases") + "/", mode="gt")
    ds = load_bird(folder, "dev")
    counts = {"BIRD EX": [0, 0], "BIRD VES (correct or not)": [0, 0], "BIRD VES formula": [0, 0]}
    diffs = []
    for i, (p, g, path) in enumerate(zip(preds, golds, dbp)):
        official_ex = ev.execute_model(p, g, path, i, 30.0)["res"]
        official_ves = ves_mod.execute_model(p, g, path, i, 3, 30.0)["time_ratio"]
        with Database.open(path) as db:
            try:
                mine_ex: Any = int(execution_match(db, ds.examples[i].gold_sql, p, rule="bird")[0])
            except Exception as err:  # noqa: BLE001
                mine_ex = f"crash: {type(err).__name__}"
            try:
                mine_ratio: Any = time_ratio(db, g, p, iterations=3)
            except Exception as err:  # noqa: BLE001
                mine_ratio = f"crash: {type(err).__name__}"
        mine_ves = mine_ratio if isinstance(mine_ratio, str) else mine_ratio > 0
        for metric, a, b in (("BIRD EX", bool(official_ex), mine_ex if isinstance(mine_ex, str) else bool(mine_ex)),
                             ("BIRD VES (correct or not)", official_ves > 0, mine_ves)):
            counts[metric][0] += 1
            counts[metric][1] += int(a == b)
            if a != b:
                diffs.append({"set": "bird", "metric": metric, "db_id": ds.examples[i].db_id, "gold": g, "pred": p,
                              "official": a, "sqlweave": b})
    rng = random.Random(7)
    for _ in range(200):
        ratios = [rng.choice([0.0, rng.uniform(0.2, 4.0)]) for _ in range(rng.randint(1, 30))]
        official = ves_mod.compute_ves([{"time_ratio": r} for r in ratios])
        counts["BIRD VES formula"][0] += 1
        counts["BIRD VES formula"][1] += abs(official - ves(ratios)) < 1e-9
        runs = [rng.uniform(0.5, 1.5) for _ in range(rng.randint(2, 40))] + ([50.0] if rng.random() < 0.5 else [])
        kept = [float(x) for x in ves_mod.clean_abnormal(runs)]
        counts["BIRD VES formula"][0] += 1
        try:
            counts["BIRD VES formula"][1] += kept == [float(x) for x in _clean_abnormal(runs)]
        except Exception:  # noqa: BLE001
            pass
    return counts, diffs


# --- the comparison -------------------------------------------------------------------------------


def _key(*parts: str) -> str:
    return hashlib.sha1("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


class Checkpoint:
    """Official verdicts per question, appended and flushed one by one (a killed run loses one question)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.data: dict[str, Any] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                with contextlib.suppress(ValueError, KeyError):
                    r = json.loads(line)
                    self.data[r["k"]] = r["v"]
        self.fh = path.open("a", encoding="utf-8")

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def put(self, key: str, value: Any) -> None:
        self.data[key] = value
        self.fh.write(json.dumps({"k": key, "v": value}) + "\n")
        self.fh.flush()


METRICS = ("EX", "EX keep-distinct", "exact-set-match", "hardness", "test-suite")
FIELDS = {"EX": "ex", "EX keep-distinct": "ex_kd", "exact-set-match": "exact", "hardness": "hardness", "test-suite": "ts"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spider", type=Path, default=SPIDER)
    ap.add_argument("--sets", default="gold,mutations,odd,ts,bird",
                    help="Comma-separated: gold, mutations, odd, ts, bird, file.")
    ap.add_argument("--predictions", type=Path, action="append", default=[], help="A prediction file (set 'file').")
    ap.add_argument("--odd", type=Path, default=ROOT / "benchmarks" / "data" / "conformance-odd.jsonl")
    ap.add_argument("--spider-official", type=Path, default=DEFAULT_MIRRORS[SPIDER_REPO],
                    help=f"A clone (or git dir) of {SPIDER_REPO}.")
    ap.add_argument("--bird-official", type=Path, default=DEFAULT_MIRRORS[BIRD_REPO], help=f"A clone (or git dir) of {BIRD_REPO}.")
    ap.add_argument("--limit", type=int, default=None, help="Only the first N dev questions (a quick check).")
    ap.add_argument("--out", type=Path, default=RESULTS / "conformance.json")
    ap.add_argument("--label", default="", help="A note stored in the JSON (e.g. 'before fixes').")
    args = ap.parse_args(argv)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    if args.predictions and "file" not in sets:
        sets.append("file")

    start = time.time()
    spider_dir, spider_commit = install_official(args.spider_official, SPIDER_REPO, SPIDER_FILES)
    official = OfficialSpider(spider_dir, args.spider / "tables.json")
    ckpt = Checkpoint(CACHE / "conformance" / f"official-{spider_commit[:12]}.jsonl")
    mine = Sqlweave(args.spider)
    dev = json.loads((args.spider / "dev.json").read_text())
    indices = sorted(mine.by_index)[: args.limit] if args.limit else sorted(mine.by_index)
    items: list[Item] = []
    if "gold" in sets:
        items += [Item(set="gold", kind="gold", index=i, pred=dev[i]["query"]) for i in indices]
    if "mutations" in sets:
        items += mutations(dev, indices, args.spider)
    if "odd" in sets:
        items += [it for it in read_odd(args.odd) if it["index"] in mine.by_index]
    if "file" in sets:
        for path in args.predictions:
            items += [it for it in read_prediction_file(path, dev) if it["index"] in mine.by_index]
    suite = build_suite(args.spider, CACHE / "conformance" / "suite") if "ts" in sets else None

    counts: dict[tuple[str, str], list[int]] = {}
    diffs: list[dict[str, Any]] = []
    total = len(items)
    for n, it in enumerate(items, 1):
        ex = dev[it["index"]]
        db = args.spider / "database" / ex["db_id"] / f"{ex['db_id']}.sqlite"
        line = one_line(it["pred"])
        key = _key("spider", ex["db_id"], ex["query"], line)
        theirs = ckpt.get(key)
        if theirs is None:
            theirs = official.score(db, ex["query"], line)
            ckpt.put(key, theirs)
        with_suite = suite is not None and ex["db_id"] in SUITE_DBS and it["set"] in ("gold", "mutations", "odd")
        if with_suite:
            tkey = _key("ts", ex["db_id"], ex["query"], line)
            ts = ckpt.get(tkey)
            if ts is None:
                ts = official.ts(suite / ex["db_id"] / f"{ex['db_id']}.sqlite", ex["query"], line)
                ckpt.put(tkey, ts)
            theirs = {**theirs, "ts": ts}
        try:
            ours = mine.score(it["index"], line, suite if with_suite else None)
        except Exception as err:  # noqa: BLE001 - a crash is a disagreement, recorded as such
            ours = {f: f"crash: {type(err).__name__}: {err}" for f in FIELDS.values()}
        for metric in METRICS:
            f = FIELDS[metric]
            if f not in theirs or (f == "hardness" and it["set"] != "gold"):
                continue
            c = counts.setdefault((it["set"], metric), [0, 0])
            c[0] += 1
            if theirs[f] == ours[f]:
                c[1] += 1
            else:
                diffs.append({"set": it["set"], "kind": it["kind"], "metric": metric, "index": it["index"],
                              "db_id": ex["db_id"], "gold": ex["query"], "pred": line,
                              "official": theirs[f], "sqlweave": ours[f]})
        if n % 500 == 0:
            console.print(f"[dim]{n}/{total} predictions compared, {time.time() - start:.0f} s[/dim]")

    bird_commit = None
    if "bird" in sets:
        bird_dir, bird_commit = install_official(args.bird_official, BIRD_REPO, BIRD_FILES)
        bird_counts, bird_diffs = run_bird(build_bird(args.spider, CACHE / "conformance" / "bird"), bird_dir)
        for metric, c in bird_counts.items():
            counts[("bird", metric)] = c
        diffs += bird_diffs

    table = Table(title="sqlweave vs the official evaluators, question by question", header_style="bold")
    for col in ("set", "metric", "compared", "agree", "agreement %"):
        table.add_column(col, justify="right" if col in ("compared", "agree", "agreement %") else "left")
    rows = []
    for (s, metric), (n, ok) in counts.items():
        pct = 100.0 * ok / n if n else 100.0
        rows.append({"set": s, "metric": metric, "compared": n, "agree": ok, "agreement": round(pct, 3)})
        table.add_row(s, metric, str(n), str(ok), f"{pct:.2f}", style=None if ok == n else "red")
    console.print(table)
    by_metric: dict[str, list[int]] = {}
    for (s, metric), (n, ok) in counts.items():
        m = by_metric.setdefault(metric, [0, 0])
        m[0] += n
        m[1] += ok
    kinds: dict[str, int] = {}
    for it in items:
        kinds[f"{it['set']}:{it['kind']}"] = kinds.get(f"{it['set']}:{it['kind']}", 0) + 1
    result = {
        "label": args.label,
        "date": time.strftime("%Y-%m-%d"),
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix()] + (argv if argv is not None else sys.argv[1:])),
        "official": {"spider": f"{SPIDER_REPO}@{spider_commit}", "bird": f"{BIRD_REPO}@{bird_commit}" if bird_commit else None},
        "predictions": len(items), "prediction_kinds": kinds,
        "rows": rows,
        "by_metric": {m: {"compared": n, "agree": ok, "agreement": round(100.0 * ok / n, 3) if n else 100.0}
                      for m, (n, ok) in by_metric.items()},
        "disagreements": diffs,
        "seconds": round(time.time() - start, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    console.print(f"{len(diffs)} disagreements; wrote {args.out} ({result['seconds']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
