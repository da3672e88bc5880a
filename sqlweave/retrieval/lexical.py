"""BM25 over short texts (bm25s, English stemming when PyStemmer is installed).

>>> idx = BM25Index(["how many singers are there", "list all stadium names", "count the concerts"])
>>> [i for i, _ in idx.search("number of singers", k=1)]
[0]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def _stemmer():
    try:
        import Stemmer  # PyStemmer

        return Stemmer.Stemmer("english")
    except ImportError:
        return None


class BM25Index:
    """A BM25 index over ``texts``; :meth:`search` returns ``(position, score)`` pairs, best first."""

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s

        self._bm25s = bm25s
        self.size = len(texts)
        self.stemmer = _stemmer()
        self.retriever = bm25s.BM25()
        tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.retriever.index(tokens, show_progress=False)

    def search(self, query: str, k: int = 5) -> list[tuple[int, float]]:
        if self.size == 0 or not query.strip():
            return []
        q = self._bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False)
        if not q.vocab:
            return []
        docs, scores = self.retriever.retrieve(q, k=min(k, self.size), show_progress=False)
        # Zero-score documents are kept at the end so a caller asking for k always gets k.
        return [(int(d), float(s)) for d, s in zip(np.asarray(docs)[0], np.asarray(scores)[0])]
