"""Self-correction stages with the fake model: every feedback path and stop rule."""

from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.errors import ConfigurationError
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.presets import build_pipeline, zero_shot
from sqlweave.stages.correct import ErrorCorrection
from sqlweave.stages.revise import RevisionChain
from sqlweave.stages.vote import SelfConsistency


def run(pipe: Pipeline, db_path: Path, answers, question="How many singers are there?"):
    llm = FakeLLM(answers)
    answer = pipe.run(question, Database.open(db_path), llm)
    return answer, llm


def last_user(llm: FakeLLM, call: int = -1) -> str:
    return llm.calls[call][0][-1].content


def correct_pipe(**kw) -> Pipeline:
    return Pipeline("c", zero_shot().stages + (ErrorCorrection(**kw),))


def test_correction_skipped_when_the_answer_works(singer_db: Path) -> None:
    answer, llm = run(correct_pipe(), singer_db, ["SELECT count(*) FROM singer"])
    assert answer.ok and len(llm.calls) == 1
    assert answer.trace[-1].notes == {"skipped": True, "outcome": "ok"}


def test_forged_column_gets_schema_feedback_with_suggestions(singer_db: Path) -> None:
    answer, llm = run(correct_pipe(), singer_db, ["SELECT nme FROM singer", "SELECT name FROM singer"], "Singer names?")
    assert answer.ok and answer.sql == "SELECT name FROM singer" and answer.result.row_count == 6
    fb = last_user(llm)
    assert "no such column: nme" in fb and "did you mean singer.Name" in fb and "table singer has columns" in fb
    # The correction continues the generation conversation: same prefix, then the failed SQL.
    assert llm.calls[1][0][:2] == llm.calls[0][0]
    assert llm.calls[1][0][2].role == "assistant" and "nme" in llm.calls[1][0][2].content
    notes = answer.trace[-1].notes
    assert notes["changed"] and notes["rounds"][0]["was"] == "schema_linking" and notes["rounds"][0]["now"] == "ok"


def test_a_repeated_answer_makes_the_next_round_sample(singer_db: Path) -> None:
    answer, llm = run(correct_pipe(), singer_db, ["SELECT nme FROM singer", "SELECT nme FROM singer",
                                                  "SELECT Name FROM singer"], "Singer names?")
    assert answer.ok and answer.sql == "SELECT Name FROM singer"
    temps = [opts.temperature for _, opts in llm.calls]
    assert temps == [0.0, 0.0, 0.7] and llm.calls[2][1].seed is not None
    rounds = answer.trace[-1].notes["rounds"]
    assert [r["repeated"] for r in rounds] == [True, False]


def test_forged_table(singer_db: Path) -> None:
    answer, llm = run(correct_pipe(), singer_db, ["SELECT count(*) FROM singers", "SELECT count(*) FROM singer"])
    assert answer.result.rows == ((6,),)
    assert "unknown table singers; did you mean singer" in last_user(llm)


def test_syntax_error_feedback(singer_db: Path) -> None:
    answer, llm = run(correct_pipe(), singer_db, ["SELECT name singer FROM FROM singer", "SELECT count(*) FROM singer"])
    assert answer.ok
    assert 'near "FROM": syntax error' in last_user(llm)
    assert answer.trace[-1].notes["rounds"][0]["was"] == "syntax"


def test_other_execution_error_feedback(singer_db: Path) -> None:
    answer, llm = run(correct_pipe(), singer_db, ["SELECT nosuchfunction(age) FROM singer", "SELECT max(age) FROM singer"],
                      "Oldest age?")
    assert answer.result.rows == ((52,),)
    assert "no such function" in last_user(llm)


def test_empty_result_gets_value_feedback(singer_db: Path) -> None:
    answer, llm = run(correct_pipe(), singer_db,
                      ["SELECT name FROM singer WHERE country = 'france'", "SELECT name FROM singer WHERE country = 'France'"],
                      "Singers from France?")
    assert answer.result.row_count == 4
    fb = last_user(llm)
    assert "returned no rows" in fb and "singer.Country holds values such as: 'France'" in fb


