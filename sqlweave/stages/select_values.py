"""Stage: value selection (ASTReS, section 4.2): the stored spellings of values the question names.

The question is cut into candidate spans of 1 to ``max_n`` words. Spans are dropped when they start
or end with a stopword, when every word is a stopword or a word of a table or column name
("singer", "name"), or when they are a bare number (the model copies numbers from the question
anyway). Quoted spans (``"Tom Cruise"``, ``'France'``), capitalised spans (``New York``) and
numbers with words (``Jigsaw 1000``) are favoured: they are kept even if made of schema words, and
they may match a value loosely (a small typo, or a value with one or two more words). Each span is
looked up in the database's index of text cell values
(:class:`~sqlweave.retrieval.values.ValueIndex`) and a value is kept only if it scores at least
``threshold`` (:func:`match_score`: 1.0 for the same words ignoring case; loose matches only for
favoured spans). Few and precise: a wrong value in the prompt misleads a small model more than a
missing one, so a span whose words are covered by a longer or better match is not looked at again,
and at most ``per_column`` values per column and ``max_values`` in all are kept.

Results go to ``state.values`` (:class:`~sqlweave.stages.payloads.ValueMatch`: table, column, value, score, span)
and the ``values`` prompt block (one line per column, ``- singer.Country: 'France'``, under
:data:`~sqlweave.stages.generate.VALUES_HEADER`), which generation prompts show just before the question.

>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> db = Database.open(demo_database_path())
>>> found = select_values("Which customers from Canada bought a Chess Set?", value_index(db), db.schema())
>>> print(values_text(found))
- customers.country: 'Canada'
- products.name: 'Chess Set'
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Iterable

from ..errors import ConfigurationError, SqlweaveError
from ..pipeline import State
from .base import BaseStage, check_options
from .generate import VALUES_HEADER, headed_block
from .payloads import ValueMatch

if TYPE_CHECKING:
    from ..db.protocol import Database
    from ..schema import Schema
    from ..resources import Resources
    from ..retrieval.values import ValueIndex

#: Words that never start or end a value span: English function words and the words questions use
#: to ask for things ("list", "average", "number").
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be been before being below between both but by
can could did do does doing down during each either else ever every few for from further had has have having he her
here hers him his how i if in into is it its itself just least less like many may me might more most much must my
neither no nor not now of off on once one only or other others our out over own per please same she should show
shown so some such than that the their them then there these they this those through to too twice two under until
up upon us very was we were what whatever when where whether which while who whom whose why will with within
without would yes you your
list give find return tell display get count number numbers total average avg sum maximum minimum max min mean
highest lowest largest smallest biggest greatest fewest top bottom first last different distinct unique ids id
name names value values record records entry entries info information detail details each every all whole
order ordered sort sorted ascending descending alphabetical alphabetically respectively along including
""".split())

_WORD = re.compile(r"[^\W_][\w&'\u2019.-]*", re.UNICODE)
_QUOTED = re.compile(r"\"([^\"]{2,80})\"|\u201c([^\u201d]{2,80})\u201d|\u2018([^\u2019]{2,80})\u2019|"
                     r"(?:(?<=^)|(?<=[\s(]))'([^']{2,80})'(?=[\s.,;:!?)]|$)")
_NORM = re.compile(r"[0-9a-z]+")
_BREAK = re.compile(r"[\"\u201c\u201d,;:?!()]|'\s|\s'")
_FAVOURED_BONUS = 0.05


@dataclass(frozen=True)
class _Span:
    text: str
    start: int  # first word position (quoted spans: position of their first word)
    end: int    # one past the last word position
    kind: str   # "quoted", "capitalised", "number" or "ngram"

    @property
    def favoured(self) -> bool:
        return self.kind != "ngram"


def _norm_words(text: str) -> list[str]:
    return _NORM.findall(text.lower())


def _clean(word: str) -> str:
    word = word.strip(".'\u2019-")
    return re.sub(r"['\u2019]s$", "", word)


