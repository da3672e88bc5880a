"""The language a question is written in, told by py3langid (a naive Bayes model over byte n-grams, 140 labels,
shipped inside the package: no network, no download).

Questions to a database are short and full of English-looking names ("stadium capacity", "Singer names?"),
where any detector is unsure. sqlweave therefore answers ``"English"`` unless another language is clearly
more likely: its probability must be at least :data:`ENGLISH_MARGIN` times English's. Measured on the
Spider questions (dev and train, 8,034 English questions: all ``"English"``) and on the French, German,
Spanish and Chinese questions of ``benchmarks/data/multilingual-spider.json`` (all detected).

>>> detect_language("How many singers are there?")
'English'
>>> detect_language("stadium capacity")
'English'
>>> detect_language("Combien de chanteurs y a-t-il dans la base ?")
'French'
>>> detect_language("Wie viele Hunde gibt es?")
'German'
>>> detect_language("歌手有多少人？")
'Chinese'
>>> detect_language("12345 ?")
'unknown'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .resources import Resources, shared_resources

if TYPE_CHECKING:
    from py3langid.langid import LanguageIdentifier

#: How many times more likely than English another language must be for a question to count as not English.
#: English Spider questions reach at most about 5 ("stadium capacity": Latin 0.32, English 0.06); short
#: questions in other languages written without accents at least 11 ("Kac kopek var?", Afrikaans 0.10 before
#: Turkish 0.07, English 0.009): the margin sits between them.
ENGLISH_MARGIN = 8.0

#: What :func:`detect_language` answers when a question has no letters to tell from.
UNKNOWN = "unknown"

#: English names of py3langid's labels. Varieties of one written language share its name, and their
#: probabilities are added up: short Mandarin questions split between ``zh``, ``wuu`` and ``yue``, and short
#: plain English between ``en`` and ``pcm`` (Nigerian Pidgin, an English-based creole). A label missing here
#: is answered as its code.
_NAMES = dict(item.split(" ", 1) for item in (
    "af Afrikaans|am Amharic|an Aragonese|ar Arabic|arz Arabic|ary Arabic|as Assamese|ace Acehnese|az Azerbaijani|"
    "ba Bashkir|bcl Central Bikol|be Belarusian|bg Bulgarian|bn Bengali|br Breton|bs Bosnian|ca Catalan|"
    "crh Crimean Tatar|cs Czech|cy Welsh|da Danish|de German|dz Dzongkha|el Greek|grc Greek|en English|"
    "eo Esperanto|es Spanish|et Estonian|eu Basque|ext Extremaduran|fa Persian|fi Finnish|fo Faroese|fr French|"
    "fuv Fula|fy Frisian|ga Irish|gcf Guadeloupean Creole|gcr Guianese Creole|gd Scottish Gaelic|gl Galician|"
    "gom Konkani|gu Gujarati|gug Guarani|guw Gun|ha Hausa|he Hebrew|hbo Hebrew|hi Hindi|hr Croatian|"
    "ht Haitian Creole|hu Hungarian|hy Armenian|id Indonesian|ig Igbo|is Icelandic|it Italian|ja Japanese|"
    "jv Javanese|ka Georgian|kab Kabyle|kik Kikuyu|kk Kazakh|km Khmer|kn Kannada|ko Korean|ku Kurdish|sdh Kurdish|"
    "ky Kyrgyz|la Latin|lb Luxembourgish|lg Ganda|lij Ligurian|ln Lingala|lo Lao|lt Lithuanian|ltg Latgalian|"
    "lv Latvian|mg Malagasy|mk Macedonian|ml Malayalam|mn Mongolian|mr Marathi|ms Malay|mt Maltese|my Burmese|"
    "ne Nepali|nl Dutch|no Norwegian|nn Norwegian|nso Northern Sotho|oc Occitan|om Oromo|or Odia|pa Punjabi|"
    "pcm English|pl Polish|ps Pashto|pt Portuguese|qu Quechua|ro Romanian|ru Russian|rw Kinyarwanda|"
    "sa Sanskrit|se Northern Sami|si Sinhala|sk Slovak|sl Slovenian|sn Shona|so Somali|sq Albanian|sr Serbian|"
    "st Southern Sotho|sv Swedish|sw Swahili|ta Tamil|te Telugu|tg Tajik|th Thai|tk Turkmen|tl Tagalog|tr Turkish|"
    "tt Tatar|ug Uyghur|uk Ukrainian|ur Urdu|uz Uzbek|uzs Uzbek|vec Venetian|vi Vietnamese|vo Volapük|wa Walloon|"
    "wuu Chinese|xh Xhosa|yo Yoruba|yue Chinese|zh Chinese|zu Zulu|zxx unknown"
).split("|"))

#: The kind under which :class:`~sqlweave.resources.Resources` keep the model (with the other models in memory).
LANGUAGE_IDENTIFIER = "language_identifier"


def _load() -> "LanguageIdentifier":
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def language_identifier(resources: Resources | None = None) -> "LanguageIdentifier":
    """py3langid's model with probabilities, loaded (about a second) on first use into ``resources``' model store
    (default: :func:`~sqlweave.resources.shared_resources`).

    >>> language_identifier() is language_identifier(Resources(models=shared_resources().models))
    True
    """
    res = resources if resources is not None else shared_resources()
    return res.get(LANGUAGE_IDENTIFIER, "py3langid", _load)


def language_probabilities(question: str, *, resources: Resources | None = None) -> dict[str, float]:
    """Each language's probability for ``question``, by English name, most likely first (the model is the one
    ``resources`` hold, see :func:`language_identifier`).

    >>> probs = language_probabilities("Quels chiens appartiennent à quelqu'un qui habite en Virginie ?")
    >>> next(iter(probs)), probs["French"] > 0.99
    ('French', True)
    """
    total: dict[str, float] = {}
    for code, p in language_identifier(resources).rank(question):
        name = _NAMES.get(code, code)
        total[name] = total.get(name, 0.0) + p
    return dict(sorted(total.items(), key=lambda kv: -kv[1]))


def detect_language(question: str, *, resources: Resources | None = None) -> str:
    """The English name of the language ``question`` is written in (``"English"``, ``"French"``, ``"Chinese"``
    ...), or :data:`UNKNOWN` when it has no letters. English unless another language is clearly more likely
    (:data:`ENGLISH_MARGIN`). The model is the one ``resources`` hold (see :func:`language_identifier`)."""
    if not any(ch.isalpha() for ch in question):
        return UNKNOWN
    probs = language_probabilities(question, resources=resources)
    best, p_best = next(iter(probs.items()))
    if best != "English" and p_best < ENGLISH_MARGIN * probs.get("English", 0.0):
        return "English"
    return best


def is_english(language: str) -> bool:
    """Whether a :func:`detect_language` answer needs no word about the language in prompts: English, or not known."""
    return language in ("English", UNKNOWN)


#: The prompt block (before the question) for a question that is not in English; see :func:`language_block`.
LANGUAGE_BLOCK = (
    "The question is in {language}. Answer it all the same: copy table and column names from the schema "
    "exactly, and write each value as the database stores it, in the language and spelling of its example "
    "rows, even where the question says it in {language}.\n\n"
)


def language_block(language: str | None) -> str:
    """What generation prompts say before the question about its language: nothing for English (or an
    undetected language), so English prompts stay exactly as they were.

    >>> language_block("English")
    ''
    >>> print(language_block("German"), end="")
    The question is in German. Answer it all the same: copy table and column names from the schema exactly, and write each value as the database stores it, in the language and spelling of its example rows, even where the question says it in German.
    <BLANKLINE>
    """
    if not language or is_english(language):
        return ""
    return LANGUAGE_BLOCK.format(language=language)
