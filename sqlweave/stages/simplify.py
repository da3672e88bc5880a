"""Stage: question simplification (Guo et al., section 3.1.1).

The model rewrites the question into a simpler, syntactically clear form with the paper's instruction
("Replace the words as far as possible to simplify the question, making it syntactically clear,
common and easy to understand", template ``prompts/simplify.txt``). The result goes to
``state.simplified_question``, where example selection can use it to retrieve examples
with the same intent. Model answers are cached on disk by the LLM layer, so a question is
simplified once per model.

With ``use_for_generation=True`` the generation prompt shows the simplified question as *the*
question, followed by the original wording (``state.prompt_question``, read by
:func:`sqlweave.stages.generate.prompt_question`), so names and values the simplification might
have blurred stay visible. ``state.question`` itself is never changed (pruning, value selection and
example selection keep working on what the user asked).

A small model can answer with garbage. The answer is rejected, the original kept and the reason
noted (``rejected``), when it is empty, much longer than the question, SQL, not English, or when
it drops a number or quoted value of the question. A model error (time-out, bad response) is
handled the same way: simplification is an aid, never a reason to fail.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.pipeline import State
>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> db = Database.open(demo_database_path())
>>> state = State("Give me the tally of clients hailing from Canada.", db, FakeLLM(["How many customers are from Canada?"]),
...               db.schema(), db.schema())
>>> SimplifyQuestion()(state)
>>> state.simplified_question
'How many customers are from Canada?'
>>> check_simplification("What is the average age?", "SELECT AVG(age) FROM singer")
'sql'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ClassVar

from ..errors import LLMError
from ..files import append_jsonl
from ..llm.base import LLM, Completion, Message
from ..pipeline import State
from ..prompts import render
from ..question import detect_language
from ..retrieval.pool import ExamplePool
from ..retrieval.simplified import load_simplified, recorded, simplified_file
from .base import BaseStage, check_options

_PREFIX = re.compile(r"^\s*(?:\*\*)?(?:simplified|simpler|simple|rewritten|new|clear|clearer)?\s*(?:question|version|"
                     r"rewrite|answer)?\s*(?:\*\*)?\s*:\s*(?:\*\*)?\s*", re.IGNORECASE)
_SQL = re.compile(r"```|\bselect\b[\s\S]+\bfrom\b|^\s*(?:with|select)\s", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_QUOTED = re.compile(r"\"([^\"]+)\"|'([^']+)'(?=[\s.,;:!?)]|$)")


def clean_simplification(text: str) -> str:
    """The simplified question in a model answer: first non-empty line, without a label or quotes.

    >>> clean_simplification('Simplified question: "How many singers are there?"\\nThis is simpler.')
    'How many singers are there?'
    """
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[0]
    label = _PREFIX.match(line)
    if label and label.group(0).strip():
        rest = _PREFIX.sub("", line, count=1).strip()
        if not rest and len(lines) > 1:  # the label on its own line
            rest = lines[1]
        line = rest
    line = line.strip().strip("*").strip()
    if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'`":
        line = line[1:-1].strip()
    return line


def check_simplification(original: str, simplified: str, *, max_ratio: float = 2.0) -> str | None:
    """Why ``simplified`` cannot stand for ``original`` (``"empty"``, ``"too_long"``, ``"sql"``,
    ``"language"``, ``"lost_value"``), or ``None`` if it can.

    >>> check_simplification("Which singers were born after 1990?", "Which singers were born recently?")
    'lost_value'
    >>> check_simplification("Which singers were born after 1990?", "List singers born after 1990.") is None
    True
    """
    s = simplified.strip()
    if not s:
        return "empty"
    if _SQL.search(s):
        return "sql"
    if len(s) > max_ratio * len(original.strip()) + 40:
        return "too_long"
    if detect_language(s) != "English" and detect_language(original) == "English":
        return "language"
    low = s.lower()
    for n in _NUMBER.findall(original):
        if n not in s:
            return "lost_value"
    for m in _QUOTED.finditer(original):
        quoted = next(g for g in m.groups() if g is not None)
        if quoted.lower() not in low:
            return "lost_value"
    return None


def simplify_question(question: str, complete: Callable[..., Completion], *, temperature: float = 0.0,
                      max_tokens: int = 96, max_ratio: float = 2.0) -> tuple[str, str | None]:
    """Ask the model (``complete``: ``LLM.complete`` or ``State.complete``) for a simpler wording of
    ``question``. Returns ``(simplified, None)``, or ``(answer, reason)`` when the answer was rejected
    (see :func:`check_simplification`; a model error is a reason too, never raised).

    >>> from sqlweave.llm.fake import FakeLLM
    >>> simplify_question("Give the tally of clients.", FakeLLM(["How many customers are there?"]).complete)
    ('How many customers are there?', None)
    """
    system, user = render("simplify", question=question)
    try:
        out = complete([Message("system", system), Message("user", user)], temperature=temperature,
                       max_tokens=max_tokens)
    except LLMError as err:
        return "", f"model error: {err.code}"
    simplified = clean_simplification(out.text)
    return simplified, check_simplification(question, simplified, max_ratio=max_ratio)


@dataclass(frozen=True)
class SimplifyQuestion(BaseStage):
    """Ask the model for a simpler wording of the question; put it in ``state.simplified_question``.

    ``use_for_generation`` also makes generation prompts show it (with the original wording).
    """

    use_for_generation: bool = False
    temperature: float = 0.0
    max_tokens: int = 96
    max_ratio: float = 2.0
    name: str = "simplify"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    provides: ClassVar[tuple[str, ...]] = ("simplified_question", "prompt_question")

    def __post_init__(self) -> None:
        check_options(self, at_least={"max_tokens": 1, "max_ratio": 0.0}, between={"temperature": (0.0, 2.0)})

    def __call__(self, state: State) -> None:
        original = state.question
        simplified, reason = simplify_question(original, state.complete, temperature=self.temperature,
                                               max_tokens=self.max_tokens, max_ratio=self.max_ratio)
        if reason is not None:
            state.simplified_question = original
            state.note(simplified=None, rejected=reason, answer=simplified[:300])
            return
        state.simplified_question = simplified
        used = self.use_for_generation and simplified.strip().lower() != original.strip().lower()
        if used:
            state.prompt_question = f"{simplified}\n(Original wording: {original})"
        state.note(simplified=simplified, used_for_generation=used)


# --- the example pool's questions, simplified once and kept (Guo et al., section 3.1.2) ---------------------


@dataclass(frozen=True)
class SimplifyReport:
    """What :func:`simplify_pool` did: questions asked, answers accepted and rejected, questions already done."""

    asked: int
    accepted: int
    rejected: int
    already_done: int


def simplify_pool(pool: ExamplePool, llm: LLM, *, limit: int | None = None, path: Path | None = None,
                  progress: Callable[[int, int], None] | None = None) -> SimplifyReport:
    """Simplify the pool's questions that have no recorded simplification yet (at most ``limit``),
    appending each answer to ``path`` (default :func:`~sqlweave.retrieval.simplified.simplified_file`) as it
    comes, then attach the accepted ones to ``pool``.

    >>> from sqlweave.llm.fake import FakeLLM
    >>> from sqlweave.retrieval.pool import ExamplePool
    >>> import tempfile, pathlib
    >>> pool = ExamplePool([])
    >>> pool.add("Give me the tally of singers.", "SELECT count(*) FROM singer", schema_names=["singer"])
    >>> store = pathlib.Path(tempfile.mkdtemp()) / "simplified.jsonl"
    >>> simplify_pool(pool, FakeLLM(["How many singers are there?"]), path=store)
    SimplifyReport(asked=1, accepted=1, rejected=0, already_done=0)
    """
    path = path or simplified_file()
    done = recorded(path)
    todo = list(dict.fromkeys(e.question for e in pool.examples if e.question not in done))
    if limit is not None:
        todo = todo[:max(0, limit)]
    accepted = rejected = 0
    for i, question in enumerate(todo, 1):
        simplified, reason = simplify_question(question, llm.complete)
        # one line per answer, written as it comes: an interruption loses at most the question in flight
        append_jsonl(path, [{"question": question, "simplified": simplified, "rejected": reason,
                             "model": llm.model_id}])
        accepted += reason is None
        rejected += reason is not None
        if progress:
            progress(i, len(todo))
    pool.attach_simplified(load_simplified(path))
    return SimplifyReport(len(todo), accepted, rejected, len(done))
