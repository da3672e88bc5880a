"""The stage contract: the slots a stage names are State's, checked when its class is defined; and every shipped
stage writes only the slots its ``provides`` names (each stage run inside every shipped preset, State compared
before and after)."""

from __future__ import annotations

import copy
import inspect
import pkgutil
from dataclasses import fields
from typing import Any, ClassVar

import pytest

import sqlweave.agent
import sqlweave.pipeline as pipeline
import sqlweave.stages
from sqlweave.errors import PipelineError
from sqlweave.pipeline import Pipeline, PriorTurn, State
from sqlweave.stages.base import BaseStage
from sqlweave.stages import ExecuteSQL
from tests.stages.prompt_goldens import FAILING, presets, run

#: The pipeline's own bookkeeping around each stage (:func:`sqlweave.pipeline._run_stage`), not the stage's.
BOOKKEEPING = {"trace", "_calls", "_notes"}


def test_a_stage_class_naming_no_slot_of_state_fails_when_defined_with_the_close_name() -> None:
    with pytest.raises(PipelineError) as caught:
        class Typo(BaseStage):
            name = "typo"
            requires: ClassVar[tuple[str, ...]] = ("sql",)
            provides: ClassVar[tuple[str, ...]] = ("reslt",)

            def __call__(self, state: State) -> None: ...
    assert caught.value.code == "pipeline" and "'result'" in (caught.value.hint or "")


def test_extras_keys_name_what_outside_stages_keep() -> None:
    class Mine(BaseStage):
        name = "mine"
        recovers = False
        requires: ClassVar[tuple[str, ...]] = ("extras.toolkit",)
        provides: ClassVar[tuple[str, ...]] = ("extras.score",)

        def __call__(self, state: State) -> None: ...

    with pytest.raises(PipelineError):
        class Bare(BaseStage):
            provides: ClassVar[tuple[str, ...]] = ("extras.",)
    assert Mine.provides == ("extras.score",)


def test_a_pipeline_checks_the_slots_of_a_stage_of_no_base_too() -> None:
    class Loose:
        name, recovers, requires, provides = "loose", False, (), ("sqll",)

        def __call__(self, state: State) -> None: ...

    with pytest.raises(PipelineError):
        Pipeline("p", (ExecuteSQL(), Loose()))  # type: ignore[arg-type]


def _shipped_stage_classes() -> set[type]:
    found = set()
    for package in (sqlweave.stages, sqlweave.agent):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            module = __import__(info.name, fromlist=["_"])
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ == info.name and hasattr(cls, "provides") and callable(cls):
                    found.add(cls)
    return found


def _snapshot(state: State) -> dict[str, tuple[Any, Any]]:
    out = {}
    for f in fields(state):
        value = getattr(state, f.name)
        out[f.name] = (value, copy.copy(value) if isinstance(value, (list, dict, set)) else None)
    return out


def _written(before: dict[str, tuple[Any, Any]], state: State) -> set[str]:
    changed = set()
    for name, (value, shallow) in before.items():
        now = getattr(state, name)
        if now is not value or (shallow is not None and now != shallow):
            changed.add(name)
    if "extras" in changed:  # a key of extras is the slot a stage names ("extras.toolkit")
        was = before["extras"][1]
        changed = (changed - {"extras"}) | {f"extras.{k}" for k, v in state.extras.items()
                                            if k not in was or was[k] is not v}
    return changed - BOOKKEEPING


#: Every scenario: each preset with a first answer that runs and one that fails, then a follow-up restated first
#: and an answer below the confidence asked for (its readings).
SCENARIOS = [(p, first, {}) for p in presets() for first in ((), (FAILING,))] + [
    ("default", (), {"restate": True, "history": [PriorTurn("Which customers are from Canada?", "SELECT 1")]}),
    ("default", (), {"min_confidence": 0.999}),
]


@pytest.fixture(scope="module")
def writes() -> dict[type, dict[str, set[str]]]:
    """For each stage class: the slots each of its runs wrote, by scenario."""
    seen: dict[type, dict[str, set[str]]] = {}
    real = pipeline._run_stage

    def spy(stage: Any, state: State, on_stage: Any) -> None:
        before = _snapshot(state)
        real(stage, state, on_stage)
        wrote = _written(before, state)
        if state.trace[-1].error is not None:
            wrote.discard("error")  # the stage raised: the pipeline kept its error
        seen.setdefault(type(stage), {}).setdefault(stage.name, set()).update(wrote)

    pipeline._run_stage = spy  # type: ignore[assignment]
    try:
        for preset, first, options in SCENARIOS:
            run(preset, first, **options)
    finally:
        pipeline._run_stage = real  # type: ignore[assignment]
    return seen


def test_every_shipped_stage_ran_in_some_preset(writes: dict[type, dict[str, set[str]]]) -> None:
    not_run = {c.__name__ for c in _shipped_stage_classes()} - {c.__name__ for c in writes}
    assert not not_run


def test_every_stage_writes_only_what_it_provides(writes: dict[type, dict[str, set[str]]]) -> None:
    beyond = {f"{cls.__name__}({name})": sorted(wrote - set(cls.provides))
              for cls, runs in writes.items() for name, wrote in runs.items() if wrote - set(cls.provides)}
    assert not beyond, "\n".join(f"{k} also writes {v}" for k, v in sorted(beyond.items()))
