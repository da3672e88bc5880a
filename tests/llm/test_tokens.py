"""Token counts for prompts: exact with the embedded model's vocabulary, quietly."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sqlweave.llm.tokens import count_tokens, estimate_tokens
from tests.extras import need_extra


def test_without_the_vocabulary_counts_are_an_estimate_and_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlweave.llm.tokens as tokens

    monkeypatch.setattr(tokens, "_vocab", lambda: None)
    assert count_tokens("SELECT count(*) FROM singer") == (estimate_tokens("SELECT count(*) FROM singer"), False)


def test_loading_the_vocabulary_prints_nothing() -> None:
    """llama.cpp says on stderr that a vocabulary alone has no training context; that would land in the CLI's
    output of every question asked through another backend."""
    need_extra("local")  # with it, make install assembles the weights whose vocabulary is read
    code = "from sqlweave.llm.tokens import count_tokens; print(count_tokens('SELECT count(*) FROM singer'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(5, True)"
    assert done.stderr == ""
