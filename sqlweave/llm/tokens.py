"""Token counts for prompt text.

With the embedded model installed, counts are exact (Qwen's tokenizer, read
from the GGUF file's vocabulary alone, which loads in well under a second).
Otherwise an estimate of one token per 3.5 characters is returned, flagged as such.

>>> estimate_tokens("SELECT count(*) FROM singer")
8
"""

from __future__ import annotations

import atexit
import contextlib
import io
import math
import threading
from functools import lru_cache
from typing import Any

_lock = threading.Lock()


def estimate_tokens(text: str) -> int:
    """A length-based estimate (about 3.5 characters per token for SQL and English)."""
    return math.ceil(len(text) / 3.5) if text else 0


@lru_cache(maxsize=1)
def _vocab() -> Any | None:
    try:
        from .weights import MODELS, assembled_path

        path = assembled_path(MODELS["1.5b"])
        if not path.exists():
            return None
        from llama_cpp import Llama

        # A vocabulary alone has no training context, and llama.cpp says so on stderr, through llama-cpp-python's
        # log callback (Python's sys.stderr), whatever ``verbose`` says: inside the CLI's output.
        with contextlib.redirect_stderr(io.StringIO()):
            vocab = Llama(model_path=str(path), vocab_only=True, verbose=False)
    except Exception:  # no runtime, no weights: counts fall back to the estimate
        return None
    atexit.register(vocab.close)  # freed while llama.cpp is still loaded (not during interpreter shutdown)
    return vocab


def count_tokens(text: str) -> tuple[int, bool]:
    """``(tokens, exact)`` for ``text``: exact with the embedded model's tokenizer when available."""
    vocab = _vocab()
    if vocab is None:
        return estimate_tokens(text), False
    with _lock:
        return len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False)), True
