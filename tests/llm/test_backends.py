import json
from pathlib import Path

import httpx
import pytest

from sqlweave.errors import (
    ConfigurationError,
    LLMResponseError,
    LLMTimeoutError,
    ModelIntegrityError,
    ModelUnavailableError,
)
from sqlweave.llm import CachedLLM, FakeLLM, GenerationOptions, Message, get_llm
from sqlweave.llm.openai_compat import OpenAICompatibleLLM

MSGS = [Message("system", "be brief"), Message("user", "How many singers?")]


# --- fake ------------------------------------------------------------------------------


def test_fake_queue_and_errors() -> None:
    llm = FakeLLM(["a", LLMTimeoutError("slow")])
    assert llm.complete(MSGS).text == "a"
    with pytest.raises(LLMTimeoutError):
        llm.complete(MSGS)
    with pytest.raises(LLMResponseError, match="no answers left"):
        llm.complete(MSGS)
    assert len(llm.calls) == 3


def test_fake_n_samples_and_meter() -> None:
    llm = FakeLLM(responder=lambda m, o: f"t={o.temperature}")
    c = llm.complete(MSGS, temperature=0.7, n=3)
    assert c.texts == ("t=0.7",) * 3
    assert llm.meter.calls == 1 and llm.meter.usage.completion_tokens == c.usage.completion_tokens > 0


def test_options_are_closed() -> None:
    with pytest.raises(Exception):
        GenerationOptions(temprature=0.1)  # type: ignore[call-arg]


def test_registry() -> None:
    assert get_llm("fake").model_id == "fake"
    with pytest.raises(ConfigurationError, match="unknown model backend"):
        get_llm("nope:1")
    with pytest.raises(ConfigurationError):
        get_llm("openai")


# --- cache -----------------------------------------------------------------------------


def test_cache_hits_and_keys(tmp_path: Path) -> None:
    inner = FakeLLM(responder=lambda m, o: f"answer {len(inner.calls)}")
    llm = CachedLLM(inner, tmp_path / "c.sqlite")
    a = llm.complete(MSGS)
    b = llm.complete(MSGS)
    assert (a.text, b.text, a.cached, b.cached) == ("answer 1", "answer 1", False, True)
    assert b.usage == a.usage
    c = llm.complete(MSGS, temperature=0.5)  # other options, other key
    assert c.text == "answer 2" and not c.cached
    # A new process (new wrapper, same file) still hits.
    again = CachedLLM(FakeLLM([]), tmp_path / "c.sqlite").complete(MSGS)
    assert again.cached and again.text == "answer 1"
    assert len(llm) == 2 and llm.hits == 1  # the hits of this wrapper alone