def test_gives_up_after_max_rounds_and_keeps_the_best(singer_db: Path) -> None:
    answer, llm = run(correct_pipe(max_rounds=2), singer_db,
                      ["SELECT nme FROM singer", "SELECT name FROM singer WHERE 1 = 0", "SELECT x FROM y"])
    assert len(llm.calls) == 3
    # The empty-but-valid query beats the two broken ones.
    assert answer.error is None and answer.sql == "SELECT name FROM singer WHERE 1 = 0"
    assert [r["now"] for r in answer.trace[-1].notes["rounds"]] == ["empty", "schema_linking"]


def test_no_sql_output_is_corrected(singer_db: Path) -> None:
    answer, llm = run(correct_pipe(), singer_db, ["I cannot answer that.", "SELECT count(*) FROM singer"])
    assert answer.ok and "no SQL" in last_user(llm)


def test_refused_statements_are_not_corrected(singer_db: Path) -> None:
    answer, llm = run(correct_pipe(), singer_db, ["DROP TABLE singer"], "delete all singers")
    assert answer.error is not None and answer.error.code == "refused_statement" and len(llm.calls) == 1


def test_full_schema_fallback_when_pruned_schema_is_missing_a_table(singer_db: Path) -> None:
    class Prune:
        name = "prune"

        def __call__(self, state):
            state.prompt_schema = state.schema.subset({"singer": None})

    stages = zero_shot().stages
    pipe = Pipeline("p", stages[:1] + (Prune(),) + stages[1:] + (ErrorCorrection(),))
    answer, llm = run(pipe, singer_db, ["SELECT count(*) FROM stadiums", "SELECT count(*) FROM stadium"], "How many stadiums?")
    assert answer.result.rows == ((9,),)
    assert "CREATE TABLE stadium" not in llm.calls[0][0][1].content
    assert "CREATE TABLE stadium" in llm.calls[1][0][1].content  # the retry shows the full schema
    assert answer.trace[-1].notes["rounds"][0]["full_schema"] is True


# --- revision chain ----------------------------------------------------------------------------


def revise_pipe(**kw) -> Pipeline:
    return Pipeline("r", zero_shot().stages + (RevisionChain(**kw),))


def test_revision_stops_on_convergence(singer_db: Path) -> None:
    answers = ["SELECT name FROM singer WHERE age > 40",      # initial
               "It lists singers older than 40. It matches.",  # explanation, round 1
               "SELECT name FROM singer WHERE age > 40"]      # same result -> converged
    answer, llm = run(revise_pipe(), singer_db, answers, "Singers older than 40?")
    notes = answer.trace[-1].notes
    assert notes["stop"] == "converged" and len(notes["rounds"]) == 1 and len(llm.calls) == 3
    revise_prompt = last_user(llm)
    assert "Execution feedback: the query ran and returned" in revise_prompt
    assert "Explanation: It lists singers older than 40" in revise_prompt


def test_revision_stops_after_n_max(singer_db: Path) -> None:
    answers = ["SELECT name FROM singer", "e1", "SELECT name FROM singer WHERE age > 30",
               "e2", "SELECT name FROM singer WHERE age > 40"]
    answer, llm = run(revise_pipe(max_rounds=2), singer_db, answers)
    notes = answer.trace[-1].notes
    assert notes["stop"] == "max_rounds" and len(notes["rounds"]) == 2
    assert answer.sql == "SELECT name FROM singer WHERE age > 40"


def test_revision_feeds_execution_errors_and_db_contents(singer_db: Path) -> None:
    answers = ["SELECT name FROM singer WHERE country = 'Frace'", "It filters by a country.",
               "SELECT name FROM singer WHERE country = 'France'", "It lists French singers.",
               "SELECT name FROM singer WHERE country = 'France'"]
    answer, llm = run(revise_pipe(), singer_db, answers, "French singers?")
    first_revision = llm.calls[2][0][-1].content
    assert "returned no rows" in first_revision and "Related database contents" in first_revision
    assert answer.result.row_count == 4 and answer.trace[-1].notes["stop"] == "converged"


