"""Token counts for prompt text.

With the embedded model installed, counts are exact (Qwen's tokenizer, read
from the GGUF file's vocabulary alone, which loads in well under a second).
Otherwise an estimate of one token per 3.5 characters is returned, flagged as such.
The vocabulary, once read, is kept with the other models in memory of a :class:`~sqlweave.resources.Resources`
(the process's shared ones unless given others), which frees it when it closes.

>>> estimate_tokens("SELECT count(*) FROM singer")
8
"""

from __future__ import annotations

import contextlib
import io
import math
import threading
from typing import Any

from ..resources import Resources, shared_resources

#: The kind under which :class:`~sqlweave.resources.Resources` keep the vocabulary (in their model store).
VOCABULARY = "llama_vocab"


def estimate_tokens(text: str) -> int:
    """A length-based estimate (about 3.5 characters per token for SQL and English)."""
    return math.ceil(len(text) / 3.5) if text else 0


class Vocabulary:
    """The embedded model's tokenizer, from its weights file's vocabulary alone; one count at a time.

    ``Vocabulary(llama).count("SELECT 1")`` is the number of tokens of the text, without a leading BOS.
    """

    def __init__(self, llama: Any) -> None:
        self._llama = llama
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        with self._lock:
            return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def close(self) -> None:
        """Free llama.cpp's vocabulary (the resources holding it call this when they close, and at exit)."""
        self._llama.close()


def _read(path: Any) -> Vocabulary | None:
    try:
        if not path.exists():
            return None
        from llama_cpp import Llama

        # A vocabulary alone has no training context, and llama.cpp says so on stderr, through llama-cpp-python's
        # log callback (Python's sys.stderr), whatever ``verbose`` says: inside the CLI's output.
        with contextlib.redirect_stderr(io.StringIO()):
            return Vocabulary(Llama(model_path=str(path), vocab_only=True, verbose=False))
    except Exception:  # no runtime, no weights: counts fall back to the estimate
        return None


def vocabulary(resources: Resources | None = None) -> Vocabulary | None:
    """The embedded model's :class:`Vocabulary` (its weights in ``resources``' model folder; default resources:
    :func:`~sqlweave.resources.shared_resources`), read once; ``None`` without the weights or llama.cpp."""
    from .weights import MODELS, assembled_path

    res = resources if resources is not None else shared_resources()
    path = assembled_path(MODELS["1.5b"], res.settings.model_dir)
    return res.get(VOCABULARY, str(path), lambda: _read(path))


def count_tokens(text: str, *, resources: Resources | None = None) -> tuple[int, bool]:
    """``(tokens, exact)`` for ``text``: exact with the embedded model's tokenizer when available (the one
    ``resources`` hold, see :func:`vocabulary`)."""
    vocab = vocabulary(resources)
    if vocab is None:
        return estimate_tokens(text), False
    return vocab.count(text), True
