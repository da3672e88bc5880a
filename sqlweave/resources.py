"""What is expensive to build and worth sharing: loaded models, embedders, example pools, value indexes.

A :class:`Resources` owns them for whoever holds it: an :class:`~sqlweave.engine.Engine`, the evaluation
runner, a server's catalog of engines. Each thing is built once, on first use, by the module that knows how
(``retrieval.pool.load_pool``, ``stages.select_values.value_index``, ``retrieval.dense.get_embedder``, the
local model backend, the language identifier of :mod:`sqlweave.question`, the tokenizer of
:mod:`sqlweave.llm.tokens`), and kept under a kind and a key. The caches of what is costly to compute per schema
(its BM25 indexes and foreign-key graph, :mod:`sqlweave.retrieval.schema_retriever`; its rendering and per-table
token counts, :mod:`sqlweave.stages.render_schema`) are kinds too, each bounded (``keep``: the least recently
used entry goes first) and keyed by the schema itself, so two databases, or two tenants whose access policies
show different schemas, never share an entry. No module keeps a cache of its own. Sharing is explicit: engines made by
:func:`sqlweave.connect` use :func:`shared_resources` unless given their own; two engines with their own
resources see their own pools (a user example taught to one does not reach the other's loaded pool).

Model weights in memory (``models``) can be shared between resources with different settings, which is what
a test suite does to load each model once.

>>> res = Resources(Settings.from_env({"SQLWEAVE_CACHE_DIR": "/tmp/sqlweave-doc"}))
>>> res.get("squares", 4, lambda: 16), res.get("squares", 4, lambda: 0)
(16, 16)
>>> str(res.settings.cache_dir)
'/tmp/sqlweave-doc'
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Generic, Hashable, TypeVar

from .config import Settings

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: Kinds kept in the model store (weights in memory, independent of the settings' folders).
MODEL_KINDS = frozenset({"llama", "sentence_transformer", "llama_vocab", "language_identifier"})


class Store:
    """A thread-safe map (kind, key) -> built object, each built once; ``keep`` bounds a kind (least recently
    used first out). Objects with a ``close()`` method are closed when the store closes (and at exit)."""

    def __init__(self) -> None:
        self._items: "OrderedDict[tuple[str, Hashable], Any]" = OrderedDict()
        self._lock = threading.RLock()
        self._building: dict[tuple[str, Hashable], threading.Lock] = {}
        weakref.finalize(self, _close_all, self._items)  # at exit too: llama.cpp must free models while loaded

    def get(self, kind: str, key: Hashable, build: Callable[[], T], keep: int | None = None) -> T:
        slot = (kind, key)
        with self._lock:
            if slot in self._items:
                self._items.move_to_end(slot)
                return self._items[slot]
            gate = self._building.setdefault(slot, threading.Lock())
        with gate:  # one build per slot; other slots build in parallel
            with self._lock:
                if slot in self._items:
                    return self._items[slot]
            made = build()
            with self._lock:
                self._items[slot] = made
                self._building.pop(slot, None)
                if keep is not None:  # dropped, not closed: a caller may still be using it
                    mine = [s for s in self._items if s[0] == kind]
                    for old in mine[: max(0, len(mine) - keep)]:
                        del self._items[old]
            return made

    def items(self, kind: str) -> list[Any]:
        """Every ``kind`` object held, least recently used first."""
        with self._lock:
            return [v for (k, _), v in self._items.items() if k == kind]

    def close(self) -> None:
        _close_all(self._items)


class HashedKey:
    """A hashable value as a key, hashed once: a large frozen value (a :class:`~sqlweave.schema.Schema`) costs a
    walk over all its parts per hash, and a store hashes a key several times per look-up. Equal when the values
    are (the same object, or equal ones).

    >>> HashedKey(("a", 1)) == HashedKey(("a", 1)), len({HashedKey(("a", 1)), HashedKey(("a", 1))})
    (True, 1)
    """

    __slots__ = ("value", "_hash")

    def __init__(self, value: Hashable) -> None:
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HashedKey) and self._hash == other._hash and (
            self.value is other.value or self.value == other.value)

    def __repr__(self) -> str:
        return f"HashedKey({self.value!r})"


class BoundedMap(Generic[K, V]):
    """A thread-safe map that keeps at most ``entries`` items and at most ``max_size`` of their summed
    ``size(value)`` (e.g. bytes), dropping the least recently used first; an item larger than ``max_size`` alone
    is not kept. For a cache inside an object that a :class:`Resources` holds.

    >>> m = BoundedMap(entries=2)
    >>> m.put("a", 1); m.put("b", 2); m.get("a"); m.put("c", 3)
    1
    >>> sorted(m.keys()), m.get("b")
    (['a', 'c'], None)
    >>> sized = BoundedMap(max_size=10, size=len)
    >>> sized.put("x", "12345678"); sized.put("y", "1234"); sorted(sized.keys()), sized.size
    (['y'], 4)
    """

    def __init__(self, entries: int | None = None, *, max_size: int | None = None,
                 size: Callable[[V], int] | None = None) -> None:
        if entries is None and max_size is None:
            raise ValueError("a BoundedMap needs a bound: entries or max_size")
        self.entries, self.max_size = entries, max_size
        self._size_of = size if size is not None else (lambda _v: 1)
        self._items: "OrderedDict[K, tuple[V, int]]" = OrderedDict()
        self._lock = threading.Lock()
        self.size = 0

    def get(self, key: K) -> V | None:
        """The value for ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key``, dropping the least recently used items beyond the bounds."""
        n = self._size_of(value)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.size -= old[1]
            if self.max_size is not None and n > self.max_size:
                return
            self._items[key] = (value, n)
            self.size += n
            while (self.entries is not None and len(self._items) > self.entries) or \
                    (self.max_size is not None and self.size > self.max_size):
                self.size -= self._items.popitem(last=False)[1][1]

    def keys(self) -> list[K]:
        """The keys, least recently used first."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)


