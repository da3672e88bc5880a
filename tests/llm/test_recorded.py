"""Recorded traces answered again without the model (``sqlweave eval --replay``)."""

import gzip
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sqlweave.cli import app
from sqlweave.errors import ConfigurationError, LLMResponseError
from sqlweave.eval.datasets import load_spider
from sqlweave.eval.runner import load_results, run_eval
from sqlweave.llm import FakeLLM
from sqlweave.llm.base import GenerationOptions, Message
from sqlweave.llm.cache import CachedLLM
from sqlweave.llm.recorded import RecordedLLM, call_key
from sqlweave.presets import build_pipeline
from tests.eval.test_runner import _tiny_dataset

GOOD = {"How many singers?": "SELECT count(*) FROM singer", "Names by age?": "SELECT name FROM singer ORDER BY age",
        "Stadium count?": "SELECT count(*) FROM stadium", "Countries?": "SELECT DISTINCT country FROM singer",
        "Broken gold?": "SELECT 1"}


def _answer(messages, options) -> str:
    if options.continuation is not None:  # a vote's reviewer scores: longer queries are less likely
        return f"-{len(messages[-1].content) / 10:.1f}"
    question = messages[-1].content.rsplit("Question: ", 1)[1]
    sql = GOOD.get(question, "SELECT 1")
    if options.temperature > 0:  # samples disagree with the greedy answer, so the vote has groups to weigh
        sql = "SELECT count(*) FROM concert"
    return f"```sql\n{sql}\n```"


def _trace(folder: Path, calls: list[dict], gz: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"id": "dev-1", "trace": [{"stage": "generate", "calls": calls}]}) + "\n"
    path = folder / ("traces.jsonl.gz" if gz else "traces.jsonl")
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(line)
    else:
        path.write_text(line)
    return path


def _call(content: str, outputs: list[str]) -> dict:
    return {"messages": [{"role": "user", "content": content}], "outputs": outputs, "prompt_tokens": 7,
            "completion_tokens": 3, "seconds": 2.5}


def test_a_recorded_call_is_answered_with_its_tokens_and_first_cost_and_others_reach_the_model(tmp_path: Path) -> None:
    _trace(tmp_path / "run", [_call("q", ["SELECT 1"]), _call("q", ["SELECT 2", "SELECT 3"])], gz=True)
    model = FakeLLM(["SELECT 9"] * 3)
    llm = RecordedLLM(model, [tmp_path / "run"])
    one = llm.complete([Message("user", "q")])
    two = llm.complete([Message("user", "q")], n=2, temperature=0.8)
    assert (one.texts, one.cached, one.usage.prompt_tokens, one.cost_seconds) == (("SELECT 1",), True, 7, 2.5)
    assert two.texts == ("SELECT 2", "SELECT 3")
    assert llm.complete([Message("user", "q")], n=3, temperature=0.8).texts == ("SELECT 9",) * 3
    assert (llm.answered, llm.passed) == (2, 1) and len(model.calls) == 1


def test_a_recorded_answer_answers_one_call_and_a_second_draw_goes_to_the_model(tmp_path: Path) -> None:
    # a split vote's extra samples: the same messages and number of samples as the first ones, another seed
    _trace(tmp_path / "run", [_call("q", ["SELECT 1", "SELECT 2"])])
    model = FakeLLM(["SELECT 3", "SELECT 4"])
    cached = CachedLLM(RecordedLLM(model, [tmp_path / "run"]), tmp_path / "cache.sqlite")
    first = cached.complete([Message("user", "q")], n=2, temperature=0.8, seed=1)
    again = cached.complete([Message("user", "q")], n=2, temperature=0.8, seed=1)  # an exact repeat: the cache
    more = cached.complete([Message("user", "q")], n=2, temperature=0.8, seed=3)
    assert first.texts == again.texts == ("SELECT 1", "SELECT 2")
    assert more.texts == ("SELECT 3", "SELECT 4") and len(model.calls) == 1


def test_the_same_call_recorded_with_two_answers_goes_to_the_model(tmp_path: Path) -> None:
    _trace(tmp_path / "a", [_call("score this", ["-3.5"])])
    _trace(tmp_path / "b", [_call("score this", ["-9.0"]), _call("other", [""])])
    model = FakeLLM(["-1.0", "SELECT 1"])
    llm = RecordedLLM(model, [tmp_path / "a", tmp_path / "b" / "traces.jsonl"])
    assert len(llm) == 2  # a failed (empty) answer is nothing to replay
    assert llm.complete([Message("user", "score this")], continuation="How many?").text == "-1.0"
    assert llm.complete([Message("user", "other")]).text == "SELECT 1"
    assert llm.passed == 2