def schema_words(schema: "Schema") -> frozenset[str]:
    """Lower-cased words of the schema's table and column names, with and without a plural ``s``.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> sorted(schema_words(Schema("x", (Table("singer", (Column("Song_Name"),)),))))
    ['name', 'names', 'singer', 'singers', 'song', 'songs']
    """
    from ..retrieval.schema_retriever import _split

    words: set[str] = set()
    names = [t.name for t in schema.tables] + [c.name for t in schema.tables for c in t.columns]
    for name in names:
        for w in _split(name):
            w = w.lower()
            words.add(w)
            words.add(w[:-1] if w.endswith("s") and len(w) > 3 else w + "s")
    return frozenset(words)


def candidate_spans(question: str, schema_vocab: Iterable[str] = (), max_n: int = 3) -> list[_Span]:
    """The spans of ``question`` worth looking up, favoured kinds first, longer spans first.

    >>> [(s.text, s.kind) for s in candidate_spans('Which singers are from "New Zealand", or France?', {"singer"})]
    [('New Zealand', 'quoted'), ('New', 'capitalised'), ('Zealand', 'capitalised'), ('France', 'capitalised')]
    """
    vocab = {w.lower() for w in schema_vocab}
    vocab |= {w[:-1] for w in vocab if w.endswith("s") and len(w) > 3} | {w + "s" for w in vocab}
    raw = [(m.group(0), m.start()) for m in _WORD.finditer(question)]
    words = [(_clean(w), pos) for w, pos in raw]
    spans: dict[str, _Span] = {}

    def add(span: _Span) -> None:
        key = span.text.lower()
        if key not in spans or (span.favoured and not spans[key].favoured):
            spans[key] = span

    for m in _QUOTED.finditer(question):
        text = next(g for g in m.groups() if g is not None).strip()
        first = sum(1 for _, pos in words if pos < m.start())
        n = max(1, len(_WORD.findall(text)))
        if text:
            add(_Span(text, first, first + n, "quoted"))
    for n in range(max_n, 0, -1):
        for i in range(len(words) - n + 1):
            gram_words = [w for w, _ in words[i:i + n]]
            if any(not w for w in gram_words):
                continue
            low = [w.lower() for w in gram_words]
            if low[0] in STOPWORDS or low[-1] in STOPWORDS:
                continue
            text = " ".join(gram_words)
            between = question[raw[i][1]:raw[i + n - 1][1] + len(raw[i + n - 1][0])]
            if _BREAK.search(between):  # an n-gram does not cross a quote or a comma
                continue
            if len(text) < 3 or text.replace(" ", "").replace(".", "").isdigit():
                continue
            content = [w for w in low if w not in STOPWORDS]
            has_digit = any(any(ch.isdigit() for ch in w) for w in gram_words)
            has_word = any(not any(ch.isdigit() for ch in w) for w in content)
            # A capitalised word that opens the question is only capitalised by the sentence.
            capitalised = all(w[0].isupper() or w[0].isdigit() for w in gram_words) and \
                any(w[0].isupper() for w in gram_words) and not (i == 0 and n == 1)
            if capitalised and any(w[0].isupper() and w.lower() not in STOPWORDS for w in gram_words):
                kind = "capitalised"
            elif has_digit and has_word:
                kind = "number"
            else:
                kind = "ngram"
            if kind == "ngram" and all(w in vocab for w in content):
                continue
            add(_Span(text, i, i + n, kind))
    order = {"quoted": 0, "capitalised": 1, "number": 2, "ngram": 3}
    return sorted(spans.values(), key=lambda s: (order[s.kind], -(s.end - s.start), s.start))


