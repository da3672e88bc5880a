"""A deterministic model for tests: answers come from a queue, or from a function of the prompt.

>>> llm = FakeLLM(["SELECT 1", "SELECT 2"])
>>> [llm.complete([Message("user", "q")]).text for _ in range(2)]
['SELECT 1', 'SELECT 2']
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Iterable

from ..errors import LLMResponseError
from ..progress import report
from .base import LLM, Completion, GenerationOptions, Message, Usage
from .tokens import estimate_tokens

Responder = Callable[[tuple[Message, ...], GenerationOptions], str]


class FakeLLM(LLM):
    """Replays queued answers in order; an exception in the queue is raised instead.

    ``responder`` (a function of messages and options) answers when the queue is empty.
    Every call is kept in ``calls`` for assertions. A call with ``choices`` takes one answer holding the
    probabilities of the choices, in order, separated by spaces (``"0.3 0.7"``); a call with ``continuation``
    takes one answer holding its log-probability (``"-12.5"``). With ``keeps_prompts`` it stands for a model that
    keeps evaluated prompts: :meth:`prefill` records each prompt in ``prefills`` (and answers nothing).
    """

    model_id = "fake"
    supports_json_schema = True
    supports_grammar = True  # accepted and recorded in the call's options; the scripted answers are not checked
    supports_choices = True

    def __init__(self, answers: Iterable[str | BaseException] = (), responder: Responder | None = None, *,
                 keeps_prompts: bool = False) -> None:
        super().__init__()
        self.queue: deque[str | BaseException] = deque(answers)
        self.responder = responder
        self.calls: list[tuple[tuple[Message, ...], GenerationOptions]] = []
        self.keeps_prompts = keeps_prompts
        self.prefills: list[tuple[Message, ...]] = []

    def _prefill(self, messages: tuple[Message, ...]) -> bool:
        self.prefills.append(messages)
        return True

    def push(self, *answers: str | BaseException) -> None:
        self.queue.extend(answers)

    def _next(self, messages: tuple[Message, ...], options: GenerationOptions) -> str:
        if self.queue:
            item = self.queue.popleft()
            if isinstance(item, BaseException):  # an error to raise (KeyboardInterrupt: an interruption)
                raise item
            return item
        if self.responder is not None:
            return self.responder(messages, options)
        raise LLMResponseError("the fake model has no answers left", hint="Queue more answers with FakeLLM.push().")

    def _complete(self, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        self.calls.append((messages, options))
        if options.continuation is not None:
            return Completion((self._next(messages, options).strip(),), Usage(
                sum(estimate_tokens(m.content) for m in messages), estimate_tokens(options.continuation)), 0.0,
                self.model_id)
        if options.choices is not None:
            texts = tuple(self._next(messages, options).split())
            if len(texts) != len(options.choices):
                raise LLMResponseError(f"the fake model was given {len(texts)} probabilities for "
                                       f"{len(options.choices)} choices")
            return Completion(texts, Usage(sum(estimate_tokens(m.content) for m in messages), 1), 0.0, self.model_id)
        answers = []
        for i in range(options.n):
            answers.append(self._next(messages, options))
            if options.n > 1:
                report(i + 1, options.n)
        texts = tuple(answers)
        prompt = sum(estimate_tokens(m.content) for m in messages)
        return Completion(texts, Usage(prompt, sum(estimate_tokens(t) for t in texts)), 0.0, self.model_id)


__all__ = ["FakeLLM"]