def test_a_scoring_call_is_matched_with_the_question_of_its_recorded_line(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    same = [{"role": "user", "content": "Query: SELECT name FROM singer. Write the question this query answers."}]
    lines = [{"id": f"dev-{i}", "trace": [{"calls": [{"messages": same, "outputs": [score]}]}]}
             for i, score in ((1, "-3.5"), (2, "-9.0"))]
    (folder / "traces.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (folder / "results.jsonl").write_text(json.dumps({"id": "dev-1", "question": "Singer names?"}) + "\n"
                                          + json.dumps({"id": "dev-2", "question": "Who sings?"}) + "\n")
    model = FakeLLM(["-1.0"])
    llm = RecordedLLM(model, [folder])
    messages = [Message(m["role"], m["content"]) for m in same]
    assert llm.complete(messages, continuation="Singer names?").text == "-3.5"
    assert llm.complete(messages, continuation="Who sings?").text == "-9.0"
    # the messages were recorded, but not under this question: the model scores it
    assert llm.complete(messages, continuation="Name every singer.").text == "-1.0"
    assert (llm.answered, llm.passed) == (2, 1)


def test_replayed_answers_are_stored_under_the_models_own_cache_key(tmp_path: Path) -> None:
    _trace(tmp_path / "run", [_call("q", ["SELECT 1"])])
    model = FakeLLM()
    cached = CachedLLM(RecordedLLM(model, [tmp_path / "run"]), tmp_path / "cache.sqlite")
    assert cached.complete([Message("user", "q")]).text == "SELECT 1"
    again = CachedLLM(FakeLLM(), tmp_path / "cache.sqlite")  # no recording: the answer is in the cache now
    hit = again.complete([Message("user", "q")])
    assert hit.text == "SELECT 1" and hit.cost_seconds == 2.5  # cached at what it cost the recorded run
    with pytest.raises(LLMResponseError):
        again.complete([Message("user", "not recorded")])


def test_messages_are_matched_as_the_backend_sees_them() -> None:
    assert call_key([Message("user", "a\udcffb")], 1) == call_key([{"role": "user", "content": "a\ufffdb"}], 1)
    assert call_key([Message("user", "a")], 1) != call_key([Message("user", "a")], 4)
    assert call_key([Message("user", "a")], 1) != call_key([Message("system", "a")], 1)


def test_no_traces_or_unreadable_traces_are_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no recorded traces"):
        RecordedLLM(FakeLLM(), [tmp_path])
    (tmp_path / "traces.jsonl").write_text('{"id": "dev-1"}\n')
    with pytest.raises(ConfigurationError, match="line 1: not a recorded trace"):
        RecordedLLM(FakeLLM(), [tmp_path])


def test_a_best_run_replayed_from_its_traces_gives_the_same_answers_without_the_model(tmp_path: Path) -> None:
    root = _tiny_dataset(tmp_path)
    ds = load_spider(root, "dev")
    first = tmp_path / "first"
    run_eval(ds, ds.examples, build_pipeline("best", vote_below=1.0), FakeLLM(responder=_answer), first)  # every answer voted
    recorded = {r.id: (r.prediction, r.match) for r in load_results(first)}
    checkpoint = tmp_path / "checkpoint"  # as kept in benchmarks/checkpoints: traces compressed
    checkpoint.mkdir()
    with open(first / "traces.jsonl", "rb") as src, gzip.open(checkpoint / "traces.jsonl.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    shutil.copy(first / "results.jsonl", checkpoint / "results.jsonl")  # the questions its scoring calls scored
    out = tmp_path / "again"
    # The fake model has no answers: any call the recording does not hold fails the question.
    r = CliRunner().invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--model", "fake",
                                 "--pipeline", "best", "--vote-below", "1.0", "--replay", str(checkpoint), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "passed to the model: 0" in r.output
    again = {r.id: (r.prediction, r.match) for r in load_results(out)}
    assert again == recorded and any(m for _, m in again.values())
    assert json.loads((out / "run.json").read_text())["replay"] == [str(checkpoint)]
    # samples drawn another way: the traces kept each call's options, so those calls go to the model
    assert all("options" in c for line in _lines(first / "traces.jsonl") for s in line["trace"] for c in s["calls"])
    r = CliRunner().invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--model", "fake",
                                 "--pipeline", "best", "--vote-below", "1.0", "--replay", str(checkpoint), "--vote", "temperature=1.0",
                                 "--no-cache", "--out", str(tmp_path / "hot")])  # no cache: every call reaches the recording
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    answered = int(said.split("answered from the recorded traces: ")[1].split(";")[0])
    passed = int(said.split("passed to the model: ")[1].split()[0])
    assert answered > 0 and passed > 0  # greedy answers replayed, the hotter samples asked for
    # traces from before they kept options cannot tell the two apart: refused before anything runs
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    lines = [dict(line, trace=[dict(s, calls=[{k: v for k, v in c.items() if k != "options"} for c in s["calls"]])
                               for s in line["trace"]]) for line in _lines(first / "traces.jsonl")]
    (legacy / "traces.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    r = CliRunner().invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(root), "--model", "fake",
                                 "--pipeline", "best", "--vote-below", "1.0", "--replay", str(legacy), "--vote", "temperature=1.0",
                                 "--out", str(tmp_path / "hot2")])
    assert r.exit_code == 2 and "cannot be combined with --vote temperature" in " ".join(r.output.split())
    assert not (tmp_path / "hot2").exists()


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_call_is_answered_only_when_asked_for_as_recorded(tmp_path: Path) -> None:
    sampled = GenerationOptions(temperature=0.8, seed=1, n=2)
    call = {"messages": [{"role": "user", "content": "q"}], "outputs": ["SELECT 1", "SELECT 2"],
            "options": sampled.recorded()}
    (tmp_path / "traces.jsonl").write_text(json.dumps({"id": "dev-1", "trace": [{"calls": [call]}]}) + "\n")
    model = FakeLLM(["SELECT 3", "SELECT 4"])
    llm = RecordedLLM(model, [tmp_path])
    assert llm.unqualified == 0
    hotter = llm.complete([Message("user", "q")], sampled.model_copy(update={"temperature": 1.0}))
    assert hotter.texts == ("SELECT 3", "SELECT 4")  # drawn another way: the model's
    assert llm.complete([Message("user", "q")], sampled).texts == ("SELECT 1", "SELECT 2")
    assert (llm.answered, llm.passed) == (1, 1)