def _singular(w: str) -> str:
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def match_score(span: str, value: str, favoured: bool = False) -> float:
    """How well ``value`` matches the question ``span``, in [0, 1].

    The same words (ignoring case) score 1.0, the same words up to a plural ``s`` 0.95. Only favoured
    spans (quoted, capitalised, with a number) match loosely: by character similarity plus a small
    bonus, or by being contained in a value at most two words longer; a number in the span must then
    appear in the value too.

    >>> match_score("france", "France"), match_score("dogs", "dog")
    (1.0, 0.95)
    >>> match_score("Frence", "France", favoured=True) > 0.85 > match_score("frence", "France")
    True
    >>> match_score("Chess", "Chess Set", favoured=True), match_score("Tom", "Tom Cruise", favoured=True)
    (0.86, 0.0)
    >>> match_score("3 languages", "Maya Languages", favoured=True)
    0.0
    """
    a, b = _norm_words(span), _norm_words(value)
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    if [_singular(w) for w in a] == [_singular(w) for w in b]:
        return 0.95
    ja, jb = " ".join(a), " ".join(b)
    if not favoured or len(ja) < 5:  # plain words must match exactly; short spans too
        return 0.0
    if not {w for w in a if w.isdigit()} <= set(b):
        return 0.0
    score = difflib.SequenceMatcher(None, ja, jb).ratio() + _FAVOURED_BONUS
    if set(a) <= set(b) and len(b) <= len(a) + 2 and len(ja) >= 0.5 * len(jb):
        score = max(score, 0.86)  # "Chess" for "Chess Set": a value that contains the whole span
    return min(score, 0.99)


def select_values(question: str, index: "ValueIndex", schema: "Schema", *, threshold: float = 0.85,
                  max_values: int = 6, per_column: int = 3, max_n: int = 3,
                  allowed: "Schema | None" = None) -> list[ValueMatch]:
    """The values of ``index`` that ``question`` names (see the module docstring); best first.

    ``allowed`` restricts matches to the columns of that (pruned) schema.
    """
    if not 0.0 < threshold <= 1.0:
        raise ConfigurationError(f"value threshold {threshold} is outside (0, 1]", hint="Use e.g. 0.85.")
    spans = candidate_spans(question, schema_words(schema), max_n=max_n)
    found: list[tuple[ValueMatch, _Span]] = []
    covered: list[tuple[_Span, float]] = []
    for span in spans:
        if any(c.start <= span.start and span.end <= c.end and (c.end - c.start > span.end - span.start or score >= 1.0)
               and c.text.lower() != span.text.lower() for c, score in covered):
            continue
        try:
            hits = index.search(span.text, k=8)
        except SqlweaveError:
            continue
        best = 0.0
        for h in hits:
            score = match_score(span.text, h.value, span.favoured)
            if score < threshold:
                continue
            if allowed is not None and not (allowed.has_table(h.table) and allowed.table(h.table).has_column(h.column)):
                continue
            best = max(best, score)
            found.append((ValueMatch(h.table, h.column, h.value, score, span.text, span.kind), span))
        if best:
            covered.append((span, best))
    kept: list[tuple[ValueMatch, _Span]] = []
    seen: set[tuple[str, str, str]] = set()
    per: dict[tuple[str, str], int] = {}
    found.sort(key=lambda ms: (-ms[0].score, not ms[1].favoured, -(ms[1].end - ms[1].start)))
    for m, span in found:
        key = (m.table.lower(), m.column.lower(), m.value)
        col = key[:2]
        # A span already explained by a better match (same span, higher score) is not matched again.
        if key in seen or per.get(col, 0) >= per_column:
            continue
        if any(k.span == m.span and k.score > m.score for k, _ in kept):
            continue
        seen.add(key)
        per[col] = per.get(col, 0) + 1
        kept.append((m, span))
        if len(kept) >= max_values:
            break
    kept.sort(key=lambda ms: (-ms[0].score, ms[1].start))
    return [m for m, _ in kept]


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def values_text(matches: Iterable[ValueMatch]) -> str:
    """Prompt lines, one per column: ``- table.column: 'v1', 'v2'``."""
    by_col: dict[tuple[str, str], list[str]] = {}
    for m in matches:
        by_col.setdefault((m.table, m.column), []).append(_literal(m.value))
    return "\n".join(f"- {t}.{c}: {', '.join(vs)}" for (t, c), vs in by_col.items())


