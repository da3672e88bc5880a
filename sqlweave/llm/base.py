"""The small interface every language-model backend implements.

Messages go in; a :class:`Completion` with text(s), token usage and seconds comes out.

>>> from sqlweave.llm.fake import FakeLLM
>>> llm = FakeLLM(["SELECT 1"])
>>> c = llm.complete([Message("user", "Say SELECT 1")])
>>> c.text, c.usage.completion_tokens > 0
('SELECT 1', True)
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigurationError, LLMResponseError, SqlweaveError
from ..text import well_formed

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: Role
    content: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


class GenerationOptions(BaseModel):
    """Options for one call. Unknown options are an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(512, ge=1, le=32768)
    stop: tuple[str, ...] = ()
    n: int = Field(1, ge=1, le=64)
    seed: int | None = None
    json_schema: dict[str, Any] | None = None
    #: A GBNF grammar the answer must follow (backends with ``supports_grammar`` only; see sqlweave.sql.grammar).
    grammar: str | None = None
    #: Instead of writing an answer, say how likely the answer is to begin with each of these (backends with
    #: ``supports_choices``): the completion's texts are the probabilities, in this order, as decimal text,
    #: normalised over the choices.
    choices: tuple[str, ...] | None = Field(None, min_length=2)
    #: Instead of writing an answer, say how likely this text is as the answer (backends with
    #: ``supports_choices``): the completion's one text is its log-probability (natural log, summed over its
    #: tokens) as decimal text.
    continuation: str | None = Field(None, min_length=1)
    timeout_s: float | None = Field(None, gt=0)

    def recorded(self) -> dict[str, Any]:
        """What a trace keeps of these options: those that change the answer and differ from their default, a
        grammar or JSON schema by its digest (a schema's grammar is long).

        >>> GenerationOptions(temperature=0.8, seed=1, n=4, timeout_s=30).recorded()
        {'temperature': 0.8, 'n': 4, 'seed': 1}
        """
        kept = self.model_dump(exclude_defaults=True, exclude={"timeout_s"})
        for name in ("grammar", "json_schema"):
            if name in kept:
                text = json.dumps(kept[name], sort_keys=True, default=str)
                kept[name] = "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
        if "stop" in kept:
            kept["stop"] = list(kept["stop"])
        if "choices" in kept:
            kept["choices"] = list(kept["choices"])
        return kept


