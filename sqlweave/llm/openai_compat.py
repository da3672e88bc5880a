"""Any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, a llama.cpp server.

>>> llm = OpenAICompatibleLLM("gpt-4o-mini", base_url="http://localhost:8000/v1")
>>> llm.model_id
'openai:gpt-4o-mini'

A call's ``timeout_s`` bounds the whole call, retries and the waits between them included: a server that
hangs, trickles its answer or asks for a long ``Retry-After`` ends the call with a typed error within the
timeout. Statuses that may pass (408, 409, 429, 5xx overload) and connections that drop are retried;
refused credentials (401, 403), requests the server rejects (other 4xx) and complete answers that are
unusable (not JSON, no choices, no text) are not.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import time
from datetime import timezone
from typing import Any

import httpx

from ..errors import LLMError, LLMResponseError, LLMTimeoutError, ModelUnavailableError
from .base import LLM, Completion, GenerationOptions, Message, Usage

#: Statuses worth another try: the server is busy, overloaded or restarting.
_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})

_TIMEOUT_HINT = "Retry later, raise the timeout (timeout_s=...), or check that the server is not overloaded."
_BUSY_HINT = "The server is failing or overloaded: check its log, retry later, or raise the timeout to allow more retries."
_RATE_HINT = "Wait a moment and retry, send fewer requests at once, or raise the timeout to allow a longer wait."
_KEY_HINT = "Set a valid key with --api-key or the OPENAI_API_KEY environment variable."
_REQUEST_HINT = ("The server rejected the request: check the model name and the options it supports "
                 "(max_tokens, n, seed, json_schema).")
_URL_HINT = "Check base_url (an OpenAI-compatible API usually ends in /v1) and the model name."
_DROP_HINT = "The server dropped the connection: check its log (it may have crashed or restarted) and retry."
_ANSWER_HINT = "Check that base_url points at an OpenAI-compatible chat-completions API (it usually ends in /v1)."
_EMPTY_HINT = "Retry, rephrase the question, or use another model."


def parse_retry_after(headers: httpx.Headers | dict[str, str], now: float | None = None) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, or ``Retry-After`` as seconds or an HTTP date.

    None when there is no usable header (absent, garbage, negative or not finite).

    >>> parse_retry_after({"retry-after": "2"}), parse_retry_after({"retry-after-ms": "250"})
    (2.0, 0.25)
    >>> parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0)
    10.0
    >>> parse_retry_after({"retry-after": "soon"}) is None, parse_retry_after({"retry-after": "-3"}) is None
    (True, True)
    """
    h = {k.lower(): v for k, v in headers.items()}
    ms = _number(h.get("retry-after-ms"))
    if ms is not None:
        return ms / 1000.0
    value = (h.get("retry-after") or "").strip()
    if not value:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _number(value: str | None) -> float | None:
    try:
        x = float(value) if value is not None else None
    except ValueError:
        return None
    return x if x is not None and math.isfinite(x) and x >= 0 else None


class _DeadlinePassed(Exception):
    """The answer was still arriving when the call's time was up."""


