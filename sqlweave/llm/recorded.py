"""Model answers recorded in an earlier evaluation's traces, answered again without the model.

An evaluation folder keeps every model call of every question in ``traces.jsonl`` (``.gz`` in a checkpoint): the
messages and the answers, not the options. :class:`RecordedLLM` answers a call whose messages and number of samples
were recorded with the recorded answers, and passes every other call to the model it wraps. So a run kept as a
checkpoint can be scored again with today's stages on a machine whose response cache is empty, paying the model
only for the calls today's stages make that the recorded run did not (a new rule that changes a prompt, a new
candidate). Wrapped in the response cache, every answer it gives is stored under the real key, so the next run
needs no recording. A call the backend answers another way than a recording can tell (the embedded model's
samples decoded together, :mod:`sqlweave.llm.parallel`) always goes to the model, and is kept by the response
cache.

Traces keep each call's options (temperature, seed, length, number of samples, the scored text), and a call
is answered from the recording only when it was asked for exactly so: a replay with samples drawn another way
sends those to the model. Traces written before they kept options (``unqualified``) are matched by messages and
number of answers alone, so a replay from them must draw its samples as the recorded run did (``sqlweave eval``
refuses ``--replay`` of such traces with a ``--vote`` option that changes temperature, seed, length or extra
samples). Each recorded answer answers one call: behind the response cache an exact repeat never reaches this
backend, so a second call with the same key is another draw and goes to the model. A lookup that the recording
cannot settle goes to the model too: one key recorded with different answers. In traces without options, a call
that scores a text (``continuation``: a vote's reviewer scoring the question under a query) is looked up with the
question of the recorded line, read from the run's ``results.jsonl`` beside its traces, because two questions of
one database score the same query with the same messages; a bare trace file (no results beside it) is looked up
by messages alone.

>>> import json, pathlib, tempfile
>>> from sqlweave.llm.fake import FakeLLM
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> call = {"messages": [{"role": "user", "content": "q"}], "outputs": ["SELECT 1"]}
>>> _ = (folder / "traces.jsonl").write_text(json.dumps({"id": "dev-1", "trace": [{"calls": [call]}]}) + "\\n")
>>> model = FakeLLM(["SELECT 2"])
>>> llm = RecordedLLM(model, [folder])
>>> [llm.complete([Message("user", "q")]).text, llm.complete([Message("user", "other")]).text]
['SELECT 1', 'SELECT 2']
>>> (llm.answered, llm.passed)
(1, 1)
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from ..text import well_formed
from .base import LLM, Completion, GenerationOptions, Message, Usage, WrappedLLM

_AMBIGUOUS = object()  # one key recorded with different answers


def trace_files(path: Path) -> list[Path]:
    """The trace files of ``path``: the file itself, or a run folder's ``traces.jsonl`` / ``traces.jsonl.gz``."""
    path = Path(path)
    if path.is_file():
        return [path]
    found = [path / name for name in ("traces.jsonl", "traces.jsonl.gz") if (path / name).is_file()]
    if not found:
        raise ConfigurationError(f"no recorded traces at {path}",
                                 hint="Give an evaluation folder (or checkpoint) holding traces.jsonl or "
                                      "traces.jsonl.gz, or one of those files.")
    return found


def _lines(path: Path) -> Iterator[str]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        yield from fh


