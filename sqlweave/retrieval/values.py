"""An index of a database's text cell values: find the stored spelling of a value a question mentions.

Every distinct text value (up to ``max_per_column`` per column, values up to 200 characters) is indexed with
BM25 over its words and character trigrams, so "Frence" still finds "France" and "new york" finds
"New York City". Values are persisted per table under ``<cache_dir>/values/<database>/``, with a fingerprint
(columns and row count) so a rebuild re-reads only tables that changed. Used by the agent's ``SearchValue``
tool and by the value-selection stage.

>>> from sqlweave.db.demo import demo_database_path
>>> from sqlweave.database import Database
>>> idx = ValueIndex.build(Database.open(demo_database_path()))
>>> hit = idx.search("Frence", k=1)[0]
>>> (hit.table, hit.column, hit.value)
('customers', 'country', 'France')
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

import numpy as np

from ..config import Settings
from ..db.introspect import first_values_sql
from ..errors import SchemaError, SqlweaveError
from ..files import write_atomically

if TYPE_CHECKING:
    from ..db.protocol import Database

INDEX_VERSION = 1
MAX_VALUE_CHARS = 200
_WORD = re.compile(r"[0-9a-z]+")


@dataclass(frozen=True)
class ValueHit:
    """A stored value, where it lives, and how well it matched."""

    table: str
    column: str
    value: str
    score: float

    def as_dict(self) -> dict[str, object]:
        return {"table": self.table, "column": self.column, "value": self.value, "score": round(self.score, 3)}


def _tokens(text: str) -> list[str]:
    """Words plus character trigrams of each word (``#``-marked), all lower-cased."""
    words = _WORD.findall(text.lower())
    grams = [f"#{w[i:i + 3]}" for w in words if len(w) > 3 for i in range(len(w) - 2)]
    return words + grams


def _ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.lower().strip(), b.lower().strip()).ratio()


def similarity(query: str, value: str) -> float:
    """String similarity in [0, 1]; a value containing every word of the query scores at least 0.8.

    >>> round(similarity("paris", "SANTA PARIS"), 2) > round(similarity("paris", "Pietari"), 2)
    True
    """
    sim = _ratio(query, value)
    q, v = set(_WORD.findall(query.lower())), set(_WORD.findall(value.lower()))
    if q and q <= v:
        sim = max(sim, 0.8 + 0.2 * sim)
    return float(sim)


def _fingerprint(db: "Database", table: str, columns: tuple[str, ...], count: int | None = None) -> str:
    """The table's columns and row count (``count``: the one the schema just read says, else counted now)."""
    if count is None:
        count = db.trusted_read(f"SELECT COUNT(*) FROM {db.quote(table)}", timeout_s=db.timeout_s,
                                max_rows=1).rows[0][0]
    return hashlib.sha256(json.dumps([INDEX_VERSION, columns, count]).encode()).hexdigest()[:16]