def test_a_cache_file_that_is_broken_full_or_locked_costs_the_cache_never_the_answer(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import sqlite3

    path = tmp_path / "c.sqlite"
    path.write_bytes(b"\x00garbage: a cache file cut short or overwritten\x00" * 50)
    llm = CachedLLM(FakeLLM(["answer", "again"]), path)  # was: "file is not a database" from every command
    assert llm.complete(MSGS).text == "answer" and llm.complete(MSGS).cached  # a new file, which works
    assert (tmp_path / "c.sqlite.broken").read_bytes().startswith(b"\x00garbage")  # kept aside, not deleted
    assert "kept as" in caplog.text
    caplog.clear()
    locker = sqlite3.connect(path)
    locker.execute("BEGIN EXCLUSIVE")  # another process holds the file (or the disk is full): no read, no write
    inner = FakeLLM(["fresh 1", "fresh 2", "fresh 3"])
    busy = CachedLLM(inner, path)
    busy.file.timeout_s = 0.05
    other = [Message("user", "How many concerts?")]
    assert [busy.complete(other).text for _ in range(3)] == ["fresh 1", "fresh 2", "fresh 3"]  # misses, answered
    assert caplog.text.count("could not be read") == 1 and caplog.text.count("could not be written") == 1
    locker.rollback()
    locker.close()
    assert CachedLLM(FakeLLM([]), path).complete(MSGS).text == "answer"  # the file itself was never harmed


def test_cached_answer_keeps_what_it_first_cost(tmp_path: Path) -> None:
    import time

    def slow(m, o):
        time.sleep(0.05)
        return "answer"

    llm = CachedLLM(FakeLLM(responder=slow), tmp_path / "c.sqlite")
    first, again = llm.complete(MSGS), llm.complete(MSGS)
    assert first.cost_seconds == first.seconds >= 0.05
    assert again.cached and again.seconds < 0.05
    assert again.cost_seconds == pytest.approx(first.seconds)


def test_cache_does_not_store_failures(tmp_path: Path) -> None:
    inner = FakeLLM([LLMTimeoutError("slow"), "ok"])
    llm = CachedLLM(inner, tmp_path / "c.sqlite")
    with pytest.raises(LLMTimeoutError):
        llm.complete(MSGS)
    assert llm.complete(MSGS).text == "ok"


def test_cache_key_includes_backend_identity(tmp_path: Path) -> None:
    a = CachedLLM(FakeLLM(["x"]), tmp_path / "c.sqlite")
    b_inner = FakeLLM(["y"])
    b_inner.model_id = "other"
    b = CachedLLM(b_inner, tmp_path / "c.sqlite")
    assert a.complete(MSGS).text == "x"
    assert b.complete(MSGS).text == "y"


# --- OpenAI-compatible -------------------------------------------------------------------


def _server(responses: list[httpx.Response | Exception]) -> tuple[httpx.MockTransport, list[dict]]:
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        item = responses.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    return httpx.MockTransport(handler), seen


def _ok(text: str = "SELECT 1", n: int = 1) -> httpx.Response:
    return httpx.Response(200, json={
        "choices": [{"message": {"role": "assistant", "content": text}}] * n,
        "usage": {"prompt_tokens": 12, "completion_tokens": 3},
    })


def test_openai_happy_path_sends_options() -> None:
    transport, seen = _server([_ok(n=2)])
    llm = OpenAICompatibleLLM("m", base_url="http://x/v1", transport=transport)
    c = llm.complete(MSGS, temperature=0.3, n=2, stop=("\n\n",), seed=7, json_schema={"type": "object"})
    assert c.texts == ("SELECT 1", "SELECT 1") and c.usage.prompt_tokens == 12
    body = seen[0]
    assert body["model"] == "m" and body["n"] == 2 and body["stop"] == ["\n\n"] and body["seed"] == 7
    assert body["response_format"]["type"] == "json_schema"
    assert body["messages"][1] == {"role": "user", "content": "How many singers?"}


def test_openai_retries_then_succeeds() -> None:
    transport, seen = _server([httpx.Response(503, text="busy"), httpx.ConnectError("down"), _ok()])
    llm = OpenAICompatibleLLM("m", base_url="http://x/v1", transport=transport, backoff_s=0)
    assert llm.complete(MSGS).text == "SELECT 1"
    assert len(seen) == 3


def test_openai_gives_up_with_typed_errors() -> None:
    transport, _ = _server([httpx.ReadTimeout("slow")] * 3)
    llm = OpenAICompatibleLLM("m", base_url="http://x/v1", transport=transport, backoff_s=0, max_retries=2)
    with pytest.raises(LLMTimeoutError):
        llm.complete(MSGS)
    transport, _ = _server([httpx.ConnectError("refused")] * 2)
    llm = OpenAICompatibleLLM("m", base_url="http://x/v1", transport=transport, backoff_s=0, max_retries=1)
    with pytest.raises(ModelUnavailableError, match="cannot reach"):
        llm.complete(MSGS)


def test_openai_bad_key_and_garbage() -> None:
    transport, _ = _server([httpx.Response(401, text="no")])
    with pytest.raises(ModelUnavailableError, match="credentials") as info:
        OpenAICompatibleLLM("m", base_url="http://x/v1", transport=transport).complete(MSGS)
    assert "OPENAI_API_KEY" in info.value.hint
    transport, _ = _server([httpx.Response(200, text="<html>oops</html>")])
    with pytest.raises(LLMResponseError, match="unexpected response"):
        OpenAICompatibleLLM("m", base_url="http://x/v1", transport=transport).complete(MSGS)
    transport, _ = _server([httpx.Response(400, text="bad request")])
    with pytest.raises(LLMResponseError, match="400"):
        OpenAICompatibleLLM("m", base_url="http://x/v1", transport=transport).complete(MSGS)


# --- weights -------------------------------------------------------------------------------


def _fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, contents: list[bytes], sha: str):
    import hashlib
    import sys
    import types

    from sqlweave.llm import weights

    monkeypatch.setenv("SQLWEAVE_MODEL_DIR", str(tmp_path / "models"))
    for i, data in enumerate(contents, 1):
        p = tmp_path / f"part{i}.bin"
        p.write_bytes(data)
        mod = types.ModuleType(f"fakeparts_{i}")
        mod.get_part_path = (lambda p=p: str(p))  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, f"fakeparts_{i}", mod)
    spec = weights.WeightSpec("t", "Tiny", "tiny.gguf", "fakeparts_", len(contents), sha or hashlib.sha256(b"".join(contents)).hexdigest())
    monkeypatch.setitem(weights.MODELS, "t", spec)
    return weights, spec


