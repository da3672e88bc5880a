"""Question skeletons: the question with schema mentions and values masked (Guo et al., 3.1.2).

>>> question_skeleton("How many singers are from France older than 30?", {"singer", "country", "age"}, ["France"])
'How many _ are from _ older than _?'

An apostrophe inside or after a word is a possessive, not the start of a quoted value:

>>> question_skeleton("Which singer's name has the substring 'Jo'? List the singers' ages.", {"singer", "name", "age"})
'Which _ has the substring _? List the _.'
"""

from __future__ import annotations

import re
from typing import Iterable

# A quoted value opens after a non-word character; "head's" and "singers'" are words with a possessive.
_TOKEN = re.compile(r"(?<!\w)\"[^\"]*\"|(?<!\w)'[^']*'(?!\w)|\d+(?:\.\d+)?|\w+(?:'s\b|'(?!\w))?|[^\w\s]")
_POSSESSIVE = re.compile(r"'s?$")
_STOP = frozenset("a an the of in on for to from by and or is are was were be what which who how many much "
                  "with all each every that this these those there their its as at do does did have has".split())


def schema_words(names: Iterable[str]) -> set[str]:
    """Words of table and column names (``song_name`` -> ``song``, ``name``, ``song_name``), lower-cased."""
    words: set[str] = set()
    for n in names:
        low = n.lower()
        words.add(low)
        words.update(w for w in re.split(r"[_\s]+", low) if w)
    return {w for w in words if w not in _STOP and len(w) > 1}


def _matches(token: str, words: set[str]) -> bool:
    t = _POSSESSIVE.sub("", token.lower())
    return t in words or (t.endswith("s") and t[:-1] in words) or (t.endswith("es") and t[:-2] in words)


def question_skeleton(question: str, schema_names: Iterable[str], values: Iterable[str] = ()) -> str:
    """Mask schema words, numbers, quoted strings and the given values with ``_`` (runs collapse)."""
    words = schema_words(schema_names)
    value_words = {w.lower() for v in values for w in re.findall(r"\w+", str(v))}
    out: list[str] = []
    for tok in _TOKEN.findall(question):
        quoted = len(tok) > 1 and tok[0] in "\"'" and tok[-1] == tok[0]
        masked = (quoted or tok[0].isdigit() or _matches(tok, words)
                  or (_matches(tok, value_words) and tok.lower() not in _STOP))
        if masked:
            if not out or out[-1] != "_":
                out.append("_")
        else:
            out.append(tok)
    text = " ".join(out)
    return re.sub(r"\s+([?.,!;:])", r"\1", text)
