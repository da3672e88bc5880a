"""Token counts for prompts: exact with the embedded model's vocabulary, quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sqlweave.config import Settings
from sqlweave.llm.tokens import VOCABULARY, count_tokens, estimate_tokens
from sqlweave.resources import Resources
from tests.extras import need_extra


def test_without_the_vocabulary_counts_are_an_estimate_and_say_so(tmp_path: Path) -> None:
    res = Resources(Settings.from_env({"SQLWEAVE_MODEL_DIR": str(tmp_path)}))  # no weights there
    assert count_tokens("SELECT count(*) FROM singer", resources=res) == \
        (estimate_tokens("SELECT count(*) FROM singer"), False)
    assert res.items(VOCABULARY) == [None]  # looked for once, kept by the resources asked


def test_loading_the_vocabulary_prints_nothing() -> None:
    """llama.cpp says on stderr that a vocabulary alone has no training context; that would land in the CLI's
    output of every question asked through another backend."""
    need_extra("local")  # with it, make install assembles the weights whose vocabulary is read
    code = "from sqlweave.llm.tokens import count_tokens; print(count_tokens('SELECT count(*) FROM singer'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(5, True)"
    assert done.stderr == ""
