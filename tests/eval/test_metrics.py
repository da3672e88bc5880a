"""Every comparison rule of the official evaluators, with hand-written prediction/gold pairs."""

import pytest

from sqlweave.eval.metrics import bird_result_eq, order_matters, remove_distinct, spider_result_eq


@pytest.mark.parametrize(
    "title,gold,pred,ordered,expected",
    [
        ("identical", [(1, "a"), (2, "b")], [(1, "a"), (2, "b")], False, True),
        ("rows reordered, no ORDER BY", [(1,), (2,)], [(2,), (1,)], False, True),
        ("rows reordered, ORDER BY in gold", [(1,), (2,)], [(2,), (1,)], True, False),
        ("columns permuted", [(1, "a", 2.5)], [("a", 2.5, 1)], False, True),
        ("columns permuted, ordered", [(1, "a"), (2, "b")], [("a", 1), ("b", 2)], True, True),
        ("int equals float (Python equality)", [(1,)], [(1.0,)], False, True),
        ("no float tolerance", [(0.3,)], [(0.1 + 0.2,)], False, False),
        ("multiset: duplicates matter", [(1,), (1,), (2,)], [(1,), (2,), (2,)], False, False),
        ("different row count", [(1,)], [(1,), (1,)], False, False),
        ("different column count", [(1, 2)], [(1,)], False, False),
        ("both empty", [], [], False, True),
        ("one empty", [], [(1,)], False, False),
        ("extra column", [(1,)], [(1, 2)], False, False),
        ("NULLs compare equal", [(None, 1)], [(1, None)], False, True),
        ("strings are case sensitive", [("A",)], [("a",)], False, False),
        ("wide rows (sampled permutations)", [(1, 2, 3, 4, "x")], [("x", 4, 3, 2, 1)], False, True),
        ("wide rows, real mismatch", [(1, 2, 3, 4, "x")], [("y", 4, 3, 2, 1)], False, False),
    ],
)
def test_spider_rules(title, gold, pred, ordered, expected) -> None:
    assert spider_result_eq(gold, pred, ordered) is expected


def test_order_rule_reads_the_gold_text() -> None:
    assert order_matters("SELECT a FROM t ORDER BY a")
    assert order_matters("SELECT a FROM t WHERE b IN (SELECT b FROM u order by c LIMIT 1)")
    # The official test is `"order by" in g_str.lower()` on the text as written: two spaces do not count.
    assert not order_matters("SELECT a FROM t WHERE b IN (SELECT b FROM u order  by c LIMIT 1)")
    assert not order_matters("SELECT a FROM t")


def test_distinct_switch() -> None:
    assert remove_distinct("SELECT DISTINCT a FROM t") == "SELECT a FROM t"
    assert remove_distinct("SELECT count(DISTINCT a) FROM t") == "SELECT COUNT(a) FROM t"
    assert remove_distinct("SELECT a FROM t") == "SELECT a FROM t"  # untouched when there is no DISTINCT


@pytest.mark.parametrize(
    "gold,pred,expected",
    [
        ([(1, "a"), (1, "a")], [(1, "a")], True),   # duplicates ignored
        ([(1,), (2,)], [(2,), (1,)], True),          # order ignored
        ([(1, "a")], [("a", 1)], False),             # column order matters
        ([], [], True),
    ],
)
def test_bird_rule(gold, pred, expected) -> None:
    assert bird_result_eq(gold, pred) is expected
