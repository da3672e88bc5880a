"""The prompts each shipped preset sends are byte for byte those of the golden files: the response cache and the
recorded traces (``sqlweave eval --replay``) key on them. Rewrite the files with ``python -m
tests.stages.prompt_goldens`` only for a change meant to change prompts."""

from __future__ import annotations

import pytest

from tests.stages.prompt_goldens import FIXTURES, presets, render


@pytest.mark.parametrize("preset", presets())
def test_the_prompts_of_a_preset_are_its_golden_ones(preset: str) -> None:
    golden = (FIXTURES / f"{preset.replace('+', '_')}.txt").read_text(encoding="utf-8")
    assert render(preset) == golden


def test_the_goldens_show_every_optional_prompt_block() -> None:
    shown = "".join(p.read_text(encoding="utf-8") for p in FIXTURES.glob("*.txt"))
    for header in ("Values from the database that match the question:",
                   "Words of the question that mean these tables or columns:",
                   "Evidence (facts that help answer the question):", "Question: "):
        assert header in shown
