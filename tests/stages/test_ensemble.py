"""The multi-prompt ensemble: other presets' answers vote with the pipeline's own by execution result."""

from __future__ import annotations

from pathlib import Path

from sqlweave.database import Database
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.presets import build_pipeline, zero_shot
from sqlweave.stages.ensemble import PromptEnsemble
from sqlweave.stages.repair import SchemaRepair

OLD = "SELECT Name FROM singer WHERE Age > 40"
YOUNGER = "SELECT Name FROM singer WHERE Age > 30"
COUNT = "SELECT count(*) FROM singer"


def run(singer_db: Path, *answers: str):
    llm = FakeLLM(list(answers))
    stage = PromptEnsemble((build_pipeline("pruned+repair"), build_pipeline("zero-shot-compact")))
    pipe = Pipeline("t", zero_shot().stages + (SchemaRepair(), stage))
    return pipe.run("Which singers are older than 30?", Database.open(singer_db), llm), llm


def test_two_agreeing_candidates_outvote_the_first_answer(singer_db: Path) -> None:
    answer, llm = run(singer_db, OLD, YOUNGER, YOUNGER)
    assert answer.sql == YOUNGER and abs(answer.agreement - 2 / 3) < 1e-9
    entry = answer.trace[-1]
    assert entry.notes["chosen"] == "pruned+repair" and entry.notes["groups"] == [2, 1]
    # 3 model calls in all: the pruned preset took the first answer as its approximation instead of asking
    assert len(llm.calls) == 3 and len(entry.calls) == 2
    pruned_prompt = llm.calls[1][0][-1].content
    assert "CREATE TABLE singer" in pruned_prompt and "CREATE TABLE stadium" not in pruned_prompt


def test_without_agreement_the_first_answer_stays(singer_db: Path) -> None:
    answer, _ = run(singer_db, OLD, YOUNGER, COUNT)
    assert answer.sql == OLD and abs(answer.agreement - 1 / 3) < 1e-9
    assert answer.trace[-1].notes["chosen"] == "current"


def test_a_failed_first_answer_gives_way_to_a_candidate_that_runs(singer_db: Path) -> None:
    answer, _ = run(singer_db, "SELEC Name FRM singer", YOUNGER, COUNT)
    assert answer.ok and answer.sql == YOUNGER
    assert answer.trace[-1].notes["candidates"][1]["outcome"] == "ok"


def test_all_candidates_failing_keeps_the_error_and_zero_confidence(singer_db: Path) -> None:
    answer, _ = run(singer_db, "SELEC 1", "no sql here", "SELEC 2")
    assert not answer.ok and answer.agreement == 0.0


def test_ensemble_preset_takes_the_bundled_pool_or_the_one_given(monkeypatch) -> None:
    from sqlweave.retrieval.pool import BUNDLED_POOL

    monkeypatch.delenv("SQLWEAVE_EXAMPLES", raising=False)
    stage = build_pipeline("ensemble").stages[-2]
    assert {s.pool for p in stage.pipelines for s in p.stages if s.name == "select_examples"} == {str(BUNDLED_POOL)}
    stage = build_pipeline("ensemble", examples="train.json").stages[-2]
    assert stage.name == "ensemble" and stage.variants == ("pruned+repair", "rag-simplify+repair")
    pools = {s.pool for p in stage.pipelines for s in p.stages if s.name == "select_examples"}
    assert pools == {"train.json"}  # the preset's example pool reaches the pipelines it combines


def test_a_variant_that_cannot_be_built_fails_when_the_ensemble_is_built() -> None:
    import pytest

    from sqlweave.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="unknown pipeline 'no-such-preset'"):
        PromptEnsemble((build_pipeline("no-such-preset"), build_pipeline("zero-shot-compact")))
    with pytest.raises(ConfigurationError, match="min_votes"):
        PromptEnsemble((build_pipeline("zero-shot-compact"),), min_votes=0)