class ValueIndex:
    """BM25 over ``(table, column, value)`` entries; :meth:`search` returns :class:`ValueHit`, best first."""

    def __init__(self, entries: list[tuple[str, str, str]]) -> None:
        import bm25s

        self.entries = entries
        self._tables = np.array([t.lower() for t, _, _ in entries], dtype=object)
        self._columns = np.array([c.lower() for _, c, _ in entries], dtype=object)
        self.retriever = bm25s.BM25()
        if entries:
            corpus = [_tokens(v) or ["_"] for _, _, v in entries]
            self.retriever.index(bm25s.tokenize([" ".join(c) for c in corpus], lower=False, stopwords=None,
                                                token_pattern=r"\S+", show_progress=False), show_progress=False)

    @classmethod
    def build(cls, db: "Database", *, max_per_column: int = 5000, persist: bool = True,
              progress: Callable[[int, int], None] | None = None, settings: Settings | None = None) -> "ValueIndex":
        """Read the distinct text values of every text column of ``db`` (reusing unchanged tables from disk, in
        the cache directory of ``settings``, read from the environment when not given)."""
        schema = db.schema()
        root = (settings if settings is not None else Settings.from_env()).cache_dir
        folder = root / "values" / _db_key(db) if persist else None
        entries: list[tuple[str, str, str]] = []
        tables = schema.tables
        for i, table in enumerate(tables):
            text_cols = tuple(c.name for c in table.columns if c.is_text)
            if text_cols:
                entries.extend(_table_values(db, table.name, text_cols, max_per_column, folder, table.row_count))
            if progress:
                progress(i + 1, len(tables))
        return cls(entries)

    def __len__(self) -> int:
        return len(self.entries)

    def search(self, value: str, *, table: str | None = None, column: str | None = None, k: int = 10) -> list[ValueHit]:
        """Values like ``value``, optionally only in ``table`` and/or ``column``; ties broken by string similarity."""
        if not self.entries:  # a database with no text value (its BM25 was never indexed)
            return []
        tokens = [t for t in _tokens(value) if t in self.retriever.vocab_dict]
        if not tokens:
            return []
        mask = np.ones(len(self.entries), dtype=np.float32)
        if table is not None:
            mask *= self._tables == table.lower()
            if not mask.any():
                raise SchemaError(f"no text values indexed for table {table!r}",
                                  hint="Check the table name, or search without a table.")
        if column is not None:
            mask *= self._columns == column.lower()
            if not mask.any():
                raise SchemaError(f"no text values indexed for column {column!r}",
                                  hint="Check the column name (text columns only), or search without a column.")
        scores = self.retriever.get_scores(tokens, weight_mask=mask)
        top = np.argsort(-scores, kind="stable")[: max(k * 4, 20)]
        hits = []
        for i in top:
            if scores[i] <= 0:
                break
            t, c, v = self.entries[int(i)]
            hits.append(ValueHit(t, c, v, similarity(value, v)))
        hits.sort(key=lambda h: -h.score)
        return hits[:k]

    def matches_in(self, text: str, *, max_n: int = 4, min_similarity: float = 0.86,
                   stopwords: Iterable[str] = ()) -> list[ValueHit]:
        """Values that an n-gram of ``text`` (up to ``max_n`` words) names, exactly or nearly (value selection)."""
        words = re.findall(r"[\w'.-]+", text)
        stop = {w.lower() for w in stopwords}
        seen: dict[tuple[str, str, str], ValueHit] = {}
        for n in range(max_n, 0, -1):
            for i in range(len(words) - n + 1):
                gram = " ".join(words[i:i + n]).strip(".'")
                if len(gram) < 3 or gram.lower() in stop or gram.isdigit():
                    continue
                for h in self.search(gram, k=3):
                    if _ratio(gram, h.value) >= min_similarity and (h.table, h.column, h.value) not in seen:
                        seen[(h.table, h.column, h.value)] = h
        return sorted(seen.values(), key=lambda h: -h.score)


def _db_key(db: "Database") -> str:
    target = db.target
    if "://" not in target and Path(target).exists():
        target = str(Path(target).resolve())
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', db.name)[:40]}-{hashlib.sha256(target.encode()).hexdigest()[:12]}"


def _table_values(db: "Database", table: str, columns: tuple[str, ...], limit: int,
                  folder: Path | None, count: int | None = None) -> list[tuple[str, str, str]]:
    try:
        fp = _fingerprint(db, table, columns, count)
    except SqlweaveError:
        return []
    path = folder / f"{hashlib.sha256(table.encode()).hexdigest()[:16]}.json" if folder else None
    if path is not None and path.exists():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            if saved.get("fingerprint") == fp:
                return [(table, c, v) for c, v in saved["values"]]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    values: list[tuple[str, str]] = []
    for col in columns:
        try:
            rows = db.trusted_read(first_values_sql(db, table, col, limit), timeout_s=db.timeout_s,
                                   max_rows=limit).rows
        except SqlweaveError:
            continue
        for (v,) in rows:
            if isinstance(v, str) and v.strip() and len(v) <= MAX_VALUE_CHARS:
                values.append((col, v))
    if path is not None:  # a cache that cannot be written (read-only, full) costs the next build, not this one
        data = json.dumps({"table": table, "fingerprint": fp, "values": values}).encode("utf-8")
        write_atomically(path, lambda fh: fh.write(data))
    return [(table, c, v) for c, v in values]
