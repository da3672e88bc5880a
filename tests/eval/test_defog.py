"""The defog benchmark's scoring rule, one rule at a time on hand-made results, then end to end on a live server.

Each test names the function of defog sql-eval's ``eval/eval.py`` whose behaviour it reproduces. sqlweave's
reimplementation (``sqlweave.eval.defog``) was also checked against sql-eval's own functions (run with pandas 2.3)
on 23,000 random result pairs and on every gold query of both question files, with no disagreement.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from sqlweave.errors import ConfigurationError, ExecutionError
from sqlweave.eval.defog import (
    CATEGORIES,
    frame_subset,
    frames_match,
    load_questions,
    minimal_queries,
    questions_path,
    score_prediction,
)
from sqlweave.eval.defog_frames import ResultComparisonError, ResultFrame, normalize_frame
from tests.eval.conftest import DEFOG


def F(columns: tuple[str, ...] | list[str], rows: list[tuple], **kw) -> ResultFrame:  # noqa: N802
    return ResultFrame.from_rows(columns, rows, **kw)


NO_ORDER = ("group_by", "How many restaurants serve each food type?")
ORDER_CATEGORY = ("order_by", "Which restaurants are the best rated?")
ORDER_WORDS = ("group_by", "List the cities and sort them by rating")


# --- get_all_minimal_queries: the gold alternatives ---------------------------------------------------


def test_semicolons_separate_alternative_queries() -> None:
    # get_all_minimal_queries: split on ";", blank parts dropped
    assert minimal_queries("SELECT a FROM t;SELECT b FROM u; ;") == ["SELECT a FROM t", "SELECT b FROM u"]


def test_braces_expand_to_every_column_combination() -> None:
    # get_all_minimal_queries: every non-empty combination of the {..} items, in order, joined by ", "
    assert minimal_queries("SELECT {a,b,c} FROM t") == [
        "SELECT a FROM t", "SELECT b FROM t", "SELECT c FROM t",
        "SELECT a, b FROM t", "SELECT a, c FROM t", "SELECT b, c FROM t", "SELECT a, b, c FROM t",
    ]


def test_group_by_braces_follow_the_chosen_columns() -> None:
    # get_all_minimal_queries: "GROUP BY {}" after the braces gets the same columns
    assert minimal_queries("SELECT {a,b}, COUNT(*) FROM t GROUP BY {}") == [
        "SELECT a, COUNT(*) FROM t GROUP BY a", "SELECT b, COUNT(*) FROM t GROUP BY b",
        "SELECT a, b, COUNT(*) FROM t GROUP BY a, b",
    ]


def test_only_the_first_braces_of_a_query_expand() -> None:
    # get_all_minimal_queries: find_bracket_indices looks for the first {..} only
    assert minimal_queries("SELECT {a,b} FROM t WHERE x = '{y}'") == [
        "SELECT a FROM t WHERE x = '{y}'", "SELECT b FROM t WHERE x = '{y}'", "SELECT a, b FROM t WHERE x = '{y}'"]


# --- compare_df: the same table ----------------------------------------------------------------------


def test_identical_results_match() -> None:
    # compare_df: equal values, position by position
    assert frames_match(F(["n"], [(1,), (2,)]), F(["n"], [(1,), (2,)]), *NO_ORDER)


def test_column_names_do_not_matter_when_values_line_up() -> None:
    # compare_df: the first check compares .values only (names ignored)
    assert frames_match(F(["total"], [(3,)]), F(["count"], [(3,)]), *NO_ORDER)


def test_row_order_ignored_when_no_order_is_asked() -> None:
    # normalize_table: rows sorted by every column when neither the category nor the question asks for order
    gold, pred = F(["city", "n"], [("LA", 2), ("NY", 1)]), F(["city", "n"], [("NY", 1), ("LA", 2)])
    assert frames_match(gold, pred, *NO_ORDER)


def test_order_is_read_from_each_querys_order_by() -> None:
    # normalize_table: with an order asked, rows are sorted by the ORDER BY columns of each side's own SQL,
    # in the direction its first ORDER BY says (descending unless ASC)
    gold = F(["name", "rating"], [("b", 5.0), ("a", 4.0)])
    same_rows_other_order = F(["name", "rating"], [("a", 4.0), ("b", 5.0)])
    desc = "SELECT name, rating FROM r ORDER BY rating DESC"
    assert frames_match(gold, same_rows_other_order, *ORDER_CATEGORY, desc, desc)
    assert not frames_match(gold, same_rows_other_order, *ORDER_CATEGORY, desc, "SELECT name, rating FROM r ORDER BY rating ASC")
    assert not frames_match(gold, same_rows_other_order, *ORDER_CATEGORY, desc, "SELECT name, rating FROM r")


def test_order_words_in_the_question_count_as_asking_for_order() -> None:
    # normalize_table: \b(order|sort|arrange)\b in the question; then, without SQL, rows keep their order
    gold, pred = F(["n"], [(1,), (2,)]), F(["n"], [(2,), (1,)])
    assert frames_match(gold, pred, *NO_ORDER)
    assert not frames_match(gold, pred, *ORDER_WORDS)
    assert frames_match(gold, pred, "group_by", "List the cities, sorted by rating")  # whole words only


def test_duplicate_rows_are_dropped() -> None:
    # normalize_table: drop_duplicates() on both sides
    assert frames_match(F(["n"], [(1,), (1,), (2,)]), F(["n"], [(2,), (1,)]), *NO_ORDER)


def test_columns_are_compared_in_name_order() -> None:
    # normalize_table: columns sorted by name, so the same columns in another order match...
    gold = F(["a", "b"], [(1, "x"), (2, "y")])
    assert frames_match(gold, F(["b", "a"], [("y", 2), ("x", 1)]), *NO_ORDER)
    # ...but columns under other names line up by those names, not by their values (subset_df finds them)
    swapped = F(["b", "a"], [(2, "y"), (1, "x")])
    assert not frames_match(gold, swapped, *NO_ORDER)
    assert frame_subset(gold, swapped, *NO_ORDER)


def test_nulls_equal_nulls() -> None:
    # compare_df: fillna(-99999) on both sides before comparing
    assert frames_match(F(["x"], [(1.5,), (None,)]), F(["x"], [(None,), (1.5,)]), *NO_ORDER)


def test_floats_compare_exactly_in_the_same_table_check() -> None:
    # compare_df: plain == on the values, no tolerance (subset_df has one)
    gold, pred = F(["r"], [(0.3,)]), F(["r"], [(0.1 + 0.2,)])
    assert not frames_match(gold, pred, *NO_ORDER)
    assert frame_subset(gold, pred, *NO_ORDER)


def test_empty_gold_matches_a_single_row_as_numpy_broadcasts() -> None:
    # compare_df: (df_gold.values == df_gen.values).all() broadcasts a 0-row table against a 1-row one
    assert frames_match(F(["a", "b"], []), F(["x", "y"], [(1, 2)]), *NO_ORDER)
    assert frames_match(F(["a"], []), F(["b"], []), *NO_ORDER)
    assert not frames_match(F(["a", "b"], []), F(["x", "y", "z"], []), *NO_ORDER)
    assert not frames_match(F(["a", "b"], []), F(["x", "y"], [(1, 2), (3, 4)]), *NO_ORDER)


def test_repeated_column_names_cannot_be_normalised() -> None:
    # normalize_table: reindex/sort_values raise on repeated labels; sql-eval then scores the question wrong
    with pytest.raises(ResultComparisonError):
        normalize_frame(F(["name", "name"], [("a", "b"), ("c", "d")]), *NO_ORDER)


def test_a_column_mixing_text_and_numbers_cannot_be_sorted() -> None:
    # normalize_table: sort_values on one object column raises TypeError on 1 < 'a' (SQLite can return such columns)
    with pytest.raises(ResultComparisonError):
        normalize_frame(F(["v"], [(1,), ("a",)]), *NO_ORDER)
    # with several sort keys pandas orders numbers before text instead (lexsort over ordered categories)
    assert normalize_frame(F(["v", "w"], [("a", 1), (2, 1)]), *NO_ORDER).rows == [(2, 1), ("a", 1)]


# --- subset_df: the gold table inside the prediction ----------------------------------------------------


def test_extra_columns_in_the_prediction_are_allowed() -> None:
    # subset_df: each gold column finds a prediction column with the same sorted values
    gold = F(["food_type", "n"], [("Italian", 3), ("Mexican", 1)])
    pred = F(["food_type", "id_count", "n"], [("Mexican", 7, 1), ("Italian", 9, 3)])
    assert not frames_match(gold, pred, *NO_ORDER)
    assert frame_subset(gold, pred, *NO_ORDER)


def test_matching_columns_must_also_line_up_row_by_row() -> None:
    # subset_df: after the column matching, gold and the matched columns are compared as normalised tables
    gold = F(["a", "b"], [(1, "x"), (2, "y")])
    assert not frame_subset(gold, F(["a", "b", "c"], [(1, "y", 0), (2, "x", 0)]), *NO_ORDER)


def test_each_prediction_column_is_used_once() -> None:
    # subset_df: a matched prediction column is dropped before the next gold column looks
    gold = F(["a", "b"], [(1, 1), (2, 2)])
    assert not frame_subset(gold, F(["x"], [(1,), (2,)]), *NO_ORDER)
    assert frame_subset(gold, F(["x", "y"], [(1, 1), (2, 2)]), *NO_ORDER)


def test_extra_rows_are_not_allowed() -> None:
    # subset_df: columns are compared whole (assert_series_equal), so lengths must agree
    assert not frame_subset(F(["a"], [(1,)]), F(["a", "b"], [(1, 0), (2, 0)]), *NO_ORDER)


def test_an_empty_gold_result_is_never_a_subset() -> None:
    # subset_df: "if df_sub.empty: return False"
    assert not frame_subset(F(["a"], []), F(["a"], []), *NO_ORDER)


def test_float_tolerance_but_exact_integers() -> None:
    # subset_df: assert_series_equal(check_dtype=False): floats within rtol 1e-5, exact when either side is int
    assert frame_subset(F(["r"], [(1.0,)]), F(["r", "x"], [(1.000001, 0)]), *NO_ORDER)
    assert not frame_subset(F(["r"], [(1.0,)]), F(["r", "x"], [(1.001, 0)]), *NO_ORDER)
    assert not frame_subset(F(["n"], [(100000,)]), F(["n", "x"], [(100000.5, 0)]), *NO_ORDER)
    assert frame_subset(F(["n"], [(2,)]), F(["n", "x"], [(2.0, 0)]), *NO_ORDER)


def test_row_order_kept_in_the_subset_check_when_order_is_asked() -> None:
    # subset_df calls normalize_table without SQL: with an order asked, rows are not sorted at all
    gold, pred = F(["n"], [(1,), (2,)]), F(["n", "x"], [(2, 0), (1, 0)])
    assert frame_subset(gold, pred, *NO_ORDER)
    assert not frame_subset(gold, pred, *ORDER_CATEGORY)


def test_a_repeated_name_in_the_prediction_that_matches_fails() -> None:
    # subset_df: matched names come from the deduplicated copy (name_0) and are looked up in the original
    with pytest.raises(ResultComparisonError):
        frame_subset(F(["name"], [("a",)]), F(["name", "name"], [("a", "b")]), *NO_ORDER)


# --- the data frames: types, rounding, dates ------------------------------------------------------------


def test_decimals_become_floats() -> None:
    # query_postgres_db: pd.read_sql_query(coerce_float=True) turns Decimal into float
    assert frames_match(F(["avg"], [(Decimal("1.50"),)]), F(["avg"], [(1.5,)]), *NO_ORDER)


def test_floats_are_rounded_only_when_asked() -> None:
    # query_*_db: results_df.round(decimal_points) when --decimal_points is given (off by default)
    gold, pred = [(1 / 3,)], [(0.33,)]
    assert not frames_match(F(["r"], gold), F(["r"], pred), *NO_ORDER)
    assert frames_match(F(["r"], gold, decimal_points=2), F(["r"], pred, decimal_points=2), *NO_ORDER)


def test_timestamps_match_timestamps_not_dates_or_text() -> None:
    # pandas holds datetime columns as timestamps (NULL as NaT) and dates as objects; neither equals text
    when = dt.datetime(2023, 5, 1, 10, 30)
    assert frames_match(F(["t"], [(when,), (None,)]), F(["t"], [(None,), (when,)]), *NO_ORDER)
    assert not frames_match(F(["t"], [(when,)]), F(["t"], [("2023-05-01 10:30:00",)]), *NO_ORDER)
    assert not frame_subset(F(["d"], [(dt.date(2023, 5, 1),)]), F(["d"], [(dt.datetime(2023, 5, 1),)]), *NO_ORDER)
    assert frames_match(F(["d"], [(dt.date(2023, 5, 1),)]), F(["day"], [(dt.date(2023, 5, 1),)]), *NO_ORDER)


# --- compare_query_results: one prediction against every alternative --------------------------------------


def _runner(results: dict[str, tuple[list[str], list[tuple]]]):
    def run(sql: str):
        if sql not in results:
            raise ExecutionError(f"no such query in the test: {sql}")
        return results[sql]

    return run


def test_any_alternative_may_match() -> None:
    # compare_query_results: every query of get_all_minimal_queries is tried until one matches
    run = _runner({"SELECT name FROM r": (["name"], [("a",)]), "SELECT id FROM r": (["id"], [(7,)]),
                   "SELECT name, id FROM r": (["name", "id"], [("a", 7)]), "PRED": (["id"], [(7,)])})
    score = score_prediction(run, "SELECT {name,id} FROM r", "PRED", query_category="group_by", question="Which?")
    assert (score.correct, score.exact, score.error) == (True, True, None)


def test_subset_match_is_correct_but_not_exact() -> None:
    # compare_query_results returns (exact_match, correct): a subset match sets only the second
    run = _runner({"G": (["name"], [("a",)]), "PRED": (["name", "extra"], [("a", 1)])})
    score = score_prediction(run, "G", "PRED", query_category="group_by", question="Which?")
    assert (score.correct, score.exact) == (True, False)


def test_a_failing_prediction_is_wrong() -> None:
    # compare_query_results: the prediction's error propagates; the runner scores it 0
    score = score_prediction(_runner({"G": (["n"], [(1,)])}), "G", "BROKEN", query_category="ratio", question="?")
    assert not score.correct and score.error and not score.gold_error


def test_a_failing_gold_alternative_makes_the_question_wrong_even_after_a_subset_match() -> None:
    # compare_query_results: an exception on a later gold query propagates past an earlier subset match
    run = _runner({"G1": (["n"], [(1,)]), "PRED": (["n", "x"], [(1, 2)])})
    score = score_prediction(run, "G1;G2", "PRED", query_category="ratio", question="?")
    assert not score.correct and score.gold_error and "gold failed" in (score.error or "")


def test_an_uncomparable_result_makes_the_question_wrong() -> None:
    # compare_query_results: errors raised by compare_df/subset_df propagate; the runner scores the question 0
    run = _runner({"G": (["v"], [("a",), (2,)]), "PRED": (["v"], [(2,), ("a",), ("b",)])})
    score = score_prediction(run, "G", "PRED", query_category="group_by", question="Which?")
    assert not score.correct and "result_comparison" in (score.error or "")


# --- the question files -------------------------------------------------------------------------------


needs_defog = pytest.mark.skipif(not (DEFOG / "questions_gen_postgres.csv").exists(), reason="needs ../shared/data/defog")


@needs_defog
def test_questions_load_with_their_categories_and_instructions() -> None:
    pg = load_questions(questions_path(DEFOG, "postgres"))
    lite = load_questions(questions_path(DEFOG, "sqlite"))
    assert len(pg) == len(lite) == 210
    assert {q.query_category for q in pg} == set(CATEGORIES)
    assert len({q.db_name for q in pg}) == 11
    assert {q.db_type for q in pg} == {"postgres"} and {q.db_type for q in lite} == {"sqlite"}
    instruct = [q for q in pg if q.query_category == "instruct"]
    assert len(instruct) == 35 and all(q.evidence for q in instruct)
    assert all(a.id == b.id and a.db_name == b.db_name for a, b in zip(pg, lite))
    assert sum(len(minimal_queries(q.query)) for q in pg) > len(pg)  # braces and ';' alternatives


def test_a_file_that_is_not_a_question_file_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigurationError):
        load_questions(tmp_path / "missing.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("question,sql\nWhy?,SELECT 1\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="query"):
        load_questions(bad)
    with pytest.raises(ConfigurationError):
        questions_path(tmp_path, "oracle")


# --- end to end on the live server -------------------------------------------------------------------------


@needs_defog
def test_gold_answers_score_three_of_three_on_live_postgres(defog_restaurants: str) -> None:
    """defog's smallest database loaded from its dump; the pipeline, answered by a model that writes the gold
    SQL, runs three questions (one with {..} alternatives, one with instructions) and scores 3/3."""
    from sqlweave.database import Database
    from sqlweave.eval.defog import GoldResults, score_on_database
    from sqlweave.llm.fake import FakeLLM
    from sqlweave.presets import build_pipeline

    questions = {q.id: q for q in load_questions(questions_path(DEFOG, "postgres"))}
    chosen = [questions["110"], questions["119"], questions["130"]]  # group_by; order_by with {name, id}; instruct
    assert [q.db_name for q in chosen] == ["restaurants"] * 3 and chosen[2].evidence
    pipeline = build_pipeline("zero-shot")
    gold = GoldResults()
    with Database.open(defog_restaurants, descriptions=DEFOG / "databases" / "restaurants" / "restaurants.json") as db:
        schema = db.schema()
        assert schema.table("restaurant").column("rating").description  # descriptions from the JSON file
        scores = []
        for q in chosen:
            sql = minimal_queries(q.query)[0]
            llm = FakeLLM(responder=lambda *_, sql=sql: f"```sql\n{sql}\n```")
            answer = pipeline.run(q.question, db, llm, schema=schema, evidence=q.evidence)
            assert answer.error is None, answer.error
            scores.append(score_on_database(db, q, answer.sql, gold=gold))
        assert [s.correct for s in scores] == [True, True, True]
        # and the rule at work on the live results: an extra column is fine, another filter is not
        extra = score_on_database(db, chosen[0], "SELECT food_type, COUNT(DISTINCT id) AS n, MAX(rating) AS best "
                                                 "FROM restaurant GROUP BY food_type", gold=gold)
        other = score_on_database(db, chosen[0], "SELECT food_type, COUNT(*) FROM restaurant WHERE rating > 4 "
                                                 "GROUP BY food_type", gold=gold)
        assert (extra.correct, extra.exact) == (True, False) and not other.correct
