"""The model's pairwise choice between the two leading result groups of a vote (CHASE-SQL's selector)."""

from pathlib import Path

import pytest

from sqlweave.db import Database
from sqlweave.errors import ConfigurationError, LLMTimeoutError
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.presets import build_pipeline, zero_shot
from sqlweave.stages.choose import letter, preview
from sqlweave.stages.vote import SelfConsistency

OLDEST = "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1"
YOUNGEST = "SELECT Name FROM singer ORDER BY Age ASC LIMIT 1"


def run(answers, select: str = "pairwise", margin: int = 1):
    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=2, select=select, margin=margin),))
    llm = FakeLLM(answers)
    return pipe, llm


def ask(singer_db: Path, answers, **kw):
    pipe, llm = run(answers, **kw)
    return pipe.run("Who is the oldest singer?", Database.open(singer_db), llm), llm


def test_a_choice_made_in_both_orders_overrules_the_majority(singer_db: Path) -> None:
    # greedy and one sample say the youngest (2 votes), one sample the oldest (1 vote): a close vote
    answer, llm = ask(singer_db, [YOUNGEST, YOUNGEST, OLDEST, "B", "A"])
    assert answer.sql == OLDEST and answer.result.rows == (("Joe Sharp",),)
    notes = answer.trace[-1].notes
    assert notes["selector"] == {"replies": ["B", "A"], "chose": "runner-up"} and notes["changed"] is True
    assert answer.agreement == pytest.approx(1 / 3)
    first, second = (llm.calls[2][0][-1].content, llm.calls[3][0][-1].content)
    # each query is shown with its first rows, in one order and then the other
    assert first.index(YOUNGEST) < first.index(OLDEST) and second.index(OLDEST) < second.index(YOUNGEST)
    assert "Result of query A: 1 row (Name): (Tribal King)" in first and "Who is the oldest singer?" in first
    assert llm.calls[2][1].max_tokens == 8 and llm.calls[2][1].temperature == 0.0


def test_a_choice_that_follows_the_position_keeps_the_majority(singer_db: Path) -> None:
    answer, _ = ask(singer_db, [YOUNGEST, YOUNGEST, OLDEST, "B", "B"])
    assert answer.sql == YOUNGEST and answer.trace[-1].notes["selector"]["chose"] == "majority"


def test_the_model_agreeing_with_the_majority_keeps_it(singer_db: Path) -> None:
    answer, _ = ask(singer_db, [YOUNGEST, YOUNGEST, OLDEST, "A", "Query B"])
    assert answer.sql == YOUNGEST and answer.trace[-1].notes["selector"]["chose"] == "largest"


def test_a_clear_majority_is_not_put_to_the_model(singer_db: Path) -> None:
    answer, llm = ask(singer_db, [YOUNGEST, YOUNGEST, OLDEST], margin=0)
    assert answer.sql == YOUNGEST and len(llm.calls) == 2 and "selector" not in answer.trace[-1].notes
    unanimous, llm = ask(singer_db, [OLDEST, OLDEST, OLDEST])
    assert len(llm.calls) == 2 and "selector" not in unanimous.trace[-1].notes


def test_a_failed_choice_keeps_the_majority(singer_db: Path) -> None:
    answer, _ = ask(singer_db, [YOUNGEST, YOUNGEST, OLDEST, LLMTimeoutError("the model took too long")])
    assert answer.ok and answer.sql == YOUNGEST
    assert answer.trace[-1].notes["selector"]["chose"] == "majority"
    assert "took too long" in answer.trace[-1].notes["selector"]["failed"]


def test_majority_voting_never_asks(singer_db: Path) -> None:
    answer, llm = ask(singer_db, [YOUNGEST, YOUNGEST, OLDEST], select="majority")
    assert answer.sql == YOUNGEST and len(llm.calls) == 2


def test_select_addon_turns_every_vote_pairwise() -> None:
    for name in ("default+select", "best+select", "vote+select"):
        votes = [s for s in build_pipeline(name).stages if isinstance(s, SelfConsistency)]
        assert votes and all(v.select == "pairwise" for v in votes)
    assert all(s.select == "majority" for s in build_pipeline("default").stages if isinstance(s, SelfConsistency))
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
