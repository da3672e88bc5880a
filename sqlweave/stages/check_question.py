"""Stage: refuse questions sqlweave cannot answer (empty, overlong), before spending model time, and tell
the question's language.

A question in any language is answered: its language is a trace note (``language``) and, when it is not
English, generation prompts say so (:func:`sqlweave.question.language_block`). Only a caller who asks for it
gets a refusal: ``CheckQuestion(languages=("English",))`` (or ``require_english=True``) refuses questions
in other languages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import InvalidQuestionError
from ..pipeline import State
from ..question import UNKNOWN, detect_language
from .base import BaseStage


#: The longest question any door takes (longer ones are refused before any model time, with the same message).
MAX_QUESTION_CHARS = 2000


def empty_question() -> InvalidQuestionError:
    """The error every door gives for an empty question."""
    return InvalidQuestionError("the question is empty", hint="Type a question, e.g. How many customers are there?")


def question_too_long(chars: int, limit: int = MAX_QUESTION_CHARS) -> InvalidQuestionError:
    """The error every door gives for a question longer than ``limit`` characters.

    >>> question_too_long(3000).message
    'the question is 3000 characters long; the limit is 2000'
    """
    return InvalidQuestionError(f"the question is {chars} characters long; the limit is {limit}",
                                hint="Ask one focused question: a pasted text is too long to be one.")


@dataclass(frozen=True)
class CheckQuestion(BaseStage):
    """Reject empty or overlong questions; note the language; refuse other languages than ``languages`` if given.

    :meth:`check` does the checks on a bare question (a door that refuses before any model time uses it):

    >>> CheckQuestion().check("  Combien de chanteurs y a-t-il ?  ")
    ('Combien de chanteurs y a-t-il ?', 'French')
    >>> CheckQuestion().check("   ")
    Traceback (most recent call last):
    ...
    sqlweave.errors.InvalidQuestionError: the question is empty (...)
    >>> CheckQuestion(require_english=True).check("Combien de chanteurs y a-t-il ?")
    Traceback (most recent call last):
    ...
    sqlweave.errors.InvalidQuestionError: the question seems to be in French, and only English questions are answered here (...)

    In a pipeline, the language becomes a note and ``state.question_language``:

    >>> from sqlweave.llm.fake import FakeLLM
    >>> from sqlweave.database import Database
    >>> from sqlweave.db.demo import demo_database_path
    >>> from sqlweave.pipeline import Pipeline
    >>> answer = Pipeline("check", (CheckQuestion(),)).run("¿Cuántos clientes hay?",
    ...                                                    Database.open(demo_database_path()), FakeLLM([]))
    >>> answer.trace[0].notes
    {'chars': 22, 'language': 'Spanish'}
    """

    max_chars: int = MAX_QUESTION_CHARS
    #: Languages to answer (English names, as :func:`sqlweave.question.detect_language` gives them); empty:
    #: every language. A question whose language is not known (no letters) is never refused for it.
    languages: tuple[str, ...] = ()
    #: Shorthand for ``languages=("English",)``.
    require_english: bool = False
    #: The older spelling: ``any_language=False`` is ``require_english=True``.
    any_language: bool = True
    name: str = "check_question"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    provides: ClassVar[tuple[str, ...]] = ("question_language",)

    @property
    def allowed_languages(self) -> tuple[str, ...]:
        english = self.require_english or not self.any_language
        return tuple(dict.fromkeys(self.languages + (("English",) if english else ())))

    def check(self, question: str) -> tuple[str, str]:
        """``(question without surrounding spaces, its language)``; :class:`InvalidQuestionError` if refused."""
        q = question.strip()
        if not q:
            raise empty_question()
        if len(q) > self.max_chars:
            raise question_too_long(len(q), self.max_chars)
        language = detect_language(q)
        allowed = self.allowed_languages
        if allowed and language != UNKNOWN and language not in allowed:
            only = " or ".join(allowed)
            raise InvalidQuestionError(
                f"the question seems to be in {language}, and only {only} questions are answered here",
                hint=f"Ask in {only}, or ask without the language restriction (--english-only, "
                     "CheckQuestion(languages=...)) to have it answered anyway.",
            )
        return q, language

    def __call__(self, state: State) -> None:
        state.question, language = self.check(state.question)
        if isinstance(state, State):  # a door's pre-check may pass a bare namespace: the checks alone
            state.question_language = language
            state.note(chars=len(state.question), language=language)