class Resources:
    """The settings and the built things one engine (or several, sharing it) uses.

    ``models`` is the store of weights in memory; pass another resources' ``models`` to share them.
    """

    def __init__(self, settings: Settings | None = None, *, models: Store | None = None) -> None:
        self.settings = settings if settings is not None else Settings.from_env()
        self.models = models if models is not None else Store()
        self.data = Store()

    def get(self, kind: str, key: Hashable, build: Callable[[], T], keep: int | None = None) -> T:
        """The ``kind`` object for ``key``, built with ``build()`` the first time."""
        store = self.models if kind in MODEL_KINDS else self.data
        return store.get(kind, key, build, keep)

    def items(self, kind: str) -> list[Any]:
        """Every ``kind`` object built so far (e.g. the loaded example pools)."""
        return (self.models if kind in MODEL_KINDS else self.data).items(kind)

    def close(self) -> None:
        """Free what this holds (its own data; the models too, unless shared)."""
        self.data.close()
        if self.models is not getattr(_SHARED, "models", None):
            self.models.close()

    def __repr__(self) -> str:
        return f"Resources(cache_dir={str(self.settings.cache_dir)!r})"


_SHARED: Resources | None = None
_SHARED_LOCK = threading.Lock()


def shared_resources() -> Resources:
    """The process's default resources, made (and its settings read) on first use: what engines, pipelines and
    backends use when none is given."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = Resources()
        return _SHARED


def set_shared_resources(resources: Resources | None) -> Resources | None:
    """Make ``resources`` the process default (``None``: made afresh on next use); returns the previous one."""
    global _SHARED
    with _SHARED_LOCK:
        previous, _SHARED = _SHARED, resources
        return previous


def _close(obj: Any) -> None:
    close = getattr(obj, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # noqa: BLE001 - freeing must not fail the caller
            pass


def _close_all(items: "OrderedDict[tuple[str, Hashable], Any]") -> None:
    while items:
        _close(items.popitem()[1])
