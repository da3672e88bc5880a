"""How a close vote is settled by the model: its pairwise choice between the two leading result groups (CHASE-SQL's
selector), or reviewer reranking (the question's likelihood given each leading query)."""

from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.errors import ConfigurationError, LLMTimeoutError
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.presets import build_pipeline, zero_shot
from sqlweave.stages.choose import letter, preview
from sqlweave.stages.vote import SelfConsistency

OLDEST = "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1"
YOUNGEST = "SELECT Name FROM singer ORDER BY Age ASC LIMIT 1"


class WritingLLM(FakeLLM):
    """A backend that can only write its choice (no probabilities)."""

    supports_choices = False


def ask(singer_db: Path, answers, select: str = "pairwise", margin: int = 1, llm_class=FakeLLM, support: float = 0.0):
    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=2, select=select, margin=margin, support=support),))
    llm = llm_class(answers)
    return pipe.run("Who is the oldest singer?", Database.open(singer_db), llm), llm


# greedy and one sample say the youngest (2 votes), one sample the oldest (1 vote): a close vote
CLOSE = [YOUNGEST, YOUNGEST, OLDEST]


def test_probabilities_averaged_over_both_orders_cancel_the_position_preference(singer_db: Path) -> None:
    # The model leans to "A" in both orders, but less so when the oldest is shown first:
    # P(youngest right) = (0.6 + (1 - 0.9)) / 2 = 0.35, so the runner-up (the oldest) wins.
    answer, llm = ask(singer_db, CLOSE + ["0.6 0.4", "0.9 0.1"])
    assert answer.sql == OLDEST and answer.result.rows == (("Joe Sharp",),)
    notes = answer.trace[-1].notes
    assert notes["selector"] == {"p_a": [0.6, 0.9], "p_first": 0.35, "chose": "runner-up"} and notes["changed"]
    assert answer.agreement == pytest.approx(1 / 3)
    first, second = (llm.calls[2][0][-1].content, llm.calls[3][0][-1].content)
    # each query is shown with its first rows, in one order and then the other
    assert first.index(YOUNGEST) < first.index(OLDEST) and second.index(OLDEST) < second.index(YOUNGEST)
    assert "Result of query A: 1 row (Name): (Tribal King)" in first and "Who is the oldest singer?" in first
    assert llm.calls[2][1].choices == ("A", "B") and llm.calls[3][1].choices == ("A", "B")


def test_probabilities_for_the_majority_keep_it(singer_db: Path) -> None:
    answer, _ = ask(singer_db, CLOSE + ["0.9 0.1", "0.8 0.2"])
    assert answer.sql == YOUNGEST and answer.trace[-1].notes["selector"]["chose"] == "largest"
    held, _ = ask(singer_db, CLOSE + ["0.7 0.3", "0.3 0.7"])  # the youngest is held right in both orders
    assert held.sql == YOUNGEST and held.trace[-1].notes["selector"]["p_first"] == 0.7
    undecided, _ = ask(singer_db, CLOSE + ["0.7 0.3", "0.7 0.3"])  # p_first = 0.5 exactly: no decision
    assert undecided.sql == YOUNGEST and undecided.trace[-1].notes["selector"]["chose"] == "majority"


def test_a_written_choice_made_in_both_orders_overrules_the_majority(singer_db: Path) -> None:
    answer, llm = ask(singer_db, CLOSE + ["B", "A"], llm_class=WritingLLM)
    assert answer.sql == OLDEST
    assert answer.trace[-1].notes["selector"] == {"replies": ["B", "A"], "chose": "runner-up"}
    assert llm.calls[2][1].max_tokens == 8 and llm.calls[2][1].temperature == 0.0 and llm.calls[2][1].choices is None


def test_a_written_choice_that_follows_the_position_keeps_the_majority(singer_db: Path) -> None:
    answer, _ = ask(singer_db, CLOSE + ["A", "A"], llm_class=WritingLLM)
    assert answer.sql == YOUNGEST and answer.trace[-1].notes["selector"]["chose"] == "majority"
    agreed, _ = ask(singer_db, CLOSE + ["A", "Query B"], llm_class=WritingLLM)
    assert agreed.sql == YOUNGEST and agreed.trace[-1].notes["selector"]["chose"] == "largest"


