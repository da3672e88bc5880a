"""The prompts each shipped preset sends on the demo database, as text: the golden files of
``tests/stages/test_prompt_goldens.py`` (the response cache and recorded traces key on these prompts).

    python -m tests.stages.prompt_goldens          # rewrite tests/stages/fixtures/prompts/*.txt

The model is a :class:`~sqlweave.llm.fake.FakeLLM` answering every call with one fixed query (a probability or a
log-probability where a stage asks for one); embeddings come from a hash of the text, so no model is loaded.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from sqlweave.llm.base import GenerationOptions, Message
from sqlweave.llm.fake import FakeLLM

if TYPE_CHECKING:
    from sqlweave.pipeline import Answer

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "prompts"
#: A question that names a stored value (value selection finds Canada) and words of the schema.
QUESTION = "How many customers are from Canada?"
ANSWER = "```sql\nSELECT COUNT(*) FROM customers WHERE country = 'Canada'\n```"
#: A first answer that fails (a column the schema lacks), so that repair and correction stages ask too.
FAILING = "```sql\nSELECT COUNT(*) FROM customers WHERE nation_code = 'CA'\n```"
#: Combinations of addons no preset has, so that every optional prompt block is shown once, with a question that
#: has a word for a table ("clients") and a time ("last month").
COMBINED = ("default+values+link+evidence+time", "rag+simplify+values+link")
COMBINED_QUESTION = "How many clients from Canada ordered last month?"
#: The day "last month" is resolved against.
TODAY = "2026-12-01"
#: What generated evidence says (the answer to the evidence prompt).
EVIDENCE = "Clients are rows of customers; Canada is customers.country = 'Canada'."


class HashEmbedder:
    """Unit vectors drawn from a hash of each text: the same text, the same vector, on every machine."""

    model_id = "hash"
    #: Words given the vector of another (a question's word for a table).
    ALIASES = {"clients": "customers"}

    def encode(self, texts: Sequence[str], **_: Any) -> np.ndarray:
        if not texts:
            return np.zeros((0, 16), dtype=np.float32)
        out = []
        for text in (self.ALIASES.get(t, t) for t in texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(16).astype(np.float32)
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


def _respond(messages: tuple[Message, ...], options: GenerationOptions) -> str:
    if options.choices:
        return " ".join(f"{1 / len(options.choices):.4f}" for _ in options.choices)
    if options.continuation:
        return "-1.0"
    if messages[0].content.startswith("Given a [Database schema]"):
        return EVIDENCE
    return ANSWER


#: Presets whose prompts depend on the embedding model's own token vectors (late interaction), not only on text
#: vectors a stand-in can give.
NEEDS_EMBEDDING_MODEL = ("pruned-dense",)


def presets() -> list[str]:
    from sqlweave.presets import PRESETS

    return sorted(p for p in PRESETS if p not in NEEDS_EMBEDDING_MODEL) + list(COMBINED)


def render(preset: str) -> str:
    """Every prompt ``preset`` sends for :data:`QUESTION` on the demo database, each call under its stage: when
    the first answer runs, then when it fails (:data:`FAILING`)."""
    return "".join(f"##### {title}\n{_calls(preset, first)}" for title, first in
                   (("first answer runs", ()), ("first answer fails", (FAILING,))))


def run(preset: str, first: Sequence[str] = (), *, restate: bool = False, **options: Any) -> "Answer":
    """``preset``'s answer to its question on the demo database (``first``: the model's first answers, then
    :data:`ANSWER`); ``options`` go to :meth:`~sqlweave.pipeline.Pipeline.run`. With ``restate``, the question is
    restated first, as an :class:`~sqlweave.engine.Engine` does with earlier turns."""
    import sqlweave.retrieval.dense as dense
    from sqlweave.database import Database
    from sqlweave.db.demo import demo_database_path
    from sqlweave.presets import build_pipeline
    from sqlweave.resources import Resources
    from sqlweave.stages.interpret_time import InterpretTime

    embedder = HashEmbedder()
    real = dense.get_embedder
    dense.get_embedder = lambda *a, **k: embedder  # type: ignore[assignment]
    try:
        db = Database.open(demo_database_path())
        try:
            question = COMBINED_QUESTION if preset in COMBINED else QUESTION
            pipe = build_pipeline(preset)
            if any(s.name == "interpret_time" for s in pipe.stages):  # resolved on a fixed day, not today's
                pipe = pipe.replace_stage("interpret_time", InterpretTime(today=TODAY))
            if restate:
                from sqlweave.stages.restate import RestateFollowUp

                pipe = pipe.insert_after("check_question", RestateFollowUp())
            return pipe.run(question, db, FakeLLM(first, responder=_respond), resources=Resources(), **options)
        finally:
            db.close()
    finally:
        dense.get_embedder = real  # type: ignore[assignment]


def _calls(preset: str, first: Sequence[str]) -> str:
    answer = run(preset, first)
    parts = []
    for entry in answer.trace:
        for n, call in enumerate(entry.calls, 1):
            parts.append(f"===== {entry.stage} call {n} {call.options.recorded() if call.options else {}}")
            for m in call.messages:
                parts.append(f"----- {m.role}\n{m.content}")
    return "\n".join(parts) + "\n"


def main(argv: list[str]) -> int:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for preset in argv or presets():
        (FIXTURES / f"{preset.replace('+', '_')}.txt").write_text(render(preset), encoding="utf-8")
        print(preset)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
