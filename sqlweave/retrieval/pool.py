"""The example pool: question/SQL pairs with their question skeletons, SQL skeletons and normalised SQL.

Built from a Spider-format training file (``train.json`` with ``tables.json`` beside it for
the schema names to mask), or from the bundle sqlweave ships (:data:`BUNDLED_POOL`, Spider's 7,000 training pairs
already derived), and from pairs a user adds. Derived fields are cached on disk,
one line per example keyed by a hash of its inputs (and :data:`POOL_VERSION`), so adding
examples recomputes only the new ones. BM25 indexes over questions, question skeletons and
SQL skeletons are built on first use; so are the dense index over question skeletons
(:meth:`ExamplePool.dense_search`, vectors cached on disk by the embedder; it also holds the
skeletons of the model's simplified wordings once ``sqlweave examples simplify`` has made them,
see :mod:`sqlweave.retrieval.simplified`) and the parsed
normalised ASTs used for AST re-ranking (:meth:`ExamplePool.normalized_tree`).

>>> pool = ExamplePool([])
>>> pool.add("How many singers are there?", "SELECT count(*) FROM singer", schema_names=["singer"])
>>> pool.search("question", "number of singers", k=1)[0].sql
'SELECT count(*) FROM singer'
>>> pool.examples[0].normalized_sql
'SELECT COUNT(*) FROM _'
"""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Sequence, cast

import numpy as np
import sqlglot
from sqlglot import exp

from ..config import Settings
from ..errors import ConfigurationError, SqlweaveError
from ..files import append_jsonl
from ..sql.normalize import normalize_ast, normalized_sql, quoted_values_to_strings
from ..sql.skeleton import sql_skeleton
from .lexical import BM25Index, shape_tokens
from .question_skeleton import question_skeleton

if TYPE_CHECKING:
    from ..resources import Resources
    from .dense import DenseIndex, Embedder

#: Derived examples are appended to the cache file every this many, so an interrupted build loses at most these.
DERIVED_CHECKPOINT = 200

#: Bumped whenever a derived field changes, so cached lines of an older version are derived again.
#: 2: ``normalized_sql`` added; double-quoted values and possessives handled in question skeletons.
POOL_VERSION = 2
FIELDS = ("question", "question_skeleton", "sql_skeleton")
#: The index over the SQL skeletons that keeps their placeholders, commas and brackets (:meth:`ExamplePool.index`).
SHAPE = "sql_shape"
#: The pool sqlweave ships: Spider 1.0's ``train_spider`` pairs (Yu et al. 2018, CC BY-SA 4.0; see
#: ``sqlweave/data/SPIDER-LICENSE.md``), derived at :data:`POOL_VERSION` by ``scripts/bundle_pool.py``.
BUNDLED_POOL = Path(__file__).resolve().parent.parent / "data" / "spider-train-pool.json.gz"
#: The columns of a bundle's rows.
BUNDLE_FIELDS = ("question", "sql", "db_id", "question_skeleton", "sql_skeleton", "normalized_sql")
DENSE_FIELDS = ("question_skeleton", "question")


@dataclass(frozen=True)
class PoolExample:
    """One question/SQL pair and the fields derived from it.

    ``normalized_sql`` is the ASTReS-normalised SQL (aliases resolved, identifiers and values masked; see
    :mod:`sqlweave.sql.normalize`), empty when the SQL does not parse.
    """

    question: str
    sql: str
    db_id: str
    question_skeleton: str
    sql_skeleton: str
    source: str = "train"
    normalized_sql: str = ""
    #: Where a user's pair came from: ``cli``, ``library``, ``feedback:right accepted``... (empty for training
    #: pairs and pairs added before origins were kept).
    origin: str = ""


def _literals(sql: str) -> list[str]:
    """The values in ``sql``, including double-quoted strings, which SQLite's grammar reads as names."""
    try:
        # sqlglot 30 types parse_one() with its Expr base; every node it parses is a concrete Expression.
        tree = quoted_values_to_strings(cast(exp.Expression, sqlglot.parse_one(sql, read="sqlite")))
        return [lit.this for lit in tree.find_all(exp.Literal)]
    except (sqlglot.errors.SqlglotError, ValueError):
        return []