def test_a_clear_majority_is_not_put_to_the_model(singer_db: Path) -> None:
    answer, llm = ask(singer_db, CLOSE, margin=0)
    assert answer.sql == YOUNGEST and len(llm.calls) == 2 and "selector" not in answer.trace[-1].notes
    unanimous, llm = ask(singer_db, [OLDEST, OLDEST, OLDEST])
    assert len(llm.calls) == 2 and "selector" not in unanimous.trace[-1].notes


def test_a_failed_choice_keeps_the_majority(singer_db: Path) -> None:
    for answers in (CLOSE + [LLMTimeoutError("the model took too long")], CLOSE + ["high low"]):
        answer, _ = ask(singer_db, answers)
        assert answer.ok and answer.sql == YOUNGEST
        assert answer.trace[-1].notes["selector"]["chose"] == "majority"
        assert answer.trace[-1].notes["selector"]["failed"]


def test_majority_voting_never_asks(singer_db: Path) -> None:
    answer, llm = ask(singer_db, CLOSE, select="majority")
    assert answer.sql == YOUNGEST and len(llm.calls) == 2


def test_review_picks_the_query_under_which_the_question_is_likeliest(singer_db: Path) -> None:
    # the youngest's query makes the question unlikely (-20.0), the oldest's likely (-8.0): the runner-up wins
    answer, llm = ask(singer_db, CLOSE + ["-20.0", "-8.0"], select="review")
    assert answer.sql == OLDEST
    assert answer.trace[-1].notes["selector"] == {"logp": [-20.0, -8.0], "chose": "group 2"}
    for call, sql in zip(llm.calls[2:], (YOUNGEST, OLDEST)):
        messages, options = call
        assert options.continuation == "Who is the oldest singer?" and sql in messages[-1].content
        assert "Who is the oldest" not in messages[-1].content  # the question is what is scored, not shown
    tied, _ = ask(singer_db, CLOSE + ["-9.0", "-9.0"], select="review")
    assert tied.sql == YOUNGEST and tied.trace[-1].notes["selector"]["chose"] == "largest"


def test_review_with_support_weighs_the_group_size_too(singer_db: Path) -> None:
    # the youngest has 2 candidates, the oldest 1; the oldest's query makes the question likelier by 0.5 nats
    close = CLOSE + ["-8.5", "-8.0"]
    alone, _ = ask(singer_db, close, select="review")
    assert alone.sql == OLDEST
    # with support 1, the youngest scores -8.5 + ln 2 = -7.81 against -8.0 + ln 1: its two candidates win
    weighed, _ = ask(singer_db, close, select="review", support=1.0)
    assert weighed.sql == YOUNGEST and weighed.trace[-1].notes["selector"]["chose"] == "largest"
    # a gap of more than ln 2 still goes to the likelier reading
    clear, _ = ask(singer_db, CLOSE + ["-9.0", "-8.0"], select="review", support=1.0)
    assert clear.sql == OLDEST
    with pytest.raises(ConfigurationError, match="support"):
        SelfConsistency(support=-1.0)


def test_review_without_scores_keeps_the_majority(singer_db: Path) -> None:
    answer, llm = ask(singer_db, CLOSE, select="review", llm_class=WritingLLM)
    assert answer.sql == YOUNGEST and len(llm.calls) == 2
    assert "cannot score" in answer.trace[-1].notes["selector"]["failed"]
    broken, _ = ask(singer_db, CLOSE + ["-3.0", "not a number"], select="review")
    assert broken.sql == YOUNGEST and broken.trace[-1].notes["selector"]["chose"] == "majority"


def test_select_and_review_addons_set_how_every_vote_is_settled() -> None:
    for name in ("default+select", "best+select", "vote+select"):
        votes = [s for s in build_pipeline(name).stages if isinstance(s, SelfConsistency)]
        assert votes and all(v.select == "pairwise" for v in votes)
    selects = lambda name: [s.select for s in build_pipeline(name).stages if isinstance(s, SelfConsistency)]  # noqa: E731
    assert selects("default") == selects("best") == selects("vote+review") == ["review"]  # default reviews close votes
    assert selects("vote") == ["majority"]
    with pytest.raises(ConfigurationError, match="no vote stage"):
        build_pipeline("zero-shot+select")
    with pytest.raises(ConfigurationError, match="pairwise"):
        SelfConsistency(select="pairs")


