"""Any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, a llama.cpp server.

>>> llm = OpenAICompatibleLLM("gpt-4o-mini", base_url="http://localhost:8000/v1")
>>> llm.model_id
'openai:gpt-4o-mini'
"""

from __future__ import annotations

import os
import time
from typing import Any

import httpx

from ..errors import LLMResponseError, LLMTimeoutError, ModelUnavailableError
from .base import LLM, Completion, GenerationOptions, Message, Usage

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAICompatibleLLM(LLM):
    """Chat completions over HTTP with retries (exponential backoff), timeouts and typed errors.

    ``api_key`` defaults to ``$OPENAI_API_KEY`` (servers that need none accept any value).
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

    def _complete(self, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        url = f"{self.base_url}/chat/completions"
        headers = {"Authorization": f"Bearer {self.api_key}"}
        timeout = options.timeout_s or self.timeout_s
        start = time.perf_counter()
        last: Exception | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                resp = self._client.post(url, json=self._payload(messages, options), headers=headers, timeout=timeout)
            except httpx.TimeoutException as err:
                last = LLMTimeoutError(f"{self.base_url} did not answer within {timeout:g} s")
                last.__cause__ = err
                continue
            except httpx.HTTPError as err:
                last = ModelUnavailableError(
                    f"cannot reach {self.base_url}: {err}", hint="Check that the server is running and the URL is right."
                )
                continue
            if resp.status_code in _RETRY_STATUS:
                last = LLMResponseError(f"{self.base_url} answered HTTP {resp.status_code}: {resp.text[:200]}")
                continue
            if resp.status_code in (401, 403):
                raise ModelUnavailableError(
                    f"{self.base_url} refused the credentials (HTTP {resp.status_code})",
                    hint="Set a valid key with --api-key or the OPENAI_API_KEY environment variable.",
                )
            if resp.status_code >= 400:
                raise LLMResponseError(f"{self.base_url} answered HTTP {resp.status_code}: {resp.text[:300]}")
            return self._parse(resp, time.perf_counter() - start)
        assert last is not None
        raise last

    def _parse(self, resp: httpx.Response, seconds: float) -> Completion:
        try:
            data = resp.json()
            texts = tuple((c.get("message") or {}).get("content") or "" for c in data["choices"])
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise LLMResponseError(f"unexpected response from {self.base_url}: {resp.text[:200]}", raw=resp.text) from err
        if not texts:
            raise LLMResponseError(f"{self.base_url} returned no choices", raw=resp.text)
        u = data.get("usage") or {}
        usage = Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0))
        return Completion(texts, usage, seconds, self.model_id)