def test_revision_never_swaps_a_working_query_for_a_broken_one(singer_db: Path) -> None:
    answers = ["SELECT count(*) FROM singer", "fine", "SELECT count(*) FROM singerz", "fine", "SELECT count(*) FROM singer"]
    answer, _ = run(revise_pipe(max_rounds=2), singer_db, answers)
    assert answer.ok and answer.sql == "SELECT count(*) FROM singer"


def test_revision_skip_if_ok_and_explain_off(singer_db: Path) -> None:
    answer, llm = run(revise_pipe(skip_if_ok=True), singer_db, ["SELECT count(*) FROM singer"])
    assert len(llm.calls) == 1 and answer.trace[-1].notes["skipped"]
    answer, llm = run(revise_pipe(explain=False, max_rounds=1), singer_db,
                      ["SELECT count(*) FROM singer", "SELECT count(*) FROM singer"])
    assert len(llm.calls) == 2 and "Explanation" not in last_user(llm)


# --- voting --------------------------------------------------------------------------------------


def vote_pipe(n: int = 4, repair: bool = True) -> Pipeline:
    return Pipeline("v", zero_shot().stages + (SelfConsistency(n=n, repair=repair),))


def test_majority_result_wins_and_sets_confidence(singer_db: Path) -> None:
    answers = ["SELECT count(*) FROM singer WHERE age > 40",  # greedy: 3 rows counted... a minority result
               "SELECT count(*) FROM singer", "SELECT COUNT(singer_id) FROM singer", "SELECT count(name) FROM singer",
               "SELECT nme FROM singer"]
    answer, llm = run(vote_pipe(repair=False), singer_db, answers)
    assert answer.result.rows == ((6,),) and answer.sql == "SELECT count(*) FROM singer"
    assert answer.agreement == pytest.approx(3 / 5)
    assert llm.calls[1][1].n == 4 and llm.calls[1][1].temperature == 0.8
    assert answer.trace[-1].notes["votes"] == ["ok", "ok", "ok", "ok", "schema_linking"]
    # With repair (the default) the misspelt candidate runs too, as its own group: the majority stands.
    repaired, _ = run(vote_pipe(), singer_db, answers)
    assert repaired.trace[-1].notes["votes"] == ["ok"] * 5 and repaired.trace[-1].notes["groups"] == [3, 1, 1]
    assert repaired.sql == "SELECT count(*) FROM singer"


def test_vote_tie_keeps_the_greedy_answer(singer_db: Path) -> None:
    answers = ["SELECT count(*) FROM singer", "SELECT count(*) FROM stadium"]
    answer, _ = run(vote_pipe(n=1), singer_db, answers)
    assert answer.sql == "SELECT count(*) FROM singer" and answer.agreement == 0.5


def test_vote_rescues_a_failing_greedy_answer(singer_db: Path) -> None:
    answers = ["SELECT nme FROM singer", "SELECT name FROM singer", "SELECT name FROM singer"]
    answer, _ = run(vote_pipe(n=2, repair=False), singer_db, answers, "Names?")
    assert answer.ok and answer.error is None and answer.sql == "SELECT name FROM singer"
    # Repaired by rule, the greedy answer joins the majority and, being first, is the one kept.
    answer, _ = run(vote_pipe(n=2), singer_db, answers, "Names?")
    assert answer.ok and answer.sql == "SELECT Name FROM singer" and answer.agreement == 1.0


def test_vote_with_nothing_working_keeps_the_error(singer_db: Path) -> None:
    answer, _ = run(vote_pipe(n=2), singer_db, ["SELECT a FROM b", "SELECT c FROM d", "nothing"])
    assert answer.error is not None and answer.agreement == 0.0


def test_presets_build() -> None:
    for name in ("correct", "revise", "vote", "vote-correct"):
        assert build_pipeline(name).stages[-1].recovers