def test_weights_are_assembled_and_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights, spec = _fake_parts(tmp_path, monkeypatch, [b"abc", b"def"], "")
    seen = []
    path = weights.ensure_weights("t", progress=lambda d, t: seen.append((d, t)))
    assert path.read_bytes() == b"abcdef" and weights.is_assembled(spec)
    assert seen[-1] == (6, 6)
    assert weights.ensure_weights("t") == path  # second call: no work


def test_weights_checksum_mismatch_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights, spec = _fake_parts(tmp_path, monkeypatch, [b"abc", b"def"], "0" * 64)
    with pytest.raises(ModelIntegrityError, match="sha256"):
        weights.ensure_weights("t")
    assert not weights.assembled_path(spec).exists()


def test_missing_weight_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlweave.llm import weights

    spec = weights.WeightSpec("m", "Missing", "m.gguf", "no_such_module_part", 2, "0" * 64)
    monkeypatch.setitem(weights.MODELS, "m", spec)
    with pytest.raises(ModelUnavailableError, match="not installed") as info:
        weights.ensure_weights("m")
    assert "sqlweave[local]" in info.value.hint
    with pytest.raises(ModelUnavailableError, match="unknown embedded model"):
        weights.ensure_weights("9b")


def test_the_cache_key_without_a_grammar_is_the_key_from_before_grammars(tmp_path: Path) -> None:
    """Answers cached before the grammar option existed stay cached; a grammar makes its own entry."""
    import hashlib

    llm = CachedLLM(FakeLLM(["SELECT 1"]), tmp_path / "c.sqlite")
    opts = GenerationOptions(max_tokens=20)
    old_payload = {"backend": {"model": "fake"}, "messages": [m.as_dict() for m in MSGS],
                   "options": {"temperature": 0.0, "max_tokens": 20, "stop": (), "n": 1, "seed": None,
                               "json_schema": None}}
    old_key = hashlib.sha256(json.dumps(old_payload, sort_keys=True, default=str).encode()).hexdigest()
    assert llm.key(tuple(MSGS), opts) == old_key
    assert llm.key(tuple(MSGS), opts.model_copy(update={"grammar": 'root ::= "x"'})) != old_key
    assert llm.key(tuple(MSGS), opts.model_copy(update={"choices": ("A", "B")})) != old_key
    assert llm.key(tuple(MSGS), opts.model_copy(update={"continuation": "How many?"})) != old_key
    assert llm.supports_grammar is True and llm.supports_choices is True


def test_choice_scores_are_cached_and_refused_by_backends_that_cannot(tmp_path: Path) -> None:
    inner = FakeLLM(["0.25 0.75"])
    llm = CachedLLM(inner, tmp_path / "c.sqlite")
    first, again = (llm.complete(MSGS, choices=("A", "B")) for _ in range(2))
    assert first.texts == again.texts == ("0.25", "0.75") and again.cached and len(inner.calls) == 1

    class Writer(FakeLLM):
        supports_choices = False

    with pytest.raises(ConfigurationError, match="cannot score choices"):
        Writer(["x"]).complete(MSGS, choices=("A", "B"))
    with pytest.raises(ConfigurationError, match="cannot score"):
        Writer(["x"]).complete(MSGS, continuation="How many?")
    with pytest.raises(ValueError):
        GenerationOptions(choices=("A",))  # one choice is no choice


def test_samples_the_embedded_model_decodes_together_are_cached_apart_from_samples_drawn_one_by_one(
        tmp_path: Path) -> None:
    from sqlweave.llm.local import LocalLLM

    llm = LocalLLM("1.5b")  # not loaded: the key is known before any call
    sampled = GenerationOptions(n=4, temperature=0.8, seed=1)
    assert llm.cache_key_params_for(sampled)["samples"] == "parallel"
    for options in (GenerationOptions(), GenerationOptions(temperature=0.8), GenerationOptions(n=4),
                    GenerationOptions(n=4, temperature=0.8, grammar='root ::= "a"')):
        assert llm.cache_key_params_for(options) == llm.cache_key_params()
    assert LocalLLM("1.5b", parallel_samples=False).cache_key_params_for(sampled) == llm.cache_key_params()
    cached = CachedLLM(llm, tmp_path / "responses.sqlite")
    apart = CachedLLM(LocalLLM("1.5b", parallel_samples=False), tmp_path / "responses.sqlite")
    assert cached.key(tuple(MSGS), sampled) != apart.key(tuple(MSGS), sampled)
    assert cached.key(tuple(MSGS), GenerationOptions()) == apart.key(tuple(MSGS), GenerationOptions())
