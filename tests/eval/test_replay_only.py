"""A replay-only run answers from the recorded traces and never asks the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sqlweave.errors import LLMError
from sqlweave.eval.replay_only import NoModelLLM, ReplayMiss, replay_only_llm
from sqlweave.llm.base import Message
from sqlweave.llm.fake import FakeLLM


def _traces(folder: Path, prompt: str, answer: str) -> Path:
    call = {"messages": [{"role": "user", "content": prompt}], "outputs": [answer]}
    (folder / "traces.jsonl").write_text(json.dumps({"id": "q1", "trace": [{"calls": [call]}]}) + "\n")
    return folder


def test_a_recorded_call_is_answered_and_an_unrecorded_one_is_a_miss(tmp_path: Path) -> None:
    llm = replay_only_llm("fake", [_traces(tmp_path, "recorded", "SELECT 7")], tmp_path / "cache.sqlite")
    assert llm.complete([Message("user", "recorded")]).text == "SELECT 7"
    with pytest.raises(ReplayMiss) as err:
        llm.complete([Message("user", "never recorded")])
    assert isinstance(err.value, LLMError) and err.value.code == "replay_miss"
    recorded = llm.inner
    assert (recorded.answered, recorded.passed, recorded.inner.misses) == (1, 1, 1)
    # an exact repeat is answered by the run's own response cache, not counted as a miss
    assert llm.complete([Message("user", "recorded")]).text == "SELECT 7"
    assert recorded.inner.misses == 1


def test_the_stand_in_never_calls_the_model_it_stands_for() -> None:
    model = FakeLLM(["SELECT 1"])
    stand_in = NoModelLLM(model)
    with pytest.raises(ReplayMiss):
        stand_in.complete([Message("user", "q")])
    assert model.calls == [] and stand_in.prefill([Message("user", "q")]) is False
    assert stand_in.model_id == model.model_id
