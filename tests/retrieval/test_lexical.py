"""BM25 over short texts: English words, and SQL skeletons with their placeholders and symbols."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from sqlweave.retrieval.lexical import BM25Index, shape_tokens


def test_a_skeleton_keeps_its_placeholders_symbols_and_order() -> None:
    three, one = shape_tokens("SELECT _, _, _ FROM _"), shape_tokens("SELECT _ FROM _")
    assert three != one and three.count(",") == 2 and "_ ," in three
    assert three[-1] == "select _ , _ , _ from _"  # the whole skeleton, one token
    assert shape_tokens("") == []


def test_the_same_skeleton_ranks_above_a_longer_one_holding_more_of_its_pairs() -> None:
    texts = ["SELECT _, _, _, _ FROM _", "SELECT _ FROM _", "SELECT _, _, _ FROM _", "SELECT COUNT(*) FROM _"]
    shapes = BM25Index(texts, tokenizer=shape_tokens)
    assert [i for i, _ in shapes.search("SELECT _, _, _ FROM _", k=2)] == [2, 0]
    assert shapes.search("SELECT COUNT(*) FROM _", k=1)[0][0] == 3
    # by English words alone, the four are one text ("select", "from") but for their length
    words = BM25Index(texts)
    assert len({round(s, 6) for _, s in words.search("SELECT _, _, _ FROM _", k=4)}) <= 2


def test_ties_follow_a_shuffle_seeded_by_the_query_not_numpy_s_partition(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["SELECT _ FROM _"] * 30 + ["SELECT _ FROM _ WHERE _ = _"]
    shapes = BM25Index(texts, tokenizer=shape_tokens)
    query = "SELECT _ FROM _"

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the order of equal scores must not come from argpartition")

    monkeypatch.setattr(np, "argpartition", refuse)
    got = shapes.search(query, k=31)
    shuffle = np.random.default_rng(zlib.crc32(query.encode())).permutation(len(texts))
    assert [i for i, _ in got[:30]] == sorted(range(30), key=lambda i: shuffle[i])  # the tied, in the seeded order
    assert got[-1][0] == 30  # the longer skeleton after every exact one
    assert [i for i, _ in got[:5]] != [0, 1, 2, 3, 4]  # spread over the tied texts, not the first ones
    assert shapes.search(query, k=31) == got
    assert shapes.search("   ", k=3) == []
    assert len(shapes.search("DELETE", k=3)) == 3  # no word known: zero scores, still k texts
