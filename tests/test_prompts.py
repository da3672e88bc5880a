"""Prompt templates: named files of the package, and a view's template sharing generation's instructions."""

from __future__ import annotations

from pathlib import Path

import pytest

import sqlweave.prompts as prompts
from sqlweave.errors import ConfigurationError


def test_views_of_generation_keep_its_instructions_word_for_word() -> None:
    names = sorted(p.name[:-4] for p in Path(prompts.__file__).parent.glob("*.txt"))
    shared = [n for n in names if (Path(prompts.__file__).parent / f"{n}.txt").read_text().startswith("@system ")]
    assert {"zero_shot_examples", "zero_shot_link_first"} <= set(shared)
    for name in names:  # every reference resolved: no model is ever shown "@system ..."
        assert not prompts.load(name)[0].startswith("@system")
    for name in shared:
        assert prompts.load(name)[0] == prompts.load("zero_shot")[0] and prompts.load(name)[1] != prompts.load("zero_shot")[1]


def test_a_template_that_takes_its_instructions_from_itself_or_a_reference_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "loop.txt").write_text("@system loop\n---\nQuestion: {question}\n")
    (tmp_path / "base.txt").write_text("Be brief.\n---\n{question}\n")
    (tmp_path / "view.txt").write_text("@system base\n---\nShort question: {question}\n")
    monkeypatch.setattr(prompts.resources, "files", lambda package: tmp_path)
    prompts.load.cache_clear()
    try:
        assert prompts.load("view") == ("Be brief.", "Short question: {question}")
        with pytest.raises(ConfigurationError, match="from itself"):
            prompts.load("loop")
        # two templates naming each other, or a chain: refused, not followed
        (tmp_path / "ping.txt").write_text("@system pong\n---\n{question}\n")
        (tmp_path / "pong.txt").write_text("@system ping\n---\n{question}\n")
        (tmp_path / "chain.txt").write_text("@system view\n---\n{question}\n")
        for name, source in (("ping", "pong"), ("pong", "ping"), ("chain", "view")):
            with pytest.raises(ConfigurationError, match=f"from '{source}', which takes them from another"):
                prompts.load(name)
        with pytest.raises(ConfigurationError, match="no prompt template 'gone'"):
            (tmp_path / "dangling.txt").write_text("@system gone\n---\n{question}\n")
            prompts.load("dangling")
    finally:
        prompts.load.cache_clear()