def _normalized(sql: str) -> str:
    try:
        return normalized_sql(sql, "sqlite")
    except SqlweaveError:
        return ""


def derive(question: str, sql: str, db_id: str, schema_names: Iterable[str], source: str = "train",
           origin: str = "") -> PoolExample:
    """Compute the derived fields of one pair (a SQL that does not parse keeps an empty SQL skeleton and normalised SQL).

    >>> derive("How many pets are older than 3?", "SELECT count(*) FROM pets AS T1 WHERE T1.age > 3", "pets",
    ...        ["pets", "age"]).normalized_sql
    'SELECT COUNT(*) FROM _ WHERE _ > ?'
    """
    try:
        skel = sql_skeleton(sql, "sqlite")
    except SqlweaveError:
        skel = ""
    return PoolExample(question, sql, db_id, question_skeleton(question, schema_names, _literals(sql)), skel, source,
                       _normalized(sql), origin)


def _key(question: str, sql: str, db_id: str) -> str:
    return hashlib.sha256(f"{POOL_VERSION}\x00{db_id}\x00{question}\x00{sql}".encode()).hexdigest()[:24]


class ExamplePool:
    """Question/SQL examples and their BM25 indexes."""

    def __init__(self, examples: Sequence[PoolExample], user_file: Path | None = None) -> None:
        self.examples: list[PoolExample] = list(examples)
        self.user_file = user_file
        self._indexes: dict[str, BM25Index] = {}
        #: (field, embedder) -> the dense index and, per row, the index of the example it belongs to.
        self._dense: dict[tuple[str, str], tuple[DenseIndex, list[int]]] = {}
        #: Schema names per database (to mask in question skeletons), when the pool came from a training file.
        self.names: dict[str, list[str]] = {}
        #: Model rewrites of pool questions (Guo et al.'s repository: original + simplified skeletons).
        self.simplified: dict[str, str] = {}
        self._trees: dict[str, exp.Expression | None] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_spider(cls, train_file: str | Path, *, tables_file: str | Path | None = None,
                    progress: Callable[[int, int], None] | None = None, include_user: bool = True,
                    settings: Settings | None = None) -> "ExamplePool":
        """Load ``train.json`` (db_id, question, query) and derive skeletons, reusing cached ones (in the cache
        directory of ``settings``, read from the environment when not given)."""
        settings = settings if settings is not None else Settings.from_env()
        train_file = Path(train_file)
        try:
            data = json.loads(train_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ConfigurationError(f"cannot read examples from {train_file}: {err}",
                                     hint="Pass a Spider-format train.json (db_id, question, query).") from err
        tables_file = Path(tables_file) if tables_file else train_file.parent / "tables.json"
        names: dict[str, list[str]] = {}
        if tables_file.exists():
            for db in json.loads(tables_file.read_text(encoding="utf-8")):
                names[db["db_id"]] = list(db["table_names_original"]) + [c for _, c in db["column_names_original"] if c != "*"]
        items = [item for item in data if isinstance(item, dict) and {"db_id", "question", "query"} <= item.keys()]
        return cls._assemble(_derive_cached(items, names, settings, progress), names, settings, include_user)

    @classmethod
    def from_bundle(cls, path: str | Path = BUNDLED_POOL, *, progress: Callable[[int, int], None] | None = None,
                    include_user: bool = True, settings: Settings | None = None) -> "ExamplePool":
        """Load a bundle written by :func:`write_bundle` (by default the one sqlweave ships). Its derived fields are
        used as they are when it was written at this :data:`POOL_VERSION`, else derived again (and cached)."""
        settings = settings if settings is not None else Settings.from_env()
        try:
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                data = json.load(fh)
            version, names = data["pool_version"], {str(k): list(v) for k, v in data["names"].items()}
            rows = [dict(zip(BUNDLE_FIELDS, row, strict=True)) for row in data["examples"]]
        except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise ConfigurationError(f"cannot read the example bundle {path}: {err}",
                                     hint="Reinstall sqlweave, or pass --examples PATH/TO/train.json.") from err
        if version == POOL_VERSION:
            examples = [PoolExample(**row) for row in rows]
        else:  # written by an older sqlweave: derive again from the pairs
            items = [{"question": r["question"], "query": r["sql"], "db_id": r["db_id"]} for r in rows]
            examples = _derive_cached(items, names, settings, progress)
        return cls._assemble(examples, names, settings, include_user)

    @classmethod
    def from_file(cls, path: str | Path, *, progress: Callable[[int, int], None] | None = None,
                  include_user: bool = True, settings: Settings | None = None) -> "ExamplePool":
        """:meth:`from_bundle` for a ``.json.gz`` bundle, else :meth:`from_spider`."""
        load = cls.from_bundle if str(path).endswith(".json.gz") else cls.from_spider
        return load(path, progress=progress, include_user=include_user, settings=settings)

    @classmethod
    def _assemble(cls, examples: list[PoolExample], names: dict[str, list[str]], settings: Settings,
                  include_user: bool) -> "ExamplePool":
        pool = cls(examples, user_file=user_pool_file(settings))
        pool.names = names
        if include_user and settings.user_examples:
            pool.examples.extend(user_examples(settings))
        return pool

    def add(self, question: str, sql: str, db_id: str = "user", schema_names: Iterable[str] = (),
            persist: bool = False) -> None:
        """Add one pair (persisted to the user's pool file when ``persist``); indexes rebuild on next search."""
        ex = derive(question, sql, db_id, schema_names, source="user")
        self.insert(ex)
        if persist:
            append_jsonl(self.user_file or user_pool_file(), [asdict(ex)])

    def insert(self, ex: PoolExample) -> None:
        """Add an already derived example; indexes rebuild on next search."""
        with self._lock:
            self.examples.append(ex)
            self._indexes.clear()
            self._dense.clear()  # rebuilt on next use; the embedder's disk cache re-embeds only the new text

    def attach_simplified(self, simplified: dict[str, str]) -> int:
        """Add simplified wordings of pool questions (question -> simplified question) to the repository:
        the dense question-skeleton index then holds the skeletons of both wordings (Guo et al. 3.1.2,
        a repository up to twice the training set). Returns how many pool examples have one.
        """
        with self._lock:
            self.simplified = {q: s for q, s in simplified.items() if s and s.strip() and s != q}
            self._dense.clear()
        return sum(e.question in self.simplified for e in self.examples)

    def index(self, field: str) -> BM25Index:
        """The BM25 index over ``field`` (:data:`FIELDS`), built on first use; ``"sql_shape"`` indexes the SQL
        skeletons by :func:`~sqlweave.retrieval.lexical.shape_tokens` (placeholders and symbols kept)."""
        if field not in FIELDS + (SHAPE,):
            raise ConfigurationError(f"no index on {field!r}", hint=f"Use one of: {', '.join(FIELDS + (SHAPE,))}.")
        with self._lock:
            if field not in self._indexes:
                if field == SHAPE:
                    self._indexes[field] = BM25Index([e.sql_skeleton for e in self.examples], tokenizer=shape_tokens)
                else:
                    self._indexes[field] = BM25Index([getattr(e, field) for e in self.examples])
            return self._indexes[field]

    def search(self, field: str, text: str, k: int = 4, exclude: Callable[[PoolExample], bool] | None = None) -> list[PoolExample]:
        """The ``k`` examples whose ``field`` best matches ``text`` (BM25), skipping ``exclude``d ones."""
        out: list[PoolExample] = []
        for i, _ in self.index(field).search(text, k=k * 4 + 8):
            ex = self.examples[i]
            if exclude is not None and exclude(ex):
                continue
            if any(o.sql == ex.sql and o.question == ex.question for o in out):
                continue
            out.append(ex)
            if len(out) == k:
                break
        return out

    def dense_index(self, field: str = "question_skeleton", embedder: "Embedder | None" = None) -> "DenseIndex":
        """The dense (cosine) index over ``field``, built once per pool and embedder (vectors cached on disk).

        Needs the ``embed`` extra: :class:`~sqlweave.errors.MissingDependencyError` otherwise.
        """
        return self._dense_entry(field, embedder)[0]

    def _dense_entry(self, field: str, embedder: "Embedder | None") -> tuple["DenseIndex", list[int]]:
        """The dense index over ``field`` and, per row, the index of the example it belongs to."""
        if field not in DENSE_FIELDS:
            raise ConfigurationError(f"no dense index on {field!r}", hint=f"Use one of: {', '.join(DENSE_FIELDS)}.")
        from .dense import DenseIndex, get_embedder

        emb = embedder or get_embedder()
        key = (field, emb.model_id)
        with self._lock:
            if key not in self._dense:
                texts = [getattr(e, field) for e in self.examples]
                owners = list(range(len(texts)))
                if field == "question_skeleton" and self.simplified:
                    for i, e in enumerate(self.examples):
                        simple = self.simplified.get(e.question)
                        if simple:
                            texts.append(question_skeleton(simple, self.names.get(e.db_id, [])))
                            owners.append(i)
                self._dense[key] = (DenseIndex(texts, emb), owners)
            return self._dense[key]

    def dense_search(self, field: str, text: str, k: int = 4, exclude: Callable[[PoolExample], bool] | None = None,
                     embedder: "Embedder | None" = None) -> list[PoolExample]:
        """The ``k`` examples whose ``field`` is nearest to ``text`` by cosine similarity, skipping ``exclude``d ones
        and repeated pairs (many pool questions share one skeleton, and a simplified wording shares its example)."""
        index, owners = self._dense_entry(field, embedder)
        if not text.strip() or index.size == 0 or k <= 0:
            return []
        scores = index.scores(text)
        out: list[PoolExample] = []
        seen: set[tuple[str, str]] = set()
        for i in np.argsort(-scores, kind="stable"):
            ex = self.examples[owners[int(i)]]
            if (exclude is not None and exclude(ex)) or (ex.question, ex.sql) in seen:
                continue
            seen.add((ex.question, ex.sql))
            out.append(ex)
            if len(out) == k:
                break
        return out

    def normalized_tree(self, example: PoolExample) -> exp.Expression | None:
        """The parsed ``normalized_sql`` of ``example`` (cached per text; None when it has none).

        Treat the tree as read-only: it is shared by every call.
        """
        text = example.normalized_sql
        if not text:
            return None
        tree = self._trees.get(text)
        if tree is None and text not in self._trees:
            try:
                tree = normalize_ast(text, "sqlite")
            except SqlweaveError:
                tree = None
            self._trees[text] = tree
        return tree

    def __len__(self) -> int:
        return len(self.examples)


def _derive_cached(items: list[dict], names: dict[str, list[str]], settings: Settings,
                   progress: Callable[[int, int], None] | None = None) -> list[PoolExample]:
    """The derived examples of ``items`` (db_id, question, query), reusing the ones cached in ``settings``' cache
    directory and appending the new ones to it as they come (an interrupted build keeps them)."""
    cache = settings.cache_dir / "pool" / "derived.jsonl"
    known: dict[str, PoolExample] = {}
    if cache.exists():
        for line in cache.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                key = row.pop("key")
                known[key] = PoolExample(**row)
            except (ValueError, TypeError, KeyError):
                continue
    examples: list[PoolExample] = []
    fresh: list[tuple[str, PoolExample]] = []

    def save() -> None:
        append_jsonl(cache, ({"key": k, **asdict(ex)} for k, ex in fresh))
        fresh.clear()

    for i, item in enumerate(items):
        k = _key(item["question"], item["query"], item["db_id"])
        ex = known.get(k)
        if ex is None:
            ex = derive(item["question"], item["query"], item["db_id"], names.get(item["db_id"], []))
            fresh.append((k, ex))
            if len(fresh) >= DERIVED_CHECKPOINT:
                save()
        examples.append(ex)
        if progress:
            progress(i + 1, len(items))
    if fresh:
        save()
    return examples


def write_bundle(pool: ExamplePool, path: str | Path, *, source: str, license: str) -> int:
    """Write ``pool``'s training examples (not the user's) and schema names as a gzipped bundle that
    :meth:`ExamplePool.from_bundle` reads without deriving anything; returns how many examples it holds."""
    rows = [[getattr(ex, f) for f in BUNDLE_FIELDS] for ex in pool.examples if ex.source != "user"]
    payload = {"pool_version": POOL_VERSION, "source": source, "license": license, "fields": list(BUNDLE_FIELDS),
               "names": {db: pool.names[db] for db in sorted({r[2] for r in rows}) if db in pool.names},
               "examples": rows}
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    Path(path).write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))  # same pairs, same bytes
    return len(rows)


