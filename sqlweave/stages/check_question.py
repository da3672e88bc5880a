"""Stage: refuse questions sqlweave cannot answer well, before spending model time."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidQuestionError
from ..pipeline import State
from ..question import detect_language


@dataclass(frozen=True)
class CheckQuestion:
    """Reject empty or overlong questions and, unless ``any_language``, questions not in English.

    >>> from types import SimpleNamespace
    >>> CheckQuestion()(SimpleNamespace(question="   "))
    Traceback (most recent call last):
    ...
    sqlweave.errors.InvalidQuestionError: the question is empty (...)
    """

    max_chars: int = 2000
    any_language: bool = False
    name: str = "check_question"

    def __call__(self, state: State) -> None:
        q = state.question.strip()
        if not q:
            raise InvalidQuestionError("the question is empty")
        if len(q) > self.max_chars:
            raise InvalidQuestionError(
                f"the question is {len(q)} characters long; the limit is {self.max_chars}",
                hint="Ask one focused question.",
            )
        if not self.any_language:
            lang = detect_language(q)
            if lang != "English":
                raise InvalidQuestionError(
                    f"the question seems to be in {lang}, and the embedded model answers English questions",
                    hint="Ask in English, or pass --any-language (any_language=True) to try anyway.",
                )
        state.question = q
        if hasattr(state, "note"):
            state.note(chars=len(q))
