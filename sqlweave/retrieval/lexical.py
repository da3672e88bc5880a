"""BM25 over short texts (bm25s, English stemming when PyStemmer is installed).

>>> idx = BM25Index(["how many singers are there", "list all stadium names", "count the concerts"])
>>> [i for i, _ in idx.search("number of singers", k=1)]
[0]

With ``tokenizer``, texts and queries are split by it (no stop words, no stemming): :func:`shape_tokens` keeps the
placeholders, commas and brackets of an SQL skeleton, which English tokenization drops, so ``SELECT _, _, _ FROM _``
is no longer the same text as ``SELECT _ FROM _``.

Equal scores are common over short texts (by English words, ``SELECT _, _ FROM _`` is ``select`` and ``from``
alone, and 179 of Spider's 7,000 training pairs tie at the top score for it). bm25s's own top-k leaves their order
to ``numpy.argpartition``, whose order among equals varies with numpy's version and the CPU, so the same question
showed other few-shot pairs on another machine. :meth:`BM25Index.search` ranks every score itself and breaks ties
by a shuffle seeded with the query: the same on every machine, and spread over the tied texts rather than the first
ones of the pool.

>>> shapes = BM25Index(["SELECT _ FROM _", "SELECT _, _, _ FROM _", "SELECT COUNT(*) FROM _"], tokenizer=shape_tokens)
>>> [i for i, _ in shapes.search("SELECT _, _, _ FROM _ WHERE _ = _", k=1)]
[1]
"""

from __future__ import annotations

import re
import zlib
from typing import Any, Callable, Sequence

import numpy as np

_SHAPE = re.compile(r"[a-z]+|[^\sa-z]")


def shape_tokens(skeleton: str) -> list[str]:
    """An SQL skeleton's words and symbols, lower-cased, then each pair of neighbours (the skeleton's order), then
    the whole skeleton as one token, so that a skeleton the same as the query's ranks above a longer one that holds
    more of its pairs.

    >>> shape_tokens("SELECT _, _ FROM _")
    ['select', '_', ',', '_', 'from', '_', 'select _', '_ ,', ', _', '_ from', 'from _', 'select _ , _ from _']
    """
    words = _SHAPE.findall(skeleton.lower())
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])] + ([" ".join(words)] if words else [])


def _stemmer():
    try:
        import Stemmer  # PyStemmer

        return Stemmer.Stemmer("english")
    except ImportError:
        return None


class BM25Index:
    """A BM25 index over ``texts``; :meth:`search` returns ``(position, score)`` pairs, best first. Texts without a
    single word (stop words and single letters alone, such as a glossary term named ``IT``) index too: they score 0.

    >>> BM25Index(["IT", "a b"]).search("Who works in IT?", k=2)
    [(0, 0.0), (1, 0.0)]
    """

    def __init__(self, texts: Sequence[str], tokenizer: Callable[[str], list[str]] | None = None) -> None:
        import bm25s

        self._bm25s = bm25s
        self.size = len(texts)
        self.tokenizer = tokenizer
        self.stemmer = _stemmer() if tokenizer is None else None
        tokens: Any
        if tokenizer is not None:
            tokens = [tokenizer(t) for t in texts]
            vocabulary = any(tokens)
        else:
            tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=self.stemmer, show_progress=False)
            vocabulary = bool(tokens.vocab)
        self.retriever: bm25s.BM25 | None = None
        if vocabulary:  # bm25s indexes no texts without a word (stop words, single letters): then each scores 0
            self.retriever = bm25s.BM25()
            self.retriever.index(tokens, show_progress=False)

    def search(self, query: str, k: int = 5) -> list[tuple[int, float]]:
        """The ``k`` best texts for ``query`` as ``(position, score)``, best first, equal scores in an order seeded
        by the query (the same on every machine). Zero-score texts come last, so a caller asking for k gets k (none
        for a query of stop words alone, on the English path)."""
        if self.size == 0 or not query.strip():
            return []
        if self.tokenizer is not None:
            tokens = self.tokenizer(query)
        else:
            tokens = self._bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, return_ids=False,
                                          show_progress=False)[0]
            if not tokens:
                return []
        if self.retriever is None:
            scores = np.zeros(self.size)
        else:  # bm25s scores no empty token list: a token no text holds scores every text 0 instead
            scores = np.asarray(self.retriever.get_scores(list(tokens) or ["\x00"]))
        shuffle = np.random.default_rng(zlib.crc32(query.encode("utf-8"))).permutation(self.size)
        top = np.lexsort((shuffle, -scores))[: min(k, self.size)]  # by score, then by the seeded shuffle
        return [(int(i), float(scores[i])) for i in top]