def user_pool_file(settings: Settings | None = None) -> Path:
    """Where the user's own examples are kept (one JSON line each): ``<cache_dir>/pool/user.jsonl``."""
    return (settings if settings is not None else Settings.from_env()).cache_dir / "pool" / "user.jsonl"


def user_examples(settings: Settings | None = None) -> list[PoolExample]:
    """The user's own examples, oldest first (lines that cannot be read are skipped)."""
    path = user_pool_file(settings)
    out: list[PoolExample] = []
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            if "normalized_sql" not in row:  # written before POOL_VERSION 2
                row["normalized_sql"] = _normalized(row["sql"])
            out.append(PoolExample(**row))
        except (ValueError, TypeError, KeyError):
            continue
    return out


def add_user_example(question: str, sql: str, *, db_id: str = "user", schema_names: Iterable[str] = (),
                     origin: str = "library", resources: "Resources | None" = None) -> PoolExample:
    """Persist one of the user's question/SQL pairs in the user pool file of ``resources``' settings; the pools
    ``resources`` has loaded get it at once (default: :func:`~sqlweave.resources.shared_resources`), other
    resources' pools when they next load. ``origin`` is kept with the pair (where it came from).

    >>> ex = add_user_example("How many singers?", "SELECT count(*) FROM singer", db_id="concert_singer",
    ...                       schema_names=["singer"])   # doctest: +SKIP
    >>> ex.question_skeleton, ex.sql_skeleton             # doctest: +SKIP
    ('How many _?', 'SELECT COUNT(*) FROM _')
    """
    if not question.strip() or not sql.strip():
        raise ConfigurationError("an example needs a question and its SQL", hint="Give both, e.g. "
                                 "add_user_example('How many singers?', 'SELECT count(*) FROM singer').")
    from ..resources import shared_resources

    res = resources if resources is not None else shared_resources()
    names = list(schema_names)
    ex = derive(question, sql, db_id, names, source="user", origin=origin)
    append_jsonl(user_pool_file(res.settings), [asdict(ex)])
    for pool in res.items("pool"):
        pool.insert(ex)
    return ex


def load_pool(train_file: str | Path, resources: "Resources | None" = None) -> ExamplePool:
    """The pool for ``train_file`` that ``resources`` holds (default: :func:`~sqlweave.resources.shared_resources`),
    loaded on first use with the user's examples and the recorded simplifications of its settings."""
    from ..resources import shared_resources
    from .simplified import load_simplified, simplified_file

    res = resources if resources is not None else shared_resources()

    def build() -> ExamplePool:
        pool = ExamplePool.from_file(train_file, settings=res.settings)
        pool.attach_simplified(load_simplified(simplified_file(res.settings)))
        return pool

    return res.get("pool", str(Path(train_file).resolve()), build)