class OpenAICompatibleLLM(LLM):
    """Chat completions over HTTP with retries (exponential backoff, ``Retry-After``), a time limit and typed errors.

    ``api_key`` defaults to ``$OPENAI_API_KEY`` (servers that need none accept any value). ``timeout_s`` (or a
    call's ``timeout_s`` option) bounds each call as a whole; ``max_retries`` more tries are made while that
    time allows.
    """

    supports_json_schema = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.model_id = f"openai:{model}"
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._client = httpx.Client(timeout=timeout_s, transport=transport)

    def cache_key_params(self) -> dict[str, Any]:
        return {"model": self.model_id, "base_url": self.base_url}

    def _payload(self, messages: tuple[Message, ...], o: GenerationOptions) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.as_dict() for m in messages],
            "temperature": o.temperature,
            "max_tokens": o.max_tokens,
            "n": o.n,
        }
        if o.stop:
            body["stop"] = list(o.stop)
        if o.seed is not None:
            body["seed"] = o.seed
        if o.json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": o.json_schema},
            }
        return body

    def _post(self, body: dict[str, Any], deadline: float) -> tuple[int, httpx.Headers, bytes]:
        """One request; the body is read in chunks so an answer still trickling in at ``deadline`` is cut off."""
        headers = {"Authorization": f"Bearer {self.api_key}"}
        remaining = max(0.001, deadline - time.perf_counter())
        with self._client.stream("POST", f"{self.base_url}/chat/completions", json=body, headers=headers,
                                 timeout=remaining) as resp:
            chunks = []
            for chunk in resp.iter_bytes():
                chunks.append(chunk)
                if time.perf_counter() > deadline:
                    raise _DeadlinePassed
            return resp.status_code, resp.headers, b"".join(chunks)

    def _complete(self, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        timeout = options.timeout_s or self.timeout_s
        start = time.perf_counter()
        deadline = start + timeout
        body = self._payload(messages, options)
        last: LLMError | None = None
        wait = 0.0
        tries = 0
        for attempt in range(self.max_retries + 1):
            if attempt:
                if time.perf_counter() + wait >= deadline:
                    break  # no time left for the wait and another try: report what the last one got
                time.sleep(wait)
            tries += 1
            wait = self.backoff_s * 2**attempt
            try:
                status, headers, content = self._post(body, deadline)
            except (httpx.TimeoutException, _DeadlinePassed) as err:
                last = LLMTimeoutError(f"{self.base_url} did not answer within {timeout:g} s", hint=_TIMEOUT_HINT,
                                       tries=tries)
                last.__cause__ = err
                if time.perf_counter() >= deadline:
                    break
                continue
            except httpx.ConnectError as err:
                last = ModelUnavailableError(f"cannot reach {self.base_url}: {err}",
                                             hint="Check that the server is running and the URL is right.", tries=tries)
                continue
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as err:
                last = LLMResponseError(f"{self.base_url} closed the connection before the answer was complete: "
                                        f"{err or type(err).__name__}", hint=_DROP_HINT, tries=tries)
                last.__cause__ = err
                continue
            except (httpx.HTTPError, httpx.InvalidURL) as err:
                raise ModelUnavailableError(f"cannot call {self.base_url}: {err or type(err).__name__}",
                                            hint=_URL_HINT) from err
            text = content.decode("utf-8", errors="replace")
            if status in _RETRY_STATUS:
                asked = parse_retry_after(headers)
                if asked is not None:
                    wait = asked
                if status == 429:
                    last = LLMResponseError(f"{self.base_url} is limiting the request rate (HTTP 429): {text[:200]}",
                                            hint=_RATE_HINT, status=status, tries=tries, retry_after=asked)
                else:
                    last = LLMResponseError(f"{self.base_url} answered HTTP {status}: {text[:200]}", hint=_BUSY_HINT,
                                            status=status, tries=tries, retry_after=asked)
                if asked is not None and time.perf_counter() + asked >= deadline and attempt < self.max_retries:
                    last = LLMResponseError(
                        f"{last.message}; it asked to wait {asked:g} s, longer than the {timeout:g} s this call may take",
                        hint=last.hint, status=status, tries=tries, retry_after=asked)
                    break
                continue
            if status in (401, 403):
                raise _not_retryable(ModelUnavailableError(
                    f"{self.base_url} refused the credentials (HTTP {status}): {text[:200]}", hint=_KEY_HINT,
                    status=status))
            if status == 404:
                raise _not_retryable(ModelUnavailableError(
                    f"{self.base_url} has no model {self.model!r} or no chat-completions endpoint (HTTP 404): "
                    f"{text[:200]}", hint=_URL_HINT, status=status))
            if not 200 <= status < 300:
                raise _not_retryable(LLMResponseError(f"{self.base_url} answered HTTP {status}: {text[:300]}",
                                                      hint=_REQUEST_HINT if 400 <= status < 500 else _BUSY_HINT,
                                                      status=status))
            return self._parse(text, time.perf_counter() - start)
        assert last is not None
        if tries > 1:
            last.message = f"{last.message} (after {tries} tries)"
            last.args = (last.message,)
        raise last

    def _parse(self, text: str, seconds: float) -> Completion:
        try:
            data = json.loads(text)
        except ValueError as err:
            raise _not_retryable(LLMResponseError(f"unexpected response from {self.base_url} (not JSON): {text[:200]}",
                                                  hint=_ANSWER_HINT, raw=text)) from err
        if isinstance(data, dict) and "choices" not in data and isinstance(data.get("error"), (dict, str)):
            error = data["error"]
            detail = error.get("message") if isinstance(error, dict) else error
            raise _not_retryable(LLMResponseError(f"{self.base_url} answered with an error: {str(detail)[:300]}",
                                                  hint=_REQUEST_HINT, raw=text))
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list):
            raise _not_retryable(LLMResponseError(f"unexpected response from {self.base_url} (no choices list): "
                                                  f"{text[:200]}", hint=_ANSWER_HINT, raw=text))
        if not choices:
            raise LLMResponseError(f"{self.base_url} returned no choices", hint=_EMPTY_HINT, raw=text)
        texts = tuple(_choice_text(c) for c in choices)
        if not any(t.strip() for t in texts):
            reasons = sorted({str(c.get("finish_reason")) for c in choices if isinstance(c, dict)} - {"None"})
            why = f" (finish_reason: {', '.join(reasons)})" if reasons else ""
            hint = ("Raise max_tokens." if "length" in reasons else _EMPTY_HINT)
            raise LLMResponseError(f"{self.base_url} returned an answer with no text{why}", hint=hint, raw=text)
        u = data.get("usage")
        u = u if isinstance(u, dict) else {}
        usage = Usage(_count(u.get("prompt_tokens")), _count(u.get("completion_tokens")))
        return Completion(texts, usage, seconds, self.model_id)


def _choice_text(choice: Any) -> str:
    """The text of one choice: ``message.content`` as a string or a list of text parts ("" when there is none)."""
    message = choice.get("message") if isinstance(choice, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        content = "".join(p.get("text") or "" for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return content if isinstance(content, str) else ""


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def _not_retryable(err: LLMError) -> LLMError:
    """Mark an error that the same call would meet again (``retryable`` is read by the HTTP and MCP layers)."""
    err.retryable = False
    return err
