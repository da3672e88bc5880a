"""Conversations: follow-up questions that build on earlier turns ("only those born after 1980", "sort that").

A :class:`Conversation` keeps the turns of one dialogue with a database in a :class:`ConversationStore`
(a SQLite file in the cache directory by default, or any SQLAlchemy URL that several processes share).
Each follow-up is first restated by the model as a question that stands on its own ("How many are there?" ->
"How many customers are from Canada?"), then answered with the earlier questions and their SQL in the prompt.
The answer's ``builds_on`` says which earlier turn it continues: the one whose SQL is most like the new SQL
(same tables, kept filters, similar syntax tree), or ``None`` when the question stands on its own. A failed
turn is kept in the store, but its SQL never reaches a later prompt.

>>> import tempfile
>>> import sqlweave
>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.db.demo import demo_database_path
>>> llm = FakeLLM(["SELECT first_name FROM customers WHERE country = 'Canada'",
...                "How many customers are from Canada?",                    # the follow-up, restated
...                "SELECT count(*) FROM customers WHERE country = 'Canada'"])
>>> engine = sqlweave.connect(demo_database_path(), llm=llm)
>>> store = ConversationStore(f"sqlite:///{tempfile.mkdtemp()}/conversations.sqlite")
>>> chat = engine.conversation(store=store)
>>> chat.ask("Which customers are from Canada?").builds_on is None
True
>>> answer = chat.ask("How many are there?")
>>> answer.builds_on, answer.result.rows[0][0] > 0, answer.restated
(1, True, 'How many customers are from Canada?')
>>> prompt = llm.calls[-1][0][-1].content     # the generation prompt: turn 1, then the restated question
>>> "Which customers are from Canada?" in prompt and prompt.endswith("Question: How many customers are from Canada?")
True
>>> [(t.number, t.question, t.builds_on) for t in chat.turns]
[(1, 'Which customers are from Canada?', None), (2, 'How many are there?', 1)]
>>> engine.conversation(chat.id, store=store).history()[0].sql   # resumed by id, e.g. in another process
"SELECT first_name FROM customers WHERE country = 'Canada'"
"""

from __future__ import annotations

from ..errors import ConversationMismatchError
from ..stages.restate import REWRITE_SYSTEM, parse_rewrite, rewrite_prompt
from .continuation import BUILDS_ON_THRESHOLD, builds_on, continuation_score
from .flow import Conversation
from .records import STORED_ROWS, TITLE_CHARS, ConversationRecord, Turn, make_title, stored_answer
from .store import DEFAULT_MAX_HISTORY, ConversationStore, ConversationStoreError, default_store_url

__all__ = [
    "BUILDS_ON_THRESHOLD", "DEFAULT_MAX_HISTORY", "STORED_ROWS", "TITLE_CHARS", "Conversation",
    "ConversationMismatchError", "ConversationRecord", "ConversationStore", "ConversationStoreError",
    "REWRITE_SYSTEM", "Turn", "builds_on", "continuation_score", "default_store_url", "make_title", "parse_rewrite",
    "rewrite_prompt", "stored_answer",
]