def test_safety_check_skips_confident_answers(singer_db: Path) -> None:
    from sqlweave.stages.dac import DecomposedCorrection

    stages = zero_shot().stages + (SelfConsistency(n=2), DecomposedCorrection(skip_if_confident=0.6),
                                   RevisionChain(skip_if_confident=0.6))
    answers = ["SELECT count(*) FROM singer", "SELECT count(*) FROM singer", "SELECT COUNT(name) FROM singer"]
    answer, llm = run(Pipeline("safe", stages), singer_db, answers)
    assert answer.agreement == 1.0 and len(llm.calls) == 2  # generation + one sampling call; no correction calls
    assert answer.trace[-1].notes["skipped"] and answer.trace[-2].notes["skipped"]


def test_vote_if_unsure_leaves_a_confident_answer_alone(singer_db: Path) -> None:
    pipe = build_pipeline("default").replace_stage(
        "vote_if_unsure", SelfConsistency(n=4, only_below=0.0, rewrite=True, name="vote_if_unsure"))
    answer, llm = run(pipe, singer_db, ["SELECT count(*) FROM singer", "SELECT count(*) FROM stadium"])
    notes = next(e for e in answer.trace if e.stage == "vote_if_unsure").notes
    assert answer.sql == "SELECT count(*) FROM singer" and len(llm.calls) == 1
    assert notes["skipped"] is True and 0.0 < notes["confidence"] < 1.0


def test_vote_if_unsure_samples_below_the_floor_and_rewrites_each_candidate(singer_db: Path) -> None:
    joined = ("SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID "
              "ORDER BY T1.Age DESC LIMIT 1")
    answers = ["SELECT Name FROM singer ORDER BY Age ASC LIMIT 1",  # greedy: the youngest, a minority reading
               joined, joined, "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1", "SELECT nme FROM singer"]
    pipe = build_pipeline("default").replace_stage(
        "vote_if_unsure", SelfConsistency(n=4, only_below=1.0, rewrite=True, name="vote_if_unsure"))
    answer, llm = run(pipe, singer_db, answers)
    notes = next(e for e in answer.trace if e.stage == "vote_if_unsure").notes
    # The two joined samples lose their needless join, so they agree with the third: 3 of 5 say Joe Sharp.
    assert answer.result.rows == (("Joe Sharp",),) and notes["groups"][0] == 3 and notes["changed"] is True
    assert answer.sql == "SELECT T1.Name FROM singer AS T1 ORDER BY T1.Age DESC LIMIT 1"
    assert llm.calls[1][1].n == 4 and 0.0 < notes["confidence"] < 1.0


def test_vote_if_unsure_floor_is_checked_when_built() -> None:
    with pytest.raises(ConfigurationError, match="only_below"):
        SelfConsistency(only_below=1.5)


def test_views_ask_again_with_the_schema_shown_another_way(singer_db: Path) -> None:
    """A view's greedy answer and its samples join the vote, and can outvote the samples of the generation prompt."""
    answers = ["SELECT count(*) FROM stadium",  # greedy answer, repeated by one of the vote's two samples
               "SELECT count(*) FROM stadium", "SELECT count(*) FROM singer",
               "SELECT count(*) FROM singer", "SELECT COUNT(Singer_ID) FROM singer", "SELECT count(name) FROM singer"]
    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=2, views=("compact",), view_samples=2),))
    answer, llm = run(pipe, singer_db, answers)
    assert answer.result.rows == ((6,),) and answer.trace[-1].notes["groups"] == [4, 2]
    generation, view_greedy, view_sample = llm.calls[0], llm.calls[2], llm.calls[3]
    # the view's prompt is the generation prompt with the schema as compact lines instead of CREATE TABLE
    assert "CREATE TABLE" in generation[0][-1].content and "CREATE TABLE" not in view_greedy[0][-1].content
    assert "singer(" in view_greedy[0][-1].content and view_greedy[0][0] == generation[0][0]
    assert view_greedy[0][-1].content.endswith("How many singers are there?")
    assert view_greedy[1].temperature == 0.0 and view_sample[1].temperature == 0.8
    assert [c[1].seed for c in llm.calls[3:]] == [1, 2] and len(llm.calls) == 5


