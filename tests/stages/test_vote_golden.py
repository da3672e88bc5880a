"""Recorded votes choose what they chose: the shipped presets and the vote's addons replayed on the questions of the
200-question Spider dev sample whose recorded vote had more than one result group, every model call answered from
the checkpoint's traces (an unrecorded call gets a fixed answer, so the replay never needs the model). The SQL each
vote adopts and its notes (groups, the selector's choice, agreement) must match ``tests/fixtures/presets/votes/``,
written by this module run as a script from the code before the vote stage was split.

    /work/main/.venv/bin/python -m tests.stages.test_vote_golden   # rewrites the fixtures
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sqlweave.database import Database
from sqlweave.llm.base import LLM, Completion, GenerationOptions, Message, Usage
from sqlweave.llm.recorded import RecordedLLM
from sqlweave.presets import build_pipeline

ROOT = Path(__file__).resolve().parents[2]
SPIDER = ROOT.parent / "shared" / "data" / "spider"
FIXTURES = ROOT / "tests" / "fixtures" / "presets" / "votes"
#: Preset -> the checkpoint whose traces answer its calls.
RUNS = {"best": "lf-best-200", "default": "default-200", "default+select": "select-200",
        "vote-more+diverse": "diverse-200", "zero-shot+repair+rewrite+vote": "vote05-200"}
#: Questions replayed per preset (the first with a split recorded vote).
QUESTIONS = 12
VOTES = ("vote_if_unsure", "vote")

needs_spider = pytest.mark.skipif(not (SPIDER / "database").is_dir(), reason="needs ../shared/data/spider")


class Unrecorded(LLM):
    """Answers what the recording lacks with a fixed query, and scores by a hash of the text: the same every run."""

    model_id = "unrecorded"
    supports_choices = True

    def _complete(self, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        digest = int(hashlib.sha256(repr([m.content for m in messages]).encode()).hexdigest()[:8], 16)
        if options.continuation is not None:
            texts: tuple[str, ...] = (f"-{digest % 5000 / 100:.2f}",)
        elif options.choices is not None:
            texts = tuple(f"{(digest >> i) % 100 / 100 + 0.01:.2f}" for i in range(len(options.choices)))
        else:
            texts = ("```sql\nSELECT 1\n```",) * options.n
        return Completion(texts, Usage(0, 0), 0.0, self.model_id)


def split_votes(run: str) -> list[dict[str, Any]]:
    """The questions of checkpoint ``run`` whose recorded vote had more than one result group."""
    folder = ROOT / "benchmarks" / "checkpoints" / run
    rows = {r["id"]: r for r in map(json.loads, (folder / "results.jsonl").read_text(encoding="utf-8").splitlines())}
    chosen = []
    with gzip.open(folder / "traces.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            trace = json.loads(line)
            votes = [e for e in trace["trace"] if e.get("stage") in VOTES]
            if votes and len(votes[-1].get("notes", {}).get("groups", [])) > 1:
                chosen.append(rows[trace["id"]])
            if len(chosen) == QUESTIONS:
                break
    return chosen


def replay(preset: str) -> dict[str, Any]:
    run = RUNS[preset]
    pipe = build_pipeline(preset, examples=str(SPIDER / "train.json"))
    llm = RecordedLLM(Unrecorded(), [ROOT / "benchmarks" / "checkpoints" / run])
    out = {}
    for row in split_votes(run):
        db = Database.open(SPIDER / "database" / row["db_id"] / f"{row['db_id']}.sqlite")
        answer = pipe.run(row["question"], db, llm)
        vote = next(e for e in reversed(answer.trace) if e.stage in VOTES)
        notes = {k: vote.notes.get(k) for k in ("groups", "agreement", "changed", "votes", "skipped")}
        selector = vote.notes.get("selector") or {}
        notes["chose"] = selector.get("chose")
        out[row["id"]] = {"sql": answer.sql, "vote_sql": vote.sql, **notes}
    return out


@needs_spider
@pytest.mark.parametrize("preset", sorted(RUNS))
def test_recorded_votes_choose_the_same_answer(preset: str) -> None:
    expected = json.loads((FIXTURES / f"{preset}.json").read_text(encoding="utf-8"))
    assert len(expected) == QUESTIONS and any(v["changed"] for v in expected.values())
    assert replay(preset) == expected


if __name__ == "__main__":
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[1:] or RUNS:
        (FIXTURES / f"{name}.json").write_text(json.dumps(replay(name), indent=1) + "\n", encoding="utf-8")