def call_key(messages: Iterable[Message | dict[str, str]], n: int, scored: str | None = None,
             options: dict[str, Any] | None = None) -> str:
    """What identifies a recorded call: its messages (as the backend sees them), the number of answers and, for a
    call that scores a text, that text; with ``options`` (:meth:`GenerationOptions.recorded`, which traces keep
    since they were added), also how it was asked for."""
    pairs = [(m.role, m.content) if isinstance(m, Message) else (m["role"], m["content"]) for m in messages]
    head: list[Any] = [n, scored] if options is None else [n, scored, options]
    payload = json.dumps([[role, well_formed(content)] for role, content in pairs] + head, ensure_ascii=False,
                         sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def _questions(trace_file: Path) -> dict[str, str]:
    """Each question of the run whose traces are ``trace_file``, by id (none without a results.jsonl beside it)."""
    results = trace_file.parent / "results.jsonl"
    if not results.is_file():
        return {}
    found: dict[str, str] = {}
    for line in _lines(results):
        try:
            row = json.loads(line)
            found[str(row["id"])] = str(row["question"])
        except (ValueError, KeyError, TypeError):
            continue  # a line cut short by an interruption: its question goes by messages alone
    return found


class RecordedLLM(WrappedLLM):
    """Answers calls recorded in ``traces`` (run folders or trace files); passes the rest to ``inner``.

    ``answered`` and ``passed`` count the two kinds of call. The wrapped model's identity is this backend's
    identity, so the response cache keys an answer given here as it keys the model's own.
    """

    def __init__(self, inner: LLM, traces: Sequence[Path]) -> None:
        super().__init__(inner)
        self.answered = 0
        self.passed = 0
        self._recorded: dict[str, Any] = {}
        self._calls = 0
        self._used: set[str] = set()  # keys that answered a call already
        self._by_messages_only = False  # a recording without its questions: scoring calls by messages alone
        #: recorded calls whose trace kept no options (runs from before traces kept them): matched without
        self.unqualified = 0
        #: recorded calls the recorded run answered from its cache, with no first cost kept: replayed, they cost
        #: what that lookup took (a run's seconds then leave out what they first cost)
        self.costless = 0
        for path in traces:
            for file in trace_files(path):
                self._read(file)

    def _read(self, file: Path) -> None:
        questions = _questions(file)
        self._by_messages_only |= not questions
        for number, line in enumerate(_lines(file), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                stages, question = row["trace"], questions.get(str(row.get("id")))
                calls = [(c["messages"], tuple(str(o) for o in c["outputs"]),
                          Usage(int(c.get("prompt_tokens") or 0), int(c.get("completion_tokens") or 0)),
                          # what the answer first cost (traces before cost_seconds: the call's own time)
                          float(c.get("cost_seconds") or c.get("seconds") or 0.0), c.get("options"),
                          c.get("cost_seconds") is None and bool(c.get("cached")))
                         for s in stages for c in s.get("calls", [])]
                if not all(o is None or isinstance(o, dict) for *_, o, _ in calls):
                    raise TypeError("options")
            except (ValueError, KeyError, TypeError) as err:
                raise ConfigurationError(f"{file}, line {number}: not a recorded trace ({type(err).__name__})",
                                         hint="Give the traces an evaluation wrote (sqlweave eval --out).") from None
            for messages, outputs, usage, seconds, options, costless in calls:
                if not outputs or not all(o.strip() for o in outputs):
                    continue  # a failed call was recorded with no answer: nothing to replay
                self._calls += 1
                self.costless += costless
                if options is not None:  # asked for exactly so: the key holds the options (a scored text among them)
                    keys = [call_key(messages, len(outputs), None, options)]
                else:
                    self.unqualified += 1
                    keys = [call_key(messages, len(outputs))]
                    if question is not None and len(outputs) == 1:  # perhaps a call scoring the question
                        keys.append(call_key(messages, 1, question))
                for key in keys:
                    seen = self._recorded.get(key)
                    if seen is None:
                        self._recorded[key] = (outputs, usage, seconds)
                    elif seen is not _AMBIGUOUS and seen[0] != outputs:
                        self._recorded[key] = _AMBIGUOUS

    def __len__(self) -> int:
        """Recorded calls with an answer (some may turn out ambiguous)."""
        return self._calls

    def _key(self, messages: tuple[Message, ...], options: GenerationOptions) -> str:
        answers = len(options.choices) if options.choices else options.n
        exact = call_key(messages, answers, None, options.recorded())
        if exact in self._recorded or not self.unqualified:
            return exact
        if options.continuation is not None:
            key = call_key(messages, 1, options.continuation)
            if key in self._recorded or not self._by_messages_only:
                return key
            return call_key(messages, 1)
        return call_key(messages, answers)

    def _complete(self, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        key = self._key(messages, options)
        recorded = self._recorded.get(key) if key not in self._used else None
        if self.inner.cache_key_params_for(options) != self.inner.cache_key_params():
            # the backend answers this kind of call another way than traces record (samples decoded together):
            # the recording's answer is not the one it would give
            recorded = None
        if isinstance(recorded, tuple):
            self._used.add(key)
            self.answered += 1
            texts, usage, seconds = recorded  # seconds: what the call took in the recorded run
            return Completion(texts, usage, 0.0, self.model_id, cached=True, original_seconds=seconds)
        self.passed += 1
        return self.inner.complete(messages, options)


__all__ = ["RecordedLLM", "call_key", "trace_files"]