#: Value indexes kept in memory per resources (the values themselves are persisted on disk).
MAX_INDEXES = 8


def value_index(db: "Database", resources: "Resources | None" = None) -> "ValueIndex":
    """The database's :class:`~sqlweave.retrieval.values.ValueIndex` that ``resources`` holds (default:
    :func:`~sqlweave.resources.shared_resources`), for the last :data:`MAX_INDEXES` databases (the values
    themselves are persisted on disk by ``ValueIndex.build``)."""
    from ..resources import shared_resources
    from ..retrieval.values import ValueIndex

    res = resources if resources is not None else shared_resources()
    target = db.target
    stamp: tuple[float, int] = (0.0, 0)
    if "://" not in target and Path(target).exists():
        st = Path(target).stat()
        stamp = (st.st_mtime, st.st_size)
    # an access policy's index holds only what it shows; a server's database whose tables or columns changed
    # (its schema read again) gets its index built again
    db.schema()
    key = (target, *stamp, getattr(db, "policy", None), getattr(db, "schema_structure", None))
    return res.get("value_index", key, lambda: ValueIndex.build(db, settings=res.settings), keep=MAX_INDEXES)


@dataclass(frozen=True)
class SelectValues(BaseStage):
    """Put the database values the question names in ``state.values`` and the ``values`` prompt block.

    ``only_prompt_schema`` keeps only values of columns the prompt shows. Placed before
    ``prune_schema`` (as the ``pruned-values`` preset and ``+values`` do), it sees the full schema and
    the pruning keeps the columns of the values it found. Reading the values never fails the
    pipeline: on a database error the stage selects nothing and notes why.

    >>> from sqlweave.llm.fake import FakeLLM
    >>> from sqlweave.database import Database
    >>> from sqlweave.db.demo import demo_database_path
    >>> from sqlweave.pipeline import Pipeline
    >>> from sqlweave.stages import CheckQuestion, RenderSchema, GenerateSQL, ExtractSQL, ExecuteSQL
    >>> pipe = Pipeline("values", (CheckQuestion(), SelectValues(), RenderSchema(), GenerateSQL(), ExtractSQL(),
    ...                            ExecuteSQL()))
    >>> llm = FakeLLM(["SELECT COUNT(*) FROM customers WHERE country = 'Canada'"])
    >>> answer = pipe.run("How many customers live in Canada?", Database.open(demo_database_path()), llm)
    >>> print(llm.calls[0][0][1].content.split("\\n\\n")[-2])
    Values from the database that match the question:
    - customers.country: 'Canada'
    """

    threshold: float = 0.85
    max_values: int = 6
    per_column: int = 3
    max_n: int = 3
    only_prompt_schema: bool = True
    name: str = "select_values"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    provides: ClassVar[tuple[str, ...]] = ("values", "prompt_blocks")

    def __post_init__(self) -> None:
        check_options(self, at_least={"max_values": 0, "per_column": 1, "max_n": 1}, between={"threshold": (0.0, 1.0)})

    def __call__(self, state: State) -> None:
        state.values = []
        state.prompt_blocks["values"] = ""
        try:
            index = value_index(state.db, state.resources)
        except SqlweaveError as err:
            state.note(values=[], skipped=f"{err.code}: {err.message}")
            return
        allowed = state.prompt_schema if self.only_prompt_schema else None
        found = select_values(state.question, index, state.schema, threshold=self.threshold,
                              max_values=self.max_values, per_column=self.per_column, max_n=self.max_n,
                              allowed=allowed)
        state.values = list(found)
        state.prompt_blocks["values"] = headed_block(VALUES_HEADER, values_text(found))
        state.note(values=[m.as_dict() for m in found], indexed=len(index))
