"""The conversation's flow, the same at every door: the earlier turns read, the question answered after them,
the answer kept as the next turn (:class:`Conversation`)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import ConversationMismatchError, ConversationNotFoundError
from ..pipeline import Answer, Pipeline, PriorTurn, SampleCallback, StageCallback, StartCallback
from .continuation import BUILDS_ON_THRESHOLD, builds_on
from .records import ConversationRecord, Turn
from .store import DEFAULT_MAX_HISTORY, ConversationStore

if TYPE_CHECKING:
    from ..engine import Engine


class Conversation:
    """A dialogue with one engine's database whose questions may follow up on earlier ones.

    Without ``id`` a new conversation is created in ``store`` (default: :class:`ConversationStore` in the cache
    directory) under ``database`` (default: the engine's database name); with ``id`` the stored one is
    continued (:class:`~sqlweave.errors.ConversationNotFoundError` if the store has none). ``max_history``
    earlier turns with SQL go into each prompt; ``threshold`` is the :func:`continuation_score` from which
    an answer counts as building on an earlier turn. With ``rewrite`` (the default), the pipeline first restates a
    follow-up as a standalone question (its :class:`~sqlweave.stages.restate.RestateFollowUp` stage, one short
    extra call, in the trace as ``rewrite_question``: the same stage every door uses) and answers that, with the
    earlier turns still in its prompt; the stored turn and the returned answer keep the user's own wording, and
    ``answer.restated`` holds the standalone question.
    """

    def __init__(self, engine: "Engine", store: ConversationStore | None = None, id: str | None = None,
                 database: str | None = None, *, max_history: int = DEFAULT_MAX_HISTORY,
                 threshold: float = BUILDS_ON_THRESHOLD, rewrite: bool = True, owner: str | None = None,
                 lazy: bool = False) -> None:
        self.engine = engine
        self.store = store if store is not None else ConversationStore()
        self.max_history = max_history
        self.threshold = threshold
        self.rewrite = rewrite
        self.owner = owner
        self.id: str | None = None
        self.database: str = database or engine.db.name
        if id is None:
            if not lazy:  # lazy: made with its first turn (a refused or abandoned question leaves none behind)
                self.id = str(self.store.create(self.database, owner=owner).id)
        else:
            record = self.store.get(id, owner=owner)  # another owner's is not found
            if database is not None and database != record.database:
                raise ConversationMismatchError(
                    f"conversation {id!r} is about database {record.database!r}, not {database!r}",
                    hint="Continue it with the database it was started on, or start a new conversation.")
            self.id, self.database = str(record.id), record.database

    @property
    def record(self) -> ConversationRecord:
        """The stored conversation, turns included (read from the store)."""
        if self.id is None:
            raise ConversationNotFoundError("this conversation has no turn yet", hint="Ask a question first.")
        return self.store.get(self.id, owner=self.owner)

    @property
    def turns(self) -> tuple[Turn, ...]:
        """Every turn so far, oldest first (failed ones included)."""
        return self.record.turns

    @property
    def title(self) -> str:
        return self.record.title

    def history(self) -> tuple[PriorTurn, ...]:
        """What the next question's prompt will show: the last ``max_history`` turns that produced SQL."""
        return tuple(t.prior() for t in self.earlier())

    def earlier(self) -> tuple[Turn, ...]:
        """The turns with SQL that the next question's prompt shows (oldest first)."""
        if self.id is None or self.max_history <= 0:
            return ()
        return self.store.turns(self.id, with_sql=True, last=self.max_history)

    def answer(self, question: str, earlier: Sequence[Turn] = (), *, pipeline: Pipeline | None = None,
               **options: Any) -> Answer:
        """Answer ``question`` after the ``earlier`` turns (:meth:`earlier`), storing nothing: the model's part of
        :meth:`run`, which a door runs in its model worker. ``options`` are :meth:`Engine.run
        <sqlweave.engine.Engine.run>`'s."""
        pipe = pipeline or self.engine.pipeline
        if pipe.restate_follow_ups != self.rewrite:
            pipe = replace(pipe, restate_follow_ups=self.rewrite)
        return self.engine.run(question, history=[t.prior() for t in earlier], pipeline=pipe, **options)

    def keep(self, question: str, answer: Answer, earlier: Sequence[Turn] = ()) -> tuple[Answer, Turn]:
        """Store ``answer`` as the next turn (creating the conversation first if it has none yet) and return it with
        its ``builds_on`` set (which of the ``earlier`` turns it continues), and the stored turn."""
        continues = None
        if answer.ok and earlier:
            try:
                continues = builds_on(answer.sql, earlier, self.engine.db.dialect, self.threshold)
            except Exception:  # noqa: BLE001 - a failed guess must not lose the turn
                continues = None
        answer = replace(answer, builds_on=continues)
        if self.id is None:
            self.id = str(self.store.create(self.database, owner=self.owner).id)
        return answer, self.store.append(self.id, question, answer, continues)

    def run(self, question: str, *, on_stage: StageCallback | None = None,
            pipeline: Pipeline | None = None, min_confidence: float | None = None,
            budget_s: float | None = None, on_start: StartCallback | None = None,
            on_sample: SampleCallback | None = None) -> Answer:
        """Answer ``question`` in the context of the earlier turns, store it as the next turn, and return it
        (a failed answer too, with its ``error``). ``builds_on`` is set on the returned answer; ``min_confidence``
        and ``budget_s`` are as in :meth:`Engine.ask <sqlweave.engine.Engine.ask>`. The one flow of every door:
        :meth:`earlier`, :meth:`answer`, :meth:`keep`."""
        earlier = self.earlier()
        answer = self.answer(question, earlier, on_stage=on_stage, pipeline=pipeline, min_confidence=min_confidence,
                             budget_s=budget_s, on_start=on_start, on_sample=on_sample)
        return self.keep(question, answer, earlier)[0]

    def ask(self, question: str, *, on_stage: StageCallback | None = None,
            pipeline: Pipeline | None = None, min_confidence: float | None = None,
            budget_s: float | None = None) -> Answer:
        """Like :meth:`run`, but raise the typed error when no result came out (as :meth:`Engine.ask
        <sqlweave.engine.Engine.ask>` does); the failed turn is stored all the same."""
        return self.run(question, on_stage=on_stage, pipeline=pipeline, min_confidence=min_confidence,
                        budget_s=budget_s).raise_for_error()

    def __repr__(self) -> str:
        return f"Conversation(id={self.id!r}, database={self.database!r})"

