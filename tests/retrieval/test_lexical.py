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


@pytest.mark.parametrize("by", ["shape", "words"])
def test_ties_follow_a_shuffle_seeded_by_the_query_not_numpy_s_partition(monkeypatch: pytest.MonkeyPatch,
                                                                         by: str) -> None:
    texts = ["SELECT _ FROM _"] * 30 + ["SELECT _ FROM _ WHERE _ = _ ORDER BY _"]
    index = BM25Index(texts, tokenizer=shape_tokens) if by == "shape" else BM25Index(texts)
    query = "SELECT _ FROM _"

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the order of equal scores must not come from argpartition")

    monkeypatch.setattr(np, "argpartition", refuse)
    got = index.search(query, k=31)
    shuffle = np.random.default_rng(zlib.crc32(query.encode())).permutation(len(texts))
    assert [i for i, _ in got[:30]] == sorted(range(30), key=lambda i: shuffle[i])  # the tied, in the seeded order
    assert got[-1][0] == 30  # the longer skeleton after every exact one
    assert [i for i, _ in got[:5]] != [0, 1, 2, 3, 4]  # spread over the tied texts, not the first ones
    assert index.search(query, k=31) == got
    assert index.search("   ", k=3) == []
    assert len(index.search("DELETE", k=3)) == 3  # no word known: zero scores, still k texts


def test_a_query_of_stop_words_alone_finds_nothing_by_words() -> None:
    assert BM25Index(["how many singers", "list the stadiums"]).search("the of and", k=2) == []


@pytest.mark.parametrize("texts, tokenizer", [(["a b", "the of"], None), (["IT"], None), (["", ""], shape_tokens)])
def test_texts_without_a_single_word_index_and_score_zero(texts: list[str], tokenizer) -> None:
    # Stop words and single letters alone give bm25s no vocabulary, which it cannot index: every text scores 0.
    index = BM25Index(texts, tokenizer=tokenizer)
    got = index.search("SELECT singer name", k=5)
    assert sorted(i for i, _ in got) == list(range(len(texts))) and {s for _, s in got} == {0.0}
    assert index.search("SELECT singer name", k=5) == got  # the same order again
    assert index.search("   ", k=5) == []
