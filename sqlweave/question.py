"""Checks on the question before any model time is spent.

>>> looks_english("How many singers are there?")
True
>>> looks_english("Combien de chanteurs y a-t-il dans la base ?")
False
>>> looks_english("歌手有多少人？")
False
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_EN = frozenset(
    "the a an of and or in on for with to from by is are was were what which who whom whose how many much "
    "list show give find all each every per than more less most least number count average total name names "
    "there do does did have has that this these those their its be not only".split()
)
_OTHER = {
    "French": frozenset("le la les des du de un une est sont quel quelle quels quelles combien dans pour avec "
                        "par qui que il elle ils y a-t-il au aux".split()),
    "Spanish": frozenset("el la los las del de un una es son cuál cuáles cuántos cuántas en para con por que "
                         "hay qué quién".split()),
    "German": frozenset("der die das den dem des ein eine ist sind welche welcher wie viele viel mit für von "
                        "und gibt es wer".split()),
    "Portuguese": frozenset("o a os as do da dos das um uma é são qual quais quantos quantas em para com por "
                            "que há quem".split()),
    "Italian": frozenset("il lo la gli le del della dei un una è sono quale quali quanti quante in per con "
                         "che ci chi".split()),
}


def detect_language(question: str) -> str:
    """``"English"``, another language's name, or ``"non-Latin script"``; a heuristic for short questions."""
    letters = [ch for ch in question if ch.isalpha()]
    if letters:
        latin = sum(1 for ch in letters if "LATIN" in unicodedata.name(ch, ""))
        if latin / len(letters) < 0.6:
            return "non-Latin script"
    words = [w.lower() for w in _WORD.findall(question)]
    en = sum(w in _EN for w in words)
    best, best_hits = "English", en
    for lang, vocab in _OTHER.items():
        hits = sum(w in vocab and w not in _EN for w in words)
        if hits >= 2 and hits > best_hits:
            best, best_hits = lang, hits
    return best


def looks_english(question: str) -> bool:
    return detect_language(question) == "English"
