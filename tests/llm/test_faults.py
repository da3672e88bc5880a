"""Faults in the model backend, injected over real sockets.

A small HTTP server of the tests' own (``http.server`` in a thread, on 127.0.0.1 and a free port) plays an
OpenAI-compatible endpoint that fails in scripted ways: 5xx, 429 with ``Retry-After``, hangs, trickles, closes the
connection, cuts a chunked answer halfway, answers invalid JSON, no choices or a choice with no text, refuses the
key or the request. The embedded model is a stand-in object that raises or stalls mid-generation (no weights are
loaded). For each fault: the call ends within its timeout with a typed error whose hint says what to do, it is
retried exactly when retrying can help (the server counts its hits), a pipeline run records it in the answer and
its trace instead of crashing, and the response cache never keeps it as an answer.
"""

from __future__ import annotations

import email.utils
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from sqlweave.database import Database
from sqlweave.errors import LLMError, LLMResponseError, LLMTimeoutError, ModelUnavailableError
from sqlweave.llm import CachedLLM, FakeLLM, Message, get_llm
from sqlweave.llm import local as local_module
from sqlweave.llm.base import LLM, Completion, GenerationOptions
from sqlweave.llm.openai_compat import OpenAICompatibleLLM, parse_retry_after
from sqlweave.presets import build_pipeline

MSGS = [Message("system", "Answer with SQL."), Message("user", "How many singers are there?")]
SQL_ANSWER = "```sql\nSELECT count(*) FROM singer\n```"
#: Generous slack on wall-time bounds (two shared cores, thread start-up).
SLACK_S = 2.0

# --- the fault server ------------------------------------------------------------------------------

Behaviour = Callable[["_Handler"], None]


