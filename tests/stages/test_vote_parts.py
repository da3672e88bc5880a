"""The vote stage composes candidate sources and a selector; the settings measured and switched off are gone."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.errors import ConfigurationError
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.presets import VOTE_OPTIONS, build_pipeline, zero_shot
from sqlweave.stages.candidate import Attempt
from sqlweave.stages.candidate_sources import FewShotView, PromptView, Sampling, SchemaView
from sqlweave.stages.selectors import Majority, Pairwise, Review, selector
from sqlweave.stages.vote import SelfConsistency

OLDEST = "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1"
YOUNGEST = "SELECT Name FROM singer ORDER BY Age ASC LIMIT 1"
#: Settings of the vote measured on Spider dev and switched off in every preset and addon (BENCHMARKS.md).
REMOVED = ("coder", "fenced", "finish", "examples_by", "question_examples", "review_examples", "review_examples_by")


def test_a_vote_s_views_come_in_order_with_its_sampling() -> None:
    vote = SelfConsistency(temperature=0.7, max_tokens=99, seed=3, views=("compact", "mschema"), view_samples=2,
                           examples=4, examples_prompt="zero_shot_examples", prompt_views=("zero_shot_link_first",))
    how = Sampling(0.7, 99, 3)
    assert vote.views_of("PAIRS") == [SchemaView(how, 2, "compact"), SchemaView(how, 2, "mschema"),
                                      FewShotView(how, 2, "PAIRS", "zero_shot_examples"),
                                      PromptView(how, 0, "zero_shot_link_first")]
    assert [type(v) for v in vote.views_of(None)] == [SchemaView, SchemaView, PromptView]  # no pairs: no few-shot view
    assert SelfConsistency().views_of() == []


@pytest.mark.parametrize("select, margin, support, expected", [
    ("majority", 1, 0.0, Majority()), ("pairwise", 2, 0.0, Pairwise(2)), ("review", None, 2.0, Review(None, 2.0))])
def test_the_selector_is_the_one_the_vote_names(select: str, margin: int | None, support: float, expected) -> None:
    assert SelfConsistency(select=select, margin=margin, support=support).selector == expected
    assert selector(select, margin, support) == expected


def test_a_clear_vote_asks_the_model_nothing() -> None:
    candidates = [Attempt(YOUNGEST, None, None), Attempt(OLDEST, None, None), Attempt(OLDEST, None, None),
                  Attempt(OLDEST, None, None)]
    groups = [[1, 2, 3], [0]]  # 3 against 1: beyond a margin of 1
    for chooser in (Majority(), Pairwise(1), Review(1, 2.0)):
        assert chooser.choose(None, candidates, groups) == ([1, 2, 3], {})  # type: ignore[arg-type]


def test_samples_drawn_after_a_split_are_seeded_after_the_first(singer_db: Path) -> None:
    llm = FakeLLM([YOUNGEST, OLDEST, YOUNGEST, OLDEST, OLDEST])
    pipe = Pipeline("v", zero_shot().stages + (SelfConsistency(n=2, more=2, more_below=3, seed=5),))
    answer = pipe.run("Who is the oldest singer?", Database.open(singer_db), llm)
    assert [(o.n, o.seed) for _, o in llm.calls[1:]] == [(2, 5), (2, 7)]
    assert answer.sql == OLDEST and answer.trace[-1].notes["groups"] == [3, 2]


@pytest.mark.parametrize("option", REMOVED)
def test_settings_measured_and_switched_off_are_refused(option: str) -> None:
    assert option not in VOTE_OPTIONS and option not in SelfConsistency.__dataclass_fields__
    with pytest.raises(ConfigurationError, match="unknown vote option"):
        build_pipeline("best", vote={option: 1})


def test_a_vote_option_of_the_wrong_kind_is_refused() -> None:
    for bad in ({"n": True}, {"n": "8"}, {"temperature": "hot"}, {"select": 1}):
        with pytest.raises(ConfigurationError, match=f"vote option {next(iter(bad))} takes"):
            build_pipeline("best", vote=bad)