def test_a_failed_view_leaves_the_vote_to_the_samples(singer_db: Path) -> None:
    from sqlweave.errors import LLMTimeoutError

    answers = ["SELECT count(*) FROM singer", "SELECT count(*) FROM stadium", "SELECT count(*) FROM stadium",
               "SELECT count(name) FROM singer", LLMTimeoutError("the model took too long")]
    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=2, views=("compact",), view_samples=2),))
    answer, _ = run(pipe, singer_db, answers)
    notes = answer.trace[-1].notes
    # the view's greedy answer, given before its sample timed out, still votes: 2 against 2, the greedy answer's
    # group first
    assert answer.result.rows == ((6,),) and notes["groups"] == [2, 2] and "took too long" in notes["views_failed"]


@pytest.mark.parametrize("bad", [{"views": ("tables",)}, {"views": "compact"}, {"view_samples": -1}])
def test_views_are_checked_when_built(bad) -> None:
    with pytest.raises(ConfigurationError, match="view"):
        SelfConsistency(**bad)


def test_diverse_addon_gives_every_vote_its_views() -> None:
    votes = [s for s in build_pipeline("best+diverse").stages if isinstance(s, SelfConsistency)]
    assert votes and all(v.views == ("compact", "mschema") and v.view_samples == 2 for v in votes)
    with pytest.raises(ConfigurationError, match="no vote stage"):
        build_pipeline("zero-shot+diverse")


def test_a_split_vote_draws_more_samples_and_votes_again(singer_db: Path) -> None:
    """Adaptive consistency: 2 of 3 is below the bar of 3, so 2 more samples come (seeded after the first two)."""
    answers = ["SELECT count(*) FROM stadium",  # greedy
               "SELECT count(*) FROM stadium", "SELECT count(*) FROM singer",  # first samples: a split, 2 to 1
               "SELECT count(*) FROM singer", "SELECT count(name) FROM singer"]  # more: 3 to 2 the other way
    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=2, more=2, more_below=3),))
    answer, llm = run(pipe, singer_db, answers)
    notes = answer.trace[-1].notes
    assert answer.result.rows == ((6,),) and notes["groups"] == [3, 2] and notes["more"] == 2
    assert [(c[1].n, c[1].seed) for c in llm.calls[1:]] == [(2, 1), (2, 3)]
    assert llm.calls[2][0] == llm.calls[1][0] and answer.agreement == 3 / 5


def test_a_clear_vote_draws_no_more(singer_db: Path) -> None:
    answers = ["SELECT count(*) FROM singer", "SELECT count(*) FROM singer", "SELECT count(name) FROM singer"]
    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=2, more=2, more_below=3),))
    answer, llm = run(pipe, singer_db, answers)
    assert len(llm.calls) == 2 and "more" not in answer.trace[-1].notes and answer.agreement == 1.0


def test_more_samples_that_fail_leave_the_vote_as_it_was(singer_db: Path) -> None:
    from sqlweave.errors import LLMTimeoutError

    answers = ["SELECT count(*) FROM stadium", "SELECT count(*) FROM stadium", "SELECT count(*) FROM singer",
               LLMTimeoutError("the model took too long")]
    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=2, more=2, more_below=3),))
    answer, _ = run(pipe, singer_db, answers)
    notes = answer.trace[-1].notes
    assert answer.error is None and answer.result.rows[0][0] != 6 and notes["groups"] == [2, 1]
    assert "took too long" in notes["more_failed"]


def test_more_if_split_addon_sets_every_vote() -> None:
    votes = [s for s in build_pipeline("best+more-if-split").stages if isinstance(s, SelfConsistency)]
    assert votes and all((v.more, v.more_below) == (4, 4) for v in votes)
    with pytest.raises(ConfigurationError, match="no vote stage"):
        build_pipeline("zero-shot+more-if-split")
    with pytest.raises(ConfigurationError, match="more"):
        SelfConsistency(more=-1)