def _json_body(handler: "_Handler", status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(data)


def _completion(text: str | None = "SELECT 1", finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "cmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 4},
    }


def ok(text: str = "SELECT 1") -> Behaviour:
    return lambda h: _json_body(h, 200, _completion(text))


def status(code: int, body: str = "", headers: dict[str, str] | None = None) -> Behaviour:
    return lambda h: _json_body(h, code, (body or json.dumps({"error": {"message": f"status {code}"}})).encode(),
                                headers)


def json_answer(payload: Any) -> Behaviour:
    return lambda h: _json_body(h, 200, payload)


def raw_answer(data: bytes) -> Behaviour:
    return lambda h: _json_body(h, 200, data)


def hang(h: "_Handler") -> None:
    """Read the request, then answer nothing until the server stops."""
    h.server.stopping.wait(30)  # type: ignore[attr-defined]
    h.close_connection = True


def trickle(h: "_Handler") -> None:
    """Send the headers at once, then one byte of the body every 0.1 s (each read is quick; the whole never ends)."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "100000")
    h.end_headers()
    try:
        while not h.server.stopping.wait(0.1):  # type: ignore[attr-defined]
            h.wfile.write(b" ")
            h.wfile.flush()
    except OSError:
        pass
    h.close_connection = True


def close_without_answer(h: "_Handler") -> None:
    h.close_connection = True
    h.connection.shutdown(socket.SHUT_RDWR)


def close_mid_response(h: "_Handler") -> None:
    """Promise a whole body (Content-Length), send half of it, close the connection."""
    data = json.dumps(_completion()).encode()
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data[: len(data) // 2])
    h.wfile.flush()
    h.close_connection = True


def chunked_cut(h: "_Handler") -> None:
    """Stream the answer in chunks, stop halfway, close the connection without the final chunk."""
    data = json.dumps(_completion()).encode()
    half = data[: len(data) // 2]
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    h.wfile.write(b"%x\r\n%s\r\n" % (len(half), half))
    h.wfile.flush()
    h.close_connection = True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        server: FaultServer = self.server.owner  # type: ignore[attr-defined]
        behaviour = server._next(self.path, body, dict(self.headers))
        behaviour(self)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass


class FaultServer:
    """Plays a scripted sequence of behaviours, then repeats the last one; counts every request it receives."""

    def __init__(self) -> None:
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._http.daemon_threads = True
        self._http.owner = self  # type: ignore[attr-defined]
        self._http.stopping = threading.Event()  # type: ignore[attr-defined]
        self._lock = threading.Lock()
        self._script: list[Behaviour] = [ok()]
        self.requests: list[dict[str, Any]] = []
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def script(self, *behaviours: Behaviour) -> "FaultServer":
        with self._lock:
            self._script = list(behaviours)
        return self

    @property
    def hits(self) -> int:
        with self._lock:
            return len(self.requests)

    def _next(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Behaviour:
        with self._lock:
            self.requests.append({"path": path, "body": body, "headers": headers, "at": time.perf_counter()})
            return self._script.pop(0) if len(self._script) > 1 else self._script[0]

    def close(self) -> None:
        self._http.stopping.set()  # type: ignore[attr-defined]
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)


@pytest.fixture
def server() -> Iterator[FaultServer]:
    s = FaultServer()
    try:
        yield s
    finally:
        s.close()


def _llm(server: FaultServer, *, timeout_s: float = 1.0, max_retries: int = 3, backoff_s: float = 0.05,
         **kw: Any) -> OpenAICompatibleLLM:
    llm = get_llm("openai:test-model", base_url=server.url, timeout_s=timeout_s, max_retries=max_retries,
                  backoff_s=backoff_s, **kw)
    assert isinstance(llm, OpenAICompatibleLLM)
    return llm


def _fails(llm: LLM, expected: type[LLMError], bound_s: float, **options: Any) -> tuple[LLMError, float]:
    """Call ``llm``; it must raise ``expected`` within ``bound_s`` (its timeout, plus slack). Returns the error and the seconds."""
    start = time.perf_counter()
    with pytest.raises(expected) as info:
        llm.complete(MSGS, **options)
    seconds = time.perf_counter() - start
    assert seconds < bound_s + SLACK_S, f"the call took {seconds:.2f} s, its timeout is {bound_s} s"
    err = info.value
    assert err.hint.strip(), f"{type(err).__name__} has no hint for the user: {err}"
    assert "Traceback" not in str(err)
    return err, seconds


# --- 5xx ------------------------------------------------------------------------------------------------


def test_server_errors_then_success_are_retried(server: FaultServer) -> None:
    server.script(status(500), status(502), status(503), ok("SELECT 42"))
    llm = _llm(server, max_retries=3)
    start = time.perf_counter()
    c = llm.complete(MSGS)
    assert c.text == "SELECT 42" and c.usage.prompt_tokens == 11
    assert server.hits == 4
    assert time.perf_counter() - start < 1.0 + SLACK_S
    # Every try sent the same request to the chat-completions endpoint.
    assert {r["path"] for r in server.requests} == {"/v1/chat/completions"}
    assert all(r["body"] == server.requests[0]["body"] for r in server.requests)


def test_server_error_always_ends_typed_after_the_retry_budget(server: FaultServer) -> None:
    server.script(status(500, "internal error"))
    llm = _llm(server, max_retries=2)
    err, _ = _fails(llm, LLMResponseError, 1.0)
    assert server.hits == 3  # one try and two retries, no more
    assert "HTTP 500" in err.message and "internal error" in err.message and "3 tries" in err.message
    assert "retry" in err.hint.lower() and err.retryable


def test_backoff_waits_never_outlast_the_timeout(server: FaultServer) -> None:
    # Backoff of 0.4, 0.8, 1.6 s: only the tries that fit in 1 s are made, then the last error is reported.
    server.script(status(503))
    llm = _llm(server, max_retries=5, backoff_s=0.4, timeout_s=1.0)
    err, seconds = _fails(llm, LLMResponseError, 1.0)
    assert seconds < 1.0 + 0.5
    assert 2 <= server.hits <= 3 and "HTTP 503" in err.message


@pytest.mark.parametrize("code", [501, 505])
def test_server_errors_that_will_not_pass_are_not_retried(server: FaultServer, code: int) -> None:
    server.script(status(code))
    err, _ = _fails(_llm(server), LLMResponseError, 1.0)
    assert server.hits == 1 and f"HTTP {code}" in err.message and not err.retryable


# --- 429 and Retry-After ------------------------------------------------------------------------------------


def test_retry_after_is_honoured(server: FaultServer) -> None:
    server.script(status(429, headers={"Retry-After": "1"}), ok("SELECT 7"))
    llm = _llm(server, timeout_s=5.0, backoff_s=0.01)
    start = time.perf_counter()
    assert llm.complete(MSGS).text == "SELECT 7"
    assert server.hits == 2
    gap = server.requests[1]["at"] - server.requests[0]["at"]
    assert 0.9 <= gap < 1.0 + SLACK_S, f"waited {gap:.2f} s instead of the 1 s the server asked for"
    assert time.perf_counter() - start < 5.0


def test_retry_after_ms_is_honoured(server: FaultServer) -> None:
    server.script(status(429, headers={"retry-after-ms": "300", "Retry-After": "1"}), ok())
    llm = _llm(server, backoff_s=0.0, timeout_s=3.0)
    assert llm.complete(MSGS).text == "SELECT 1" and server.hits == 2
    gap = server.requests[1]["at"] - server.requests[0]["at"]
    assert 0.25 <= gap < 0.9


@pytest.mark.parametrize("retry_after", [
    "3600",
    "86400.5",
    email.utils.formatdate(time.time() + 3600, usegmt=True),
])
def test_huge_retry_after_does_not_outlast_the_timeout(server: FaultServer, retry_after: str) -> None:
    server.script(status(429, headers={"Retry-After": retry_after}), ok())
    llm = _llm(server, timeout_s=1.0, max_retries=3)
    err, seconds = _fails(llm, LLMResponseError, 1.0)
    assert seconds < 1.0, "a wait the call cannot afford is not started at all"
    assert server.hits == 1
    assert "HTTP 429" in err.message and "asked to wait" in err.message
    assert "wait" in err.hint.lower() and "timeout" in err.hint.lower()


def test_rate_limit_always_ends_after_the_retry_budget(server: FaultServer) -> None:
    server.script(status(429, headers={"Retry-After": "0"}))
    err, _ = _fails(_llm(server, max_retries=2), LLMResponseError, 1.0)
    assert server.hits == 3 and "HTTP 429" in err.message and err.details["retry_after"] == 0.0


@pytest.mark.parametrize("value", ["soon", "-5", "nan", "inf", ""])
def test_unusable_retry_after_falls_back_to_backoff(server: FaultServer, value: str) -> None:
    assert parse_retry_after({"Retry-After": value}) is None
    server.script(status(503, headers={"Retry-After": value}), ok())
    assert _llm(server, backoff_s=0.05).complete(MSGS).text == "SELECT 1" and server.hits == 2


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": " 12 "}) == 12.0
    assert parse_retry_after({"RETRY-AFTER-MS": "1500"}) == 1.5
    now = time.time()
    assert parse_retry_after({"Retry-After": email.utils.formatdate(now + 30, usegmt=True)}, now=now) == \
        pytest.approx(30, abs=1)
    assert parse_retry_after({"Retry-After": email.utils.formatdate(now - 30, usegmt=True)}, now=now) == 0.0
    assert parse_retry_after({}) is None


# --- hangs ------------------------------------------------------------------------------------------------------


def test_hanging_server_ends_within_the_timeout(server: FaultServer) -> None:
    server.script(hang)
    llm = _llm(server, timeout_s=0.5, max_retries=3)
    err, seconds = _fails(llm, LLMTimeoutError, 0.5)
    assert seconds >= 0.45
    assert server.hits == 1, "a timeout spends the whole budget: no retry may start after it"
    assert "0.5 s" in err.message and "timeout" in err.hint.lower()


def test_call_timeout_option_bounds_the_call(server: FaultServer) -> None:
    server.script(hang)
    llm = _llm(server, timeout_s=60.0)
    _, seconds = _fails(llm, LLMTimeoutError, 0.5, timeout_s=0.5)
    assert seconds < 0.5 + SLACK_S


def test_trickling_answer_ends_within_the_timeout(server: FaultServer) -> None:
    # Each read returns within the per-read limit; only a deadline on the whole call stops this.
    server.script(trickle)
    err, seconds = _fails(_llm(server, timeout_s=0.6), LLMTimeoutError, 0.6)
    assert seconds < 0.6 + 1.0 and server.hits == 1


def test_unreachable_server_is_a_typed_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = get_llm("openai:m", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=1.0, max_retries=2, backoff_s=0.01)
    err, _ = _fails(llm, ModelUnavailableError, 1.0)
    assert "cannot reach" in err.message and "running" in err.hint


# --- broken connections and bodies --------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", [close_mid_response, chunked_cut, close_without_answer],
                         ids=["content-length-cut", "chunked-cut", "no-answer"])
def test_dropped_connection_is_retried_then_succeeds(server: FaultServer, fault: Behaviour) -> None:
    server.script(fault, ok("SELECT 3"))
    assert _llm(server).complete(MSGS).text == "SELECT 3"
    assert server.hits == 2


@pytest.mark.parametrize("fault", [close_mid_response, chunked_cut, close_without_answer],
                         ids=["content-length-cut", "chunked-cut", "no-answer"])
def test_dropped_connection_always_ends_typed(server: FaultServer, fault: Behaviour) -> None:
    server.script(fault)
    err, _ = _fails(_llm(server, max_retries=2), LLMResponseError, 1.0)
    assert server.hits == 3
    assert "closed the connection" in err.message and "log" in err.hint


@pytest.mark.parametrize("fault, words, hint_words", [
    (raw_answer(b'{"choices": [{"message": {"content": "SELECT'), "not JSON", "/v1"),
    (raw_answer(b"<html>Bad gateway</html>"), "not JSON", "/v1"),
    (json_answer(["not", "an", "object"]), "no choices list", "/v1"),
    (json_answer({"object": "chat.completion"}), "no choices list", "/v1"),
    (json_answer({"choices": "SELECT 1"}), "no choices list", "/v1"),
    (json_answer({"error": {"message": "model overloaded"}}), "model overloaded", "model name"),
], ids=["cut-json", "html", "json-list", "no-choices-key", "choices-not-list", "error-object"])
def test_unusable_answers_are_typed_and_not_retried(server: FaultServer, fault: Behaviour, words: str,
                                                    hint_words: str) -> None:
    server.script(fault, ok())
    err, _ = _fails(_llm(server), LLMResponseError, 1.0)
    assert server.hits == 1, "a complete but unusable answer would come back the same: not retried"
    assert words in err.message and hint_words in err.hint and not err.retryable


def test_empty_choice_list(server: FaultServer) -> None:
    server.script(json_answer({"choices": [], "usage": {"prompt_tokens": 3}}))
    err, _ = _fails(_llm(server), LLMResponseError, 1.0)
    assert "no choices" in err.message and server.hits == 1 and err.details["raw"]


@pytest.mark.parametrize("choice, reason_hint", [
    ({"message": {"role": "assistant", "content": None}, "finish_reason": "length"}, "max_tokens"),
    ({"message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}, "Retry"),
    ({"message": {"role": "assistant"}, "finish_reason": "content_filter"}, "Retry"),
    ({"message": {"role": "assistant", "content": 17}}, "Retry"),
    ({"finish_reason": "stop"}, "Retry"),
    ("SELECT 1", "Retry"),
], ids=["null-length", "empty-string", "missing", "not-text", "no-message", "choice-not-object"])
def test_choice_without_content(server: FaultServer, choice: Any, reason_hint: str) -> None:
    server.script(json_answer({"choices": [choice], "usage": {"prompt_tokens": "many"}}))
    err, _ = _fails(_llm(server), LLMResponseError, 1.0)
    assert "no text" in err.message and reason_hint in err.hint and server.hits == 1


def test_content_as_text_parts_is_read(server: FaultServer) -> None:
    server.script(json_answer({"choices": [{"message": {"content": [{"type": "text", "text": "SELECT "},
                                                                     {"type": "text", "text": "2"}]}}],
                               "usage": None}))
    c = _llm(server).complete(MSGS)
    assert c.text == "SELECT 2" and c.usage.total_tokens == 0


# --- refused requests ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [401, 403])
def test_refused_key_is_not_retried(server: FaultServer, code: int) -> None:
    server.script(status(code, '{"error": {"message": "Incorrect API key provided"}}'), ok())
    err, _ = _fails(_llm(server, api_key="sk-wrong"), ModelUnavailableError, 1.0)
    assert server.hits == 1
    assert f"HTTP {code}" in err.message and "credentials" in err.message
    assert "OPENAI_API_KEY" in err.hint and "--api-key" in err.hint and not err.retryable
    assert "sk-wrong" not in str(err)
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-wrong"


@pytest.mark.parametrize("code", [400, 413, 422])
def test_rejected_request_is_not_retried(server: FaultServer, code: int) -> None:
    server.script(status(code, '{"error": {"message": "max_tokens is too large"}}'), ok())
    err, _ = _fails(_llm(server), LLMResponseError, 1.0)
    assert server.hits == 1 and f"HTTP {code}" in err.message and "max_tokens is too large" in err.message
    assert "model name" in err.hint and not err.retryable


def test_unknown_model_or_path_is_not_retried(server: FaultServer) -> None:
    server.script(status(404, '{"error": {"message": "model not found"}}'), ok())
    err, _ = _fails(_llm(server), ModelUnavailableError, 1.0)
    assert server.hits == 1 and "HTTP 404" in err.message and "/v1" in err.hint


# --- the embedded model ------------------------------------------------------------------------------------------------


class _StandInLlama:
    """Enough of ``llama_cpp.Llama`` for :class:`LocalLLM`: generates token by token through the logits processor,
    and fails, stalls or answers nonsense as told. No weights are involved."""

    EOS = 2

    def __init__(self, *, fail_at: int | None = None, error: BaseException | None = None, step_s: float = 0.0,
                 tokens: int = 5, output: Any = None) -> None:
        self.fail_at, self.error, self.step_s, self.tokens, self.output = fail_at, error, step_s, tokens, output
        self.generated = 0
        self.calls = 0

    def tokenize(self, data: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        return list(range(max(1, len(data.split()))))

    def token_eos(self) -> int:
        return self.EOS

    def create_chat_completion(self, *, seed: int, messages: list[dict[str, str]], logits_processor: Any = None,
                               **kwargs: Any) -> Any:
        import numpy as np

        self.calls += 1
        for i in range(self.tokens):
            if self.fail_at is not None and i == self.fail_at:
                raise self.error or RuntimeError("llama_decode returned -3")
            scores = np.zeros(8, dtype=np.float32)
            scores[5] = 1.0
            if logits_processor is not None:
                scores = logits_processor(np.arange(i + 1), scores)
            if int(np.argmax(scores)) == self.EOS:
                break
            self.generated += 1
            time.sleep(self.step_s)
        if self.output is not None:
            return self.output
        return {"choices": [{"message": {"role": "assistant", "content": SQL_ANSWER}}],
                "usage": {"prompt_tokens": 9, "completion_tokens": self.generated}}


def _local(monkeypatch: pytest.MonkeyPatch, llama: _StandInLlama) -> LLM:
    loads: list[tuple[Any, ...]] = []

    def fake_load(*args: Any, **kwargs: Any) -> _StandInLlama:
        loads.append(args)
        return llama

    monkeypatch.setattr(local_module, "load_llama", fake_load)
    llm = get_llm("local:0.5b", n_threads=1)
    assert isinstance(llm, local_module.LocalLLM)
    return llm


@pytest.mark.extra("local")  # llama-cpp-python's logits processors are used
def test_local_stand_in_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    llama = _StandInLlama(tokens=3)
    c = _local(monkeypatch, llama).complete(MSGS, timeout_s=1.0)
    assert c.text == SQL_ANSWER and c.usage.completion_tokens == 3 and llama.calls == 1


@pytest.mark.extra("local")
@pytest.mark.parametrize("error", [RuntimeError("llama_decode returned -3"), ValueError("bad state"),
                                   OSError("cannot allocate"), KeyError("logits"), IndexError("list index")],
                         ids=lambda e: type(e).__name__)
def test_local_model_raising_mid_generation(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    llama = _StandInLlama(fail_at=3, error=error, tokens=10)
    llm = _local(monkeypatch, llama)
    err, _ = _fails(llm, LLMResponseError, 1.0, timeout_s=1.0)
    assert llama.generated == 3, "the failure came mid-generation"
    assert type(error).__name__ in err.message and "embedded model" in err.message
    assert "sqlweave[local]" in err.hint
    assert llm.meter.calls == 0, "a failed call is not metered as an answer"


@pytest.mark.extra("local")  # llama-cpp-python's logits processors are used
def test_local_model_stalling_ends_within_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    llama = _StandInLlama(tokens=1000, step_s=0.05)  # 50 s if nothing stopped it
    err, seconds = _fails(_local(monkeypatch, llama), LLMTimeoutError, 0.5, timeout_s=0.5)
    assert seconds >= 0.45 and llama.generated < 30
    assert "0.5 s" in err.message and "timeout" in err.hint


@pytest.mark.parametrize("output", [{}, {"choices": []}, {"choices": [{"text": "x"}]}, None],
                         ids=["empty", "no-choices", "no-message", "none"])
def test_local_model_malformed_output(monkeypatch: pytest.MonkeyPatch, output: Any) -> None:
    llama = _StandInLlama(output=output if output is not None else ["not", "a", "dict"])
    err, _ = _fails(_local(monkeypatch, llama), LLMResponseError, 1.0)
    assert "no answer" in err.message and "sqlweave[local]" in err.hint


class _BrokenBackend(LLM):
    """A third-party backend with a bug: it raises an untyped exception."""

    model_id = "broken"

    def _complete(self, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        return {}["choices"]  # type: ignore[no-any-return]


def test_untyped_backend_failure_becomes_typed() -> None:
    err, _ = _fails(_BrokenBackend(), LLMResponseError, 1.0)
    assert "broken" in err.message and "KeyError" in err.message
    assert isinstance(err.__cause__, KeyError)


# --- the pipeline's answer and trace -----------------------------------------------------------------------------------------


PIPELINE_FAULTS: dict[str, tuple[Behaviour, type[LLMError], str]] = {
    "500": (status(500), LLMResponseError, "HTTP 500"),
    "429-huge-retry-after": (status(429, headers={"Retry-After": "3600"}), LLMResponseError, "HTTP 429"),
    "hang": (hang, LLMTimeoutError, "did not answer"),
    "chunked-cut": (chunked_cut, LLMResponseError, "closed the connection"),
    "invalid-json": (raw_answer(b"{oops"), LLMResponseError, "not JSON"),
    "empty-choices": (json_answer({"choices": []}), LLMResponseError, "no choices"),
    "no-content": (json_answer({"choices": [{"message": {"content": None}}]}), LLMResponseError, "no text"),
    "401": (status(401), ModelUnavailableError, "credentials"),
    "400": (status(400), LLMResponseError, "HTTP 400"),
}


def _check_failed_answer(answer: Any, expected: type[LLMError], words: str, stage: str = "generate") -> None:
    assert isinstance(answer.error, expected), answer.error
    assert words in answer.error.message
    assert answer.sql is None and answer.result is None and not answer.ok
    entry = next(e for e in answer.trace if e.stage == stage)
    assert entry.error is not None and entry.error.startswith(f"{expected.code}: ") and words in entry.error
    # Stages that need the model's SQL did not run after the failure.
    assert [e.stage for e in answer.trace][-1] == stage
    d = answer.as_dict()
    text = json.dumps(d)  # the whole answer serialises: no exception objects, no tracebacks
    assert "Traceback" not in text and d["error"]["code"] == expected.code and d["error"]["hint"]


@pytest.mark.parametrize("fault", list(PIPELINE_FAULTS))
def test_pipeline_records_backend_faults(server: FaultServer, singer_db: Path, fault: str) -> None:
    behaviour, expected, words = PIPELINE_FAULTS[fault]
    server.script(behaviour)
    llm = _llm(server, timeout_s=0.8, max_retries=2)
    db = Database.open(singer_db)
    try:
        start = time.perf_counter()
        answer = build_pipeline("zero-shot").run("How many singers are there?", db, llm)
        assert time.perf_counter() - start < 0.8 + SLACK_S
    finally:
        db.close()
    _check_failed_answer(answer, expected, words)


def test_pipeline_records_the_retries_that_saved_a_call(server: FaultServer, singer_db: Path) -> None:
    server.script(status(503), close_mid_response, ok(SQL_ANSWER))
    db = Database.open(singer_db)
    try:
        answer = build_pipeline("zero-shot").run("How many singers are there?", db, _llm(server))
    finally:
        db.close()
    assert answer.ok and answer.result.rows == ((6,),) and server.hits == 3
    gen = next(e for e in answer.trace if e.stage == "generate")
    assert gen.error is None and len(gen.calls) == 1 and gen.calls[0].outputs == (SQL_ANSWER,)


def test_pipeline_records_local_model_failure(monkeypatch: pytest.MonkeyPatch, singer_db: Path) -> None:
    llm = _local(monkeypatch, _StandInLlama(fail_at=2, tokens=10))
    db = Database.open(singer_db)
    try:
        answer = build_pipeline("zero-shot").run("How many singers are there?", db, llm)
    finally:
        db.close()
    _check_failed_answer(answer, LLMResponseError, "embedded model failed")


def test_default_pipeline_survives_a_dead_backend(server: FaultServer, singer_db: Path) -> None:
    server.script(status(500))
    db = Database.open(singer_db)
    try:
        answer = build_pipeline("default").run("How many singers are there?", db, _llm(server, max_retries=1))
    finally:
        db.close()
    assert isinstance(answer.error, LLMResponseError) and answer.sql is None
    failed = [e for e in answer.trace if e.error]
    assert failed and failed[0].error.startswith("llm_response: ") and "HTTP 500" in failed[0].error
    assert server.hits % 2 == 0 and server.hits >= 2  # every model call made both of its tries


# --- the response cache never keeps a failure -----------------------------------------------------------------------------------


CACHE_FAULTS: dict[str, tuple[Behaviour, type[LLMError]]] = {
    "500": (status(500), LLMResponseError),
    "429": (status(429, headers={"Retry-After": "3600"}), LLMResponseError),
    "hang": (hang, LLMTimeoutError),
    "content-length-cut": (close_mid_response, LLMResponseError),
    "chunked-cut": (chunked_cut, LLMResponseError),
    "invalid-json": (raw_answer(b"not json"), LLMResponseError),
    "empty-choices": (json_answer({"choices": []}), LLMResponseError),
    "no-content": (json_answer({"choices": [{"message": {"content": ""}}]}), LLMResponseError),
    "401": (status(401), ModelUnavailableError),
    "400": (status(400), LLMResponseError),
}


@pytest.mark.parametrize("fault", list(CACHE_FAULTS))
def test_failed_call_is_never_cached(server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     fault: str) -> None:
    behaviour, expected = CACHE_FAULTS[fault]
    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(tmp_path / "cache"))
    llm = get_llm("openai:test-model", base_url=server.url, cache=True, timeout_s=0.6, max_retries=1, backoff_s=0.01)
    assert isinstance(llm, CachedLLM) and llm.path.parent == tmp_path / "cache"
    server.script(behaviour)
    _fails(llm, expected, 0.6)
    failed_hits = server.hits
    assert failed_hits >= 1 and len(llm) == 0
    # The server recovers: the same call reaches it and gets the real answer, which is then cached.
    server.script(ok("SELECT 5"))
    again = llm.complete(MSGS)
    assert (again.text, again.cached) == ("SELECT 5", False) and server.hits == failed_hits + 1
    third = llm.complete(MSGS)
    assert (third.text, third.cached) == ("SELECT 5", True) and server.hits == failed_hits + 1
    assert len(llm) == 1


def test_failed_pipeline_run_is_not_replayed_from_the_cache(server: FaultServer, singer_db: Path,
                                                            tmp_path: Path) -> None:
    llm = get_llm("openai:test-model", base_url=server.url, cache=tmp_path / "responses.sqlite", timeout_s=0.6,
                  max_retries=0)
    db = Database.open(singer_db)
    try:
        server.script(json_answer({"choices": []}))
        first = build_pipeline("zero-shot").run("How many singers are there?", db, llm)
        assert isinstance(first.error, LLMResponseError) and server.hits == 1
        server.script(ok(SQL_ANSWER))
        second = build_pipeline("zero-shot").run("How many singers are there?", db, llm)
    finally:
        db.close()
    assert second.ok and second.result.rows == ((6,),) and server.hits == 2
    assert not next(e for e in second.trace if e.stage == "generate").calls[0].cached


def test_empty_answers_are_not_cached(tmp_path: Path) -> None:
    inner = FakeLLM(["", "   ", "SELECT 1"])
    llm = CachedLLM(inner, tmp_path / "c.sqlite")
    assert llm.complete(MSGS).text == "" and len(llm) == 0
    assert llm.complete(MSGS).text.strip() == "" and len(llm) == 0
    assert llm.complete(MSGS).text == "SELECT 1" and len(inner.calls) == 3 and len(llm) == 1
    assert llm.complete(MSGS).cached and len(inner.calls) == 3


def test_stored_empty_or_unreadable_entries_are_misses(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "c.sqlite"
    inner = FakeLLM(responder=lambda m, o: f"SELECT {len(inner.calls)}")
    llm = CachedLLM(inner, path)
    key = llm.key(tuple(MSGS), GenerationOptions())
    for stored in ("[]", '[""]', "{broken"):
        with sqlite3.connect(path) as conn:  # as an older version or a crash may have left it
            conn.execute("INSERT OR REPLACE INTO responses VALUES (?, 'fake', ?, 1, 1, 0.1, 0)", (key, stored))
        c = llm.complete(MSGS)
        assert not c.cached and c.text == f"SELECT {len(inner.calls)}", stored
        with sqlite3.connect(path) as conn:  # the real answer replaced the bad entry
            assert json.loads(conn.execute("SELECT texts FROM responses").fetchone()[0]) == [c.text]
    assert len(inner.calls) == 3 and llm.complete(MSGS).cached

