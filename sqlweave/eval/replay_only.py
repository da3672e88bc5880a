"""Replay a recorded run with no model at all: every model call the traces do not answer is a miss.

``sqlweave eval --replay CHECKPOINT`` answers the calls a checkpoint's traces recorded and puts the rest to the
model. With ``--replay-only`` there is no model behind the recording: :class:`NoModelLLM` stands in for it,
states the model's context size and counts tokens with its tokenizer (read without the weights), so prompts are
laid out as in the recorded run, and it answers every call that reaches it with :class:`ReplayMiss`, a typed model
error the pipeline records for that question like any failed call. The run then scores today's stages on the
recorded answers alone, and ``misses`` says how many calls the traces could not answer.

A fresh response cache in a folder of the caller's choosing sits in front of the recording, as it does in an
ordinary replay, so an exact repeat of one call is answered once and repeated from there.

>>> from sqlweave.llm.base import Message
>>> from sqlweave.llm.fake import FakeLLM
>>> stand_in = NoModelLLM(FakeLLM(["never asked"]))
>>> try:
...     stand_in.complete([Message("user", "q")])
... except ReplayMiss as err:
...     print(err.code, stand_in.misses)
replay_miss 1
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import LLMResponseError
from ..llm.base import LLM, Completion, GenerationOptions, Message, WrappedLLM


class ReplayMiss(LLMResponseError):
    """A model call that a replay-only run's recorded traces do not answer."""

    code = "replay_miss"
    default_hint = "The recorded run made no such call: replay without --replay-only to put it to the model."
    retryable = False


class NoModelLLM(WrappedLLM):
    """The model's identity, context size and token counts, without the model: every call is a :class:`ReplayMiss`.

    ``inner`` is the backend the recorded run used, never loaded: its ``n_ctx`` is read, and the embedded model's
    tokens are counted with its tokenizer alone (:func:`sqlweave.llm.tokens.count_tokens`, the exact count the
    model gives). ``misses`` counts the calls refused.
    """

    def __init__(self, inner: LLM) -> None:
        super().__init__(inner)
        self.misses = 0
        n_ctx = getattr(inner, "n_ctx", None)
        if isinstance(n_ctx, int):
            self.n_ctx = n_ctx

    def count_tokens(self, text: str) -> tuple[int, bool]:
        """Tokens of ``text`` as the recorded model counts them; loading its tokenizer only, never its weights."""
        if type(self.inner).__name__ != "LocalLLM":
            return self.inner.count_tokens(text)
        from ..llm.tokens import count_tokens
        from ..text import well_formed

        return count_tokens(well_formed(text))

    def prefill(self, messages: Sequence[Message]) -> bool:
        return False  # no model: no prompt state to keep

    def _complete(self, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        self.misses += 1
        raise ReplayMiss("no recorded answer for this model call (replay-only: the model is not asked)")


def replay_only_llm(spec: str, traces: Sequence[Path], cache: Path) -> Any:
    """``spec``'s backend (never loaded) behind the recorded ``traces``, in a response cache at ``cache`` (a file
    path, best a new one): the LLM a ``--replay-only`` evaluation runs with. Returns the cache-wrapped backend;
    the :class:`NoModelLLM` is its ``inner.inner``.

    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> call = {"messages": [{"role": "user", "content": "q"}], "outputs": ["SELECT 1"]}
    >>> _ = (folder / "traces.jsonl").write_text(json.dumps({"id": "1", "trace": [{"calls": [call]}]}) + "\\n")
    >>> llm = replay_only_llm("fake", [folder], folder / "responses.sqlite")
    >>> llm.complete([Message("user", "q")]).text, llm.inner.inner.misses
    ('SELECT 1', 0)
    """
    from ..llm.cache import CachedLLM
    from ..llm.recorded import RecordedLLM
    from ..llm.registry import get_llm

    model = get_llm(spec, cache=False)
    return CachedLLM(RecordedLLM(NoModelLLM(model), traces), cache)


__all__ = ["NoModelLLM", "ReplayMiss", "replay_only_llm"]