def test_a_cached_call_is_replayed_at_what_it_first_cost(tmp_path: Path) -> None:
    call = dict(_call("q", ["SELECT 1"]), seconds=0.01, cached=True, cost_seconds=9.0)  # a cache hit in that run
    _trace(tmp_path / "run", [call])
    assert RecordedLLM(FakeLLM(), [tmp_path / "run"]).complete([Message("user", "q")]).cost_seconds == 9.0


def test_cache_hits_recorded_without_their_first_cost_are_counted_and_named(tmp_path: Path) -> None:
    """A run that was itself answered from a cache, by traces from before they kept costs: its calls replay at the
    lookup's seconds, so the replay says its time figures count them as free."""
    lost = dict(_call("q", ["SELECT 1"]), seconds=0.0003, cached=True)  # no cost_seconds
    kept = dict(_call("r", ["SELECT 2"]), seconds=0.0003, cached=True, cost_seconds=4.0)
    live = dict(_call("s", ["SELECT 3"]), seconds=2.0)  # asked of the model then: its own time is its cost
    _trace(tmp_path / "run", [lost, kept, live])
    llm = RecordedLLM(FakeLLM(), [tmp_path / "run"])
    assert llm.costless == 1 and llm.complete([Message("user", "q")]).cost_seconds == 0.0003
    r = CliRunner().invoke(app, ["eval", "--dataset", "spider-dev", "--data-dir", str(_tiny_dataset(tmp_path)),
                                 "--model", "fake", "--pipeline", "zero-shot", "--limit", "1",
                                 "--replay", str(tmp_path / "run"), "--out", str(tmp_path / "out")])
    assert "1 of them were answered from the recorded run's cache and kept no first cost" in " ".join(r.output.split())


def test_traces_keep_each_calls_options_and_first_cost(tmp_path: Path) -> None:
    ds = load_spider(_tiny_dataset(tmp_path), "dev")
    run_eval(ds, ds.examples[:1], build_pipeline("best", vote_below=1.0), FakeLLM(responder=_answer), tmp_path / "r")
    calls = [c for s in _lines(tmp_path / "r" / "traces.jsonl")[0]["trace"] for c in s["calls"]]
    assert [c["options"] for c in calls][:2] == [{"max_tokens": 384},
                                                 {"temperature": 0.8, "max_tokens": 200, "n": 4, "seed": 1}]
    assert all(c["cost_seconds"] >= c["seconds"] - 1e-4 for c in calls)


def test_a_call_the_backend_answers_another_way_than_recorded_goes_to_the_backend(tmp_path: Path) -> None:
    """Samples the embedded model decodes together are not the samples a recording drew one after another: such a
    call is not answered from the recording, while the same backend's greedy calls still are."""

    class Together(FakeLLM):
        def cache_key_params_for(self, options: GenerationOptions) -> dict:
            base = self.cache_key_params()
            return {**base, "samples": "parallel"} if options.n > 1 and options.temperature > 0 else base

    sampled = {"temperature": 0.8, "n": 2, "seed": 1}
    calls = [{"messages": [{"role": "user", "content": "q"}], "outputs": ["SELECT 1"]},
             {"messages": [{"role": "user", "content": "q"}], "outputs": ["SELECT 2", "SELECT 3"], "options": sampled}]
    (tmp_path / "traces.jsonl").write_text(json.dumps({"id": "dev-1", "trace": [{"calls": calls}]}) + "\n")
    model = Together(responder=lambda m, o: "SELECT 9")
    llm = RecordedLLM(model, [tmp_path])
    assert llm.complete([Message("user", "q")]).text == "SELECT 1"
    assert llm.complete([Message("user", "q")], GenerationOptions(**sampled)).texts == ("SELECT 9", "SELECT 9")
    assert (llm.answered, llm.passed) == (1, 1)
