"""Stage: schema linking by meaning (the question's words that name a table or column by another word).

A question often names the schema in its own words: "vocalists" for table ``singer``, "nations" for ``country``,
"manufacturer" for ``car_makers.Maker``. A small model then loses the link and joins or selects the wrong thing.
:func:`link_terms` finds those words, with no model call: every word of the question that is not a stopword, a
question word, a capitalised or quoted name (value selection links values), nor a form of a word of the schema's
names (``cities`` of ``city``, ``weighed`` of ``weight``) is compared, by the cosine of their sentence embeddings
(the bundled MiniLM, :mod:`sqlweave.retrieval.dense`), with each table name and each column name of the schema
split into words (``CountryName`` -> "country name"). A word is linked to the closest name when the similarity
reaches ``threshold`` and that name is ahead of the next table (or another table's column) by ``margin``; at
most ``max_links`` links, the closest first.

The stage, placed after ``render_schema`` (``+link``), links to the tables and columns the prompt shows and keeps
the links in ``state.links`` (:class:`~sqlweave.stages.payloads.SchemaLink`) and the ``links`` prompt block, which
generation prompts show before the question::

    Words of the question that mean these tables or columns:
    - "vocalists" = table singer

Questions in another language than English are left as they are (the embedding model reads English). It needs
the ``embed`` extra. Without it, or when the embedding model cannot load, the stage links nothing and
says why in the trace: the question is still answered, as without the stage.

>>> from sqlweave.schema import Schema, Table, Column
>>> schema = Schema("x", (Table("singer", (Column("Name"), Column("Age"))),
...                       Table("stadium", (Column("Capacity"),))))
>>> candidate_words("How many vocalists are older than 30?", schema)
['vocalists']
>>> [str(link) for link in link_terms("How many vocalists are older than 30?", schema)]  # doctest: +SKIP
['"vocalists" = table singer']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..errors import SqlweaveError
from ..pipeline import State
from ..question import is_english
from ..retrieval.schema_retriever import _words
from .base import BaseStage, check_options
from .generate import LINKS_HEADER, headed_block
from .payloads import SchemaLink
from .select_values import STOPWORDS, schema_words

if TYPE_CHECKING:
    from ..schema import Schema
    from ..retrieval.dense import Embedder

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|[A-Za-z]")
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'|`[^`]*`|\u201c[^\u201d]*\u201d|\u2018[^\u2019]*\u2019")

#: Question words that are not about the schema even when no table or column is named by them.
_QUESTION_WORDS = frozenset("""
also ago amount another answer appear appears average based belong belongs call called compare contain contains
currently did does done ever exist exists find go goes greater group grouped has have held hold holds include
includes involved kind kinds known larger latest less lower made make more newest oldest older otherwise people
per percentage related sorted than times type types used uses using whose younger youngest yet year years
""".split())


def candidate_words(question: str, schema: "Schema") -> list[str]:
    """The question's words that could name a table or column by another word: not quoted, not capitalised (but
    the first), not a stopword or a question word, not a form of a word of the schema's names; each word once.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> candidate_words("How many vocalists from 'New France' are older than the singer Joe, named Bob?",
    ...                 Schema("x", (Table("singer", (Column("Name"),)),)))
    ['vocalists']
    """
    known = schema_words(schema)
    seen: set[str] = set()
    out = []
    for n, word in enumerate(_WORD.findall(_QUOTED.sub(" ", question))):
        low = word.lower().removesuffix("'s")
        if (len(low) < 3 or low in seen or low in STOPWORDS or low in _QUESTION_WORDS
                or (n > 0 and word[0].isupper())  # a name or value ("Africa"); value selection links those
                or _names_a_schema_word(low, known)):
            continue
        seen.add(low)
        out.append(word)
    return out


def _names_a_schema_word(word: str, known: frozenset[str]) -> bool:
    """Whether ``word`` is a form of a word of the schema's names: ``cities`` of ``city``, ``weighed`` of
    ``weight``, ``teach`` of ``teacher``, ``named`` of ``name``."""
    if word in known or word.rstrip("s") in known or (word.endswith("ies") and word[:-3] + "y" in known):
        return True
    return any(len(k) >= 4 and (word.startswith(k) or k.startswith(word) or
                                (len(word) >= 6 and k.startswith(word[:5]))) for k in known)


def link_terms(question: str, schema: "Schema", embedder: "Embedder | None" = None, *, threshold: float = 0.5,
               margin: float = 0.1, max_links: int = 3) -> list[SchemaLink]:
    """Links from the question's words to the tables and columns of ``schema`` they most likely mean, closest
    first (see the module's text). ``embedder`` defaults to :func:`~sqlweave.retrieval.dense.get_embedder`."""
    words = candidate_words(question, schema)
    if not words or max_links <= 0:
        return []
    if embedder is None:
        from ..retrieval.dense import get_embedder

        embedder = get_embedder()
    targets: list[tuple[str, str | None]] = [(t.name, None) for t in schema.tables]
    targets += [(t.name, c.name) for t in schema.tables for c in t.columns]
    texts = [_words(c if c is not None else t).lower() for t, c in targets]
    vectors = embedder.encode([w.lower() for w in words] + texts)
    q, s = np.asarray(vectors[: len(words)]), np.asarray(vectors[len(words):])
    sims = q @ s.T
    links = []
    for i, word in enumerate(words):
        order = np.argsort(-sims[i])
        best = int(order[0])
        score = float(sims[i, best])
        # The runner-up that means something else. These say the same thing and do not count against the link:
        # a column of the best's table (or the best column's table), and a name that holds the best's words
        # (table singer_in_concert, column Singer_ID of another table, for table singer).
        named = set(texts[best].split())
        rival = next((float(sims[i, j]) for j in order[1:] if targets[int(j)][0] != targets[best][0]
                      and not named <= set(texts[int(j)].split())), -1.0)
        if score >= threshold and score - rival >= margin:
            table, column = targets[best]
            links.append(SchemaLink(word, table, column, score))
    links.sort(key=lambda link: -link.score)
    return links[:max_links]


def links_text(links: list[SchemaLink]) -> str:
    """One line per link, as generation prompts show them.

    >>> print(links_text([SchemaLink("vocalists", "singer", None, 0.75),
    ...                   SchemaLink("dead", "death", "killed", 0.76)]))
    - "vocalists" = table singer
    - "dead" = column death.killed
    """
    return "\n".join(f"- {link}" for link in links)


@dataclass(frozen=True)
class LinkSchema(BaseStage):
    """Put the question's links by meaning to the shown schema in ``state.links`` and the ``links`` prompt block.

    ``threshold`` is the least cosine similarity of a word and a name, ``margin`` how far the name must be ahead
    of any other table and its columns, ``max_links`` how many links a prompt shows (threshold and margin chosen on
    the 200-question sample of Spider-Syn; BENCHMARKS.md).
    """

    threshold: float = 0.5
    margin: float = 0.1
    max_links: int = 3
    name: str = "link_schema"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ("rendered_schema",)
    provides: ClassVar[tuple[str, ...]] = ("links", "prompt_blocks")

    def __post_init__(self) -> None:
        check_options(self, at_least={"max_links": 0}, between={"threshold": (-1.0, 1.0), "margin": (0.0, 2.0)})

    def __call__(self, state: State) -> None:
        state.links, state.prompt_blocks["links"] = [], ""
        if state.question_language and not is_english(state.question_language):  # the embedding model reads English
            state.note(links=[], skipped=f"the question is in {state.question_language}")
            return
        shown = state.shown_schema
        try:
            from ..retrieval.dense import get_embedder

            links = link_terms(state.question, shown, get_embedder(resources=state.resources),
                               threshold=self.threshold, margin=self.margin, max_links=self.max_links)
        except SqlweaveError as err:  # no embed extra, or the embedding model did not load
            state.note(links=[], skipped=f"{err.code}: {err.message}")
            return
        state.links = links
        state.prompt_blocks["links"] = headed_block(LINKS_HEADER, links_text(links))
        state.note(links=[link.as_dict() for link in links])