def test_letter_and_preview() -> None:
    from sqlweave.db.connection import QueryResult

    assert [letter(t) for t in ("A", " B.", "Query B", "AB", "a", "")] == ["A", "B", "B", None, None, None]
    rows = tuple((i, "x\x1b[31m") for i in range(8))
    text = preview(QueryResult("q", ("n", "s"), rows, True, 0.0))
    assert text.startswith("8+ rows (n, s): (0, x\\x1b[31m)") and text.endswith("... 3 more")
    assert "\x1b" not in text


def test_review_of_every_group_reaches_beyond_a_close_vote(singer_db: Path) -> None:
    # 3 candidates against 1 is no close vote: with margin 1 the model is not asked; with margin None every group is
    lopsided = [YOUNGEST, YOUNGEST, YOUNGEST, OLDEST]
    pipe = lambda margin: Pipeline("v", zero_shot().stages + (  # noqa: E731
        SelfConsistency(n=3, select="review", margin=margin, support=2.0),))
    llm = FakeLLM(lopsided)
    kept = pipe(1).run("Who is the oldest singer?", Database.open(singer_db), llm)
    assert kept.sql == YOUNGEST and len(llm.calls) == 2 and "selector" not in kept.trace[-1].notes
    # -12.0 + 2 ln 3 = -9.80 against -8.0 + 2 ln 1: the lone reading wins by more than the support of three
    llm = FakeLLM(lopsided + ["-12.0", "-8.0"])
    overruled = pipe(None).run("Who is the oldest singer?", Database.open(singer_db), llm)
    assert overruled.sql == OLDEST and overruled.trace[-1].notes["selector"]["chose"] == "group 2"
    # -10.0 + 2 ln 3 = -7.80 against -8.0: a gap of less than 2 ln 3 = 2.20 nats keeps the three
    llm = FakeLLM(lopsided + ["-10.0", "-8.0"])
    held = pipe(None).run("Who is the oldest singer?", Database.open(singer_db), llm)
    assert held.sql == YOUNGEST and held.trace[-1].notes["selector"]["chose"] == "largest"


def test_a_vote_asks_again_in_each_prompt_view_named(singer_db: Path) -> None:
    """``prompt_views``: the question asked once more, greedily, in another generation template with the schema
    generation shows; its answer (after the "Tables:" line it is asked for) joins the vote."""
    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=1, prompt_views=("zero_shot_link_first",)),))
    llm = FakeLLM([YOUNGEST, YOUNGEST, f"Tables: singer\n```sql\n{OLDEST}\n```"])
    answer = pipe.run("Who is the oldest singer?", Database.open(singer_db), llm)
    assert answer.trace[-1].notes["groups"] == [2, 1] and answer.sql == YOUNGEST
    (generation, _), (view, options) = llm.calls[0], llm.calls[2]
    assert view[0].content == generation[0].content and options.temperature == 0.0
    assert view[1].content.startswith(generation[1].content) and 'one line "Tables:"' in view[1].content
    built = build_pipeline("best", vote={"prompt_views": ["zero_shot_link_first"]}).stage("vote_if_unsure")
    link_first = build_pipeline("best+link-first").stage("vote_if_unsure")
    assert built.prompt_views == ("zero_shot_link_first",) == link_first.prompt_views
    assert link_first.examples == build_pipeline("best").stage("vote_if_unsure").examples == 4
    with pytest.raises(ConfigurationError, match="no vote stage"):
        build_pipeline("zero-shot+link-first")
    for bad in ({"prompt_views": "zero_shot_link_first"}, {"prompt_views": [1]}):
        with pytest.raises(ConfigurationError, match="prompt_views"):
            build_pipeline("best", vote=bad)
    with pytest.raises(ConfigurationError, match="does not ask the question"):
        SelfConsistency(prompt_views=("review",))
