"""A persistent response cache (one SQLite file) in front of any backend.

The key is a hash of the backend's identity, the messages and the options, so a
rerun with the same inputs costs no model time. Hits are marked ``cached=True``.

>>> import tempfile, pathlib
>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.llm.base import Message
>>> inner = FakeLLM(["SELECT 1"])
>>> llm = CachedLLM(inner, pathlib.Path(tempfile.mkdtemp()) / "cache.sqlite")
>>> a = llm.complete([Message("user", "q")]); b = llm.complete([Message("user", "q")])
>>> (a.text, b.text, b.cached, len(inner.calls))
('SELECT 1', 'SELECT 1', True, 1)
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path

from ..files import CacheFile
from .base import LLM, Completion, GenerationOptions, Message, Usage, WrappedLLM


class CachedLLM(WrappedLLM):
    """Wraps ``inner``; answers found in the cache file are returned without calling it."""

    def __init__(self, inner: LLM, path: Path) -> None:
        super().__init__(inner)
        self.path = Path(path)
        self._lock = threading.Lock()
        #: Calls of this process answered from the cache file.
        self.hits = 0
        #: the file (one that cannot be read or written costs the cache, never an answer)
        self.file = CacheFile(self.path, "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, "
                                         "texts TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, seconds REAL, "
                                         "created REAL)")
        self.file.prepare()

    def key(self, messages: tuple[Message, ...], options: GenerationOptions) -> str:
        payload = {
            "backend": self.inner.cache_key_params_for(options),
            "messages": [m.as_dict() for m in messages],
            # No grammar (or choices, continuation) leaves the key as it was before they existed, so earlier
            # answers stay cached.
            "options": options.model_dump(exclude={"timeout_s"} | {k for k in ("grammar", "choices", "continuation")
                                                                   if getattr(options, k) is None}),
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()

    def _complete(self, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        start = time.perf_counter()
        k = self.key(messages, options)
        with self._lock:
            found = self.file.read(
                "SELECT texts, prompt_tokens, completion_tokens, seconds FROM responses WHERE key = ?", (k,))
        row = found[0] if found else None
        texts = _stored_texts(row[0]) if row is not None else ()
        if row is not None and _is_answer(texts):  # an empty entry (written by an older version) is a miss
            with self._lock:
                self.hits += 1
            return Completion(texts, Usage(row[1], row[2]), time.perf_counter() - start,
                              self.model_id, cached=True, original_seconds=row[3])
        result = self.inner.complete(messages, options)  # a failed call raises: nothing is stored
        if not _is_answer(result.texts):
            return result  # an empty answer is a failure to answer, never worth replaying
        with self._lock:
            self.file.write("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)", [
                (k, self.model_id, json.dumps(list(result.texts)), result.usage.prompt_tokens,
                 result.usage.completion_tokens, result.cost_seconds, time.time())])  # a replayed answer: its first cost
        return result

    def __len__(self) -> int:
        rows = self.file.read("SELECT COUNT(*) FROM responses")
        return int(rows[0][0]) if rows else 0


def _is_answer(texts: tuple[str, ...]) -> bool:
    """Whether ``texts`` may be cached: at least one sample, and none of them empty."""
    return bool(texts) and all(isinstance(t, str) and t.strip() for t in texts)


def _stored_texts(raw: str) -> tuple[str, ...]:
    """The texts of a cache row; an unreadable row reads as none (a miss that the next answer overwrites)."""
    try:
        texts = json.loads(raw)
    except (TypeError, ValueError):
        return ()
    return tuple(texts) if isinstance(texts, list) else ()
