"""The server's views of the conversation store: list, show, delete (asking in a conversation is
:class:`sqlweave.conversation.Conversation`'s flow, as at every door)."""

from __future__ import annotations

from typing import Any

from ..text import well_formed
from .errors import InvalidRequestError
from .values import stamp



class Conversations:
    """The server's views of the conversation store: list, show, delete. Asking in a conversation is
    :class:`sqlweave.conversation.Conversation`'s flow, as at every door (its earlier turns read before the
    question waits for the model, the answer stored after it; a new conversation is made only with its first
    turn, so a refused or abandoned question leaves no empty conversation behind)."""

    def __init__(self, url: str | None) -> None:
        from ..conversation import ConversationStore

        self.store = ConversationStore(url)

    def summaries(self, database: str | None, limit: int = 50, owner: str | None = None) -> list[dict[str, Any]]:
        out = []
        for rec in self.store.list(database=database, limit=limit, owner=owner):
            out.append({"id": str(rec.id), "database": rec.database, "title": well_formed(rec.title or ""),
                        "created_at": stamp(rec.created_at), "updated_at": stamp(rec.updated_at),
                        "turn_count": int(rec.turn_count)})
        return out

    def show(self, conversation_id: str, owner: str | None = None) -> dict[str, Any]:
        rec = self.store.get(conversation_id, owner=owner)
        turns = []
        for t in rec.turns:
            turns.append({"number": int(t.number), "question": well_formed(t.question),
                          "sql": None if t.sql is None else well_formed(t.sql), "ok": bool(t.ok),
                          "error_code": t.error_code, "builds_on": t.builds_on,
                          "row_count": t.row_count, "created_at": stamp(t.created_at)})
        return {"id": str(rec.id), "database": rec.database, "title": well_formed(rec.title or ""), "turns": turns}

    def delete(self, conversation_id: str, owner: str | None = None) -> None:
        self.store.delete(conversation_id, owner=owner)  # unknown or another tenant's -> 404

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if close is not None:
            close()


def check_id(conversation_id: str) -> None:
    if not conversation_id or len(conversation_id) > 64:
        raise InvalidRequestError("not a conversation id")

