"""benchmarks/speed/bench_pipelines.py: a preset with options of its vote, timed beside the preset as it is."""

from __future__ import annotations

from pathlib import Path

from sqlweave.database import Database
from sqlweave.llm import FakeLLM
from sqlweave.presets import build_pipeline
from tests.eval.test_vote_replays import load


def test_a_pipeline_spec_names_a_preset_and_options_of_its_vote(singer_db: Path) -> None:
    bench = load("bench_pipelines")
    name, vote = bench.parse_spec("best?examples_prompt=zero_shot_examples&n=2&support=1.5")
    assert (name, vote) == ("best", {"examples_prompt": "zero_shot_examples", "n": 2, "support": 1.5})
    pipe = build_pipeline(name, vote=vote)
    stage = pipe.stage("vote_if_unsure")
    assert stage.examples_prompt == "zero_shot_examples" and stage.n == 2
    assert bench.parse_spec("default+grammar") == ("default+grammar", {})
    # a vote held counts as voted; a vote skipped (a confident answer) does not
    sql = "SELECT count(*) FROM singer"
    always = build_pipeline("default", vote={"n": 1}, vote_below=1.0)
    held = always.run("How many singers?", Database.open(singer_db), FakeLLM([sql, sql, "-1.0"]))
    never = build_pipeline("default", vote_below=0.0).run("How many singers?", Database.open(singer_db), FakeLLM([sql]))
    assert bench.voted(held) and not bench.voted(never)