@dataclass(frozen=True)
class Usage:
    """Tokens spent by one call (summed over its samples)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)


@dataclass(frozen=True)
class Timings:
    """Where a call's seconds went inside the model: evaluating the prompt (``evaluated_tokens``: the tokens not
    reused from an evaluated prefix) and writing the answer. Backends that cannot tell leave a call's timings
    ``None``.

    >>> Timings(1.5, 300, 2.0) + Timings(0.5, 10, 1.0)
    Timings(prompt_seconds=2.0, evaluated_tokens=310, generate_seconds=3.0)
    """

    prompt_seconds: float = 0.0
    evaluated_tokens: int = 0
    generate_seconds: float = 0.0

    def __add__(self, other: "Timings") -> "Timings":
        return Timings(self.prompt_seconds + other.prompt_seconds, self.evaluated_tokens + other.evaluated_tokens,
                       self.generate_seconds + other.generate_seconds)

    def as_dict(self) -> dict[str, float | int]:
        return {"prompt_seconds": round(self.prompt_seconds, 4), "evaluated_tokens": self.evaluated_tokens,
                "generate_seconds": round(self.generate_seconds, 4)}


@dataclass(frozen=True)
class Completion:
    """What a model answered: ``texts`` holds one entry per requested sample."""

    texts: tuple[str, ...]
    usage: Usage
    seconds: float
    model: str
    cached: bool = False
    #: For a cached answer, the seconds the model took when it first produced it (else ``seconds``).
    original_seconds: float | None = None
    #: How the model's own seconds divide between the prompt and the answer (backends that can tell).
    timings: Timings | None = None

    @property
    def cost_seconds(self) -> float:
        """What this answer cost the model: its own time, or for a cached answer the time it first took."""
        return self.seconds if self.original_seconds is None else self.original_seconds

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""


@dataclass
class UsageMeter:
    """Running totals of calls, tokens and seconds, safe to share across threads."""

    calls: int = 0
    cached_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, c: Completion) -> None:
        with self._lock:
            self.calls += 1
            self.cached_calls += int(c.cached)
            self.usage = self.usage + c.usage
            self.seconds += c.seconds


def _well_formed(message: Message) -> Message:
    """The message with undecodable database bytes as U+FFFD (what the tokenizer and a JSON body can carry)."""
    content = well_formed(message.content)
    return message if content is message.content else Message(message.role, content)


class LLM(ABC):
    """A language-model backend. Subclasses set ``model_id`` and implement :meth:`_complete`."""

    model_id: str = "llm"
    #: whether :meth:`_complete` honours ``json_schema`` natively (grammar or response_format).
    supports_json_schema: bool = False
    #: whether :meth:`_complete` holds generation to a GBNF ``grammar`` (llama.cpp); others refuse one.
    supports_grammar: bool = False
    #: whether :meth:`_complete` can score ``choices`` (the probability of each as the answer's first token) and a
    #: ``continuation`` (its log-probability as the answer).
    supports_choices: bool = False
    #: whether :meth:`prefill` keeps an evaluated prompt for later calls (the embedded model's prompt states).
    keeps_prompts: bool = False

    def __init__(self) -> None:
        self.meter = UsageMeter()

    def complete(self, messages: Sequence[Message], options: GenerationOptions | None = None, **kwargs: Any) -> Completion:
        """Answer ``messages``. Options may be given as an object or as keywords (``temperature=0.2``)."""
        opts = options or GenerationOptions(**kwargs)
        if options is not None and kwargs:
            opts = options.model_copy(update=kwargs)
        if opts.grammar is not None and not self.supports_grammar:
            raise ConfigurationError(f"the model backend {self.model_id} cannot hold generation to a grammar",
                                     hint="Use the embedded model (local, local:0.5b), or a pipeline without +grammar.")
        if (opts.choices is not None or opts.continuation is not None) and not self.supports_choices:
            raise ConfigurationError(f"the model backend {self.model_id} cannot score choices or answers",
                                     hint="Use the embedded model (local, local:0.5b), or ask for a written answer.")
        opts = _within_budget(opts)
        start = time.perf_counter()
        try:
            result = self._complete(tuple(_well_formed(m) for m in messages), opts)
        except SqlweaveError:
            raise
        except Exception as err:
            # A backend's own fault (a runtime raising mid-generation, a malformed answer) must reach callers as
            # the typed error every backend promises, so pipelines record it instead of crashing.
            raise LLMResponseError(
                f"the model backend {self.model_id} failed: {type(err).__name__}: {err}",
                hint="Retry; if it keeps failing, check the backend's installation and settings.",
            ) from err
        if not result.seconds and not result.cached:
            result = Completion(result.texts, result.usage, time.perf_counter() - start, result.model, result.cached)
        self.meter.add(result)
        return result

    @abstractmethod
    def _complete(self, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        """Backend-specific call."""

    def count_tokens(self, text: str) -> tuple[int, bool]:
        """Tokens in ``text`` and whether the count is exact for this model."""
        from .tokens import estimate_tokens

        return estimate_tokens(text), False

    def cache_key_params(self) -> dict[str, Any]:
        """What, besides messages and options, changes this backend's answers (for the response cache)."""
        return {"model": self.model_id}

    def cache_key_params_for(self, options: "GenerationOptions") -> dict[str, Any]:
        """:meth:`cache_key_params` for a call with ``options`` (a backend that answers some calls another way,
        e.g. samples decoded together, says so here)."""
        return self.cache_key_params()

    def prefill(self, messages: Sequence[Message]) -> bool:
        """Evaluate ``messages`` now and keep the evaluated prompt, so that a later call sharing its beginning
        starts from there; ``True`` if this backend keeps one (the embedded model), else ``False`` and nothing is
        done. Nothing is generated, answered or cached as an answer."""
        return self._prefill(tuple(_well_formed(m) for m in messages)) if self.keeps_prompts else False

    def _prefill(self, messages: tuple[Message, ...]) -> bool:
        """Backend-specific prefill, for backends that set ``keeps_prompts``."""
        return False


def _within_budget(options: GenerationOptions) -> GenerationOptions:
    """``options`` with the question's time left (:mod:`sqlweave.budget`) as the call's ``timeout_s`` when that
    is sooner; past the deadline, the question's typed timeout (or cancellation) instead of a model call."""
    from ..budget import current

    deadline = current()
    left = None if deadline is None else deadline.remaining()
    if deadline is None or left is None:  # no time limit (an infinite budget has none either)
        return options
    if left <= 0:
        raise deadline.error()
    if options.timeout_s is None or options.timeout_s > left:
        return options.model_copy(update={"timeout_s": left})
    return options


class WrappedLLM(LLM):
    """A backend in front of another (``inner``): it has the inner backend's identity and token counts, so the
    response cache keys its answers as the inner backend's own. Subclasses implement :meth:`_complete`."""

    def __init__(self, inner: LLM) -> None:
        super().__init__()
        self.inner = inner
        self.model_id = inner.model_id
        self.supports_json_schema = inner.supports_json_schema
        self.supports_grammar = inner.supports_grammar
        self.supports_choices = inner.supports_choices
        self.keeps_prompts = inner.keeps_prompts

    def count_tokens(self, text: str) -> tuple[int, bool]:
        return self.inner.count_tokens(text)

    def prefill(self, messages: Sequence[Message]) -> bool:
        return self.inner.prefill(messages)

    def cache_key_params(self) -> dict[str, Any]:
        return self.inner.cache_key_params()

    def cache_key_params_for(self, options: "GenerationOptions") -> dict[str, Any]:
        return self.inner.cache_key_params_for(options)
