"""Late-interaction (ColBERT-style MaxSim) scoring with a sentence-transformers model's token embeddings.

RB-SQL's Table- and Column-Retrievers score a question ``q`` against a serialised table or column ``d`` as
``S(q, d) = sum_i max_j q_i . d_j`` over L2-normalised token embeddings. RB-SQL fine-tunes BERT encoders
(with a 1D-CNN down-projection) for this; sqlweave uses the contextual token embeddings of the bundled,
untrained-for-this all-MiniLM-L6-v2 instead (no training data or GPU needed), drops the special tokens,
and, because the encoder was not trained to ignore them, the question's stopword and punctuation tokens.
:meth:`TokenEmbedder.maxsim` returns the *mean* over question tokens (the paper's sum divided by the
number of question tokens), so scores of questions of different lengths are comparable, in [-1, 1].

Token embeddings are cached on disk (``<cache_dir>/token_embeddings.sqlite``, float16, keyed by model and
text) and in memory (the :data:`TOKEN_MEMORY_BYTES` used last), so a schema's texts are embedded once per machine.

>>> te = TokenEmbedder()                                            # doctest: +SKIP
>>> q = te.question_tokens("How many singers are there?")           # doctest: +SKIP
>>> te.maxsim(q, te.encode(["singer || name | age"])[0]) > te.maxsim(q, te.encode(["stadium || capacity"])[0])  # doctest: +SKIP
True
"""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..config import Settings
from ..files import CacheFile
from ..resources import BoundedMap
from .dense import Embedder, get_embedder

if TYPE_CHECKING:
    from ..resources import Resources

_STOP = frozenset("""a an the of and or in on at for to from by with as is are was were be been do does did what which who
whom whose how many much when where why that this these those there their its it his her them they we you i me my
our your all each every any some list show give find return tell me please than more most less least per""".split())


#: Token vectors a :class:`TokenEmbedder` keeps in memory, in bytes (the least recently used go first; the disk
#: cache keeps them all): about 8,000 column texts of 10 word pieces (384 float32 each).
TOKEN_MEMORY_BYTES = 128 * 1024 * 1024


def _nbytes(vec: np.ndarray) -> int:
    return int(vec.nbytes)


class TokenEmbedder:
    """Per-token unit vectors of texts (special tokens removed) from ``embedder``'s model."""

    def __init__(self, embedder: Embedder | None = None, *, cache: bool = True,
                 settings: Settings | None = None) -> None:
        self.embedder = embedder or get_embedder()
        self._memory: BoundedMap[str, np.ndarray] = BoundedMap(max_size=TOKEN_MEMORY_BYTES, size=_nbytes)
        self._lock = threading.Lock()
        root = (settings if settings is not None else Settings.from_env()).cache_dir
        self._cache = CacheFile(root / "token_embeddings.sqlite", "CREATE TABLE IF NOT EXISTS tokens (key TEXT "
                                "PRIMARY KEY, n INTEGER NOT NULL, vec BLOB NOT NULL)") if cache else None

    @property
    def max_tokens(self) -> int:
        """The model's input limit in word pieces (texts are truncated there)."""
        return int(getattr(self.embedder.model, "max_seq_length", 256) or 256)

    def count_tokens(self, text: str) -> int:
        """Word pieces of ``text`` without special tokens (not truncated)."""
        return self.embedder.count_tokens(text)

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.embedder.model_id}\x00tokens\x00{text}".encode()).hexdigest()[:32]

    def _embed(self, texts: list[str]) -> list[np.ndarray]:
        model = self.embedder.model
        out: Any = model.encode(texts, output_value="token_embeddings", batch_size=self.embedder.batch_size,
                                convert_to_numpy=False, show_progress_bar=False)
        vecs = []
        for t in out:
            a = np.asarray(t.detach().cpu().numpy() if hasattr(t, "detach") else t, dtype=np.float32)
            a = a[1:-1] if len(a) > 2 else a  # [CLS] ... [SEP]
            a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
            vecs.append(a.astype(np.float32))
        return vecs

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        """One ``(tokens, dim)`` float32 array of unit vectors per text."""
        texts = list(texts)
        keys = [self._key(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for k in keys:
                vec = self._memory.get(k)
                if vec is not None:
                    found[k] = vec
        todo = [k for k in dict.fromkeys(keys) if k not in found]
        if self._cache is not None and todo:
            with self._lock:
                for i in range(0, len(todo), 500):
                    chunk = todo[i:i + 500]
                    rows = self._cache.read(
                        f"SELECT key, n, vec FROM tokens WHERE key IN ({','.join('?' * len(chunk))})", chunk)
                    for k, n, v in rows:
                        found[k] = np.frombuffer(v, dtype=np.float16).astype(np.float32).reshape(n, -1)
        missing = {k: t for k, t in zip(keys, texts) if k not in found}
        if missing:
            items = sorted(missing.items())
            vecs = self._embed([t for _, t in items])
            for (k, _), v in zip(items, vecs):
                found[k] = v
            if self._cache is not None:
                with self._lock:
                    self._cache.write("INSERT OR REPLACE INTO tokens VALUES (?, ?, ?)",
                                      [(k, len(v), v.astype(np.float16).tobytes()) for (k, _), v in zip(items, vecs)])
        with self._lock:
            for k in keys:
                self._memory.put(k, found[k])
        return [found[k] for k in keys]

    def question_tokens(self, question: str) -> np.ndarray:
        """The question's token vectors without stopword and punctuation tokens (all of them if none is left)."""
        vecs = self.encode([question])[0]
        tokens = self.embedder.word_pieces(question)[: len(vecs)]
        keep = [i for i, tok in enumerate(tokens)
                if tok.lower() not in _STOP and any(ch.isalnum() for ch in tok) and not tok.startswith("##")]
        return vecs[keep] if keep else vecs

    @staticmethod
    def maxsim(query: np.ndarray, doc: np.ndarray) -> float:
        """Mean over query tokens of the best dot product with a document token."""
        if len(query) == 0 or len(doc) == 0:
            return 0.0
        return float((query @ doc.T).max(axis=1).mean())


def get_token_embedder(embedder: Embedder | None = None, resources: "Resources | None" = None) -> TokenEmbedder:
    """The :class:`TokenEmbedder` for ``embedder`` (the bundled MiniLM by default) that ``resources`` holds
    (default: :func:`~sqlweave.resources.shared_resources`), made on first use."""
    from ..resources import shared_resources

    res = resources if resources is not None else shared_resources()
    emb = embedder or get_embedder(resources=res)
    return res.get("token_embedder", emb.model_id, lambda: TokenEmbedder(emb, settings=res.settings))
