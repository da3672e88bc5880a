"""Several samples of one prompt decoded together: parallel sequences over the prompt's one evaluated state.

A vote asks the embedded model for ``n`` samples of the same prompt. Drawn one after another, each sample costs
its own decoding steps, and on a CPU one step costs about as much whether it carries one token or four (the
weights are read once per step). Here the prompt is evaluated once (reusing any evaluated prefix, as every call
does), its cells are shared by ``n`` sequences of llama.cpp's unified KV cache (``llama_memory_seq_cp``), and
each decoding step is one ``llama_batch`` holding the next token of every sequence still writing.

Each sequence samples with its own sampler chain, built as llama-cpp-python builds it for a call
(``top_k`` 40, ``top_p`` 0.95, ``min_p`` 0.05, the temperature, then a seeded draw) and seeded ``seed + i`` as
the i-th of ``n`` calls would be: the distribution is the same as sampling one after another; the first token of
each sample is the same too, and later tokens differ only where a batched step's logits differ in the last bits
from a single step's.

>>> texts, usage, timings = sample_together(llama, [{"role": "user", "content": "SELECT 1?"}], n=4,
...                                temperature=0.8, max_tokens=64, seed=1)   # doctest: +SKIP
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .base import Timings, Usage

#: The most sequences one context decodes together (``n_seq_max`` of the context; a larger ``n`` runs in rounds).
MAX_SEQUENCES = 8


@dataclass
class _Sequence:
    sampler: Any
    tokens: list[int]
    text: str = ""
    done: bool = False


def sample_together(llama: Any, messages: Sequence[dict[str, str]], *, n: int, temperature: float, max_tokens: int,
                    seed: int, stop: Sequence[str] = (), should_stop: Callable[[], bool] | None = None,
                    on_sample: Callable[[int, int], None] | None = None) -> tuple[list[str], Usage, Timings]:
    """``n`` sampled answers to the chat ``messages`` (seeded ``seed``, ``seed + 1``, ...), decoded as parallel
    sequences in rounds of at most :data:`MAX_SEQUENCES`; ``should_stop`` is asked between steps (a deadline or a
    cancel), and when it says so the call raises :class:`StoppedError`. The context must have been made with
    ``n_seq_max`` >= min(n, MAX_SEQUENCES) and a unified KV cache (:func:`allow_sequences`)."""
    import llama_cpp

    texts: list[str] = []
    usage = Usage()
    timings = Timings()
    while len(texts) < n:
        # Evaluate the prompt as any call does (its longest evaluated prefix reused, its state kept): the one greedy
        # token this writes is not evaluated, so the context now holds exactly the prompt, and its logits are the
        # last output.
        began = time.perf_counter()
        llama_cpp.llama_perf_context_reset(llama._ctx.ctx)
        first = llama.create_chat_completion(messages=list(messages), temperature=0.0, max_tokens=1)
        evaluated = int(llama_cpp.llama_perf_context(llama._ctx.ctx).n_p_eval)
        prompted = time.perf_counter()
        prompt_tokens = int((first.get("usage") or {}).get("prompt_tokens") or llama.n_tokens)
        # as many sequences as the context has room for beside the prompt (each may write max_tokens)
        room = max(1, (int(llama.context_params.n_ctx) - llama.n_tokens) // max(1, max_tokens))
        k = min(MAX_SEQUENCES, n - len(texts), int(llama.context_params.n_seq_max), room)
        done = len(texts)
        round_texts, generated = _decode(
            llama, llama_cpp, k=k, temperature=temperature, max_tokens=max_tokens, seed=seed + done, stop=stop,
            should_stop=should_stop, on_done=None if on_sample is None else lambda m: on_sample(done + m, n))
        texts += round_texts
        usage = usage + Usage(prompt_tokens, generated)
        timings = timings + Timings(prompted - began, evaluated, time.perf_counter() - prompted)
    return texts, usage, timings


class StoppedError(RuntimeError):
    """The caller's ``should_stop`` said so between two decoding steps (or llama.cpp's abort callback did)."""


def _decode(llama: Any, llama_cpp: Any, *, k: int, temperature: float, max_tokens: int, seed: int,
            stop: Sequence[str], should_stop: Callable[[], bool] | None,
            on_done: Callable[[int], None] | None) -> tuple[list[str], int]:
    ctx = llama._ctx.ctx
    memory = llama_cpp.llama_get_memory(ctx)
    vocab = llama_cpp.llama_model_get_vocab(llama._model.model)
    start = llama.n_tokens
    saved_seed = llama._seed
    seqs: list[_Sequence] = []
    try:
        for i in range(k):
            llama._seed = seed + i  # the sampler chain's draw is seeded from the model's seed, as a call's is
            seqs.append(_Sequence(llama._init_sampler(temp=temperature), []))
    finally:
        llama._seed = saved_seed
    for i in range(1, k):
        llama_cpp.llama_memory_seq_cp(memory, 0, i, 0, start)
    batch = llama_cpp.llama_batch_init(k, 0, 1)
    outputs = [-1] * k  # where each sequence's logits are in the last decode's outputs
    generated = said = 0
    try:
        for step in range(max_tokens):
            for i, seq in enumerate(seqs):
                if seq.done:
                    continue
                token = int(llama_cpp.llama_sampler_sample(seq.sampler.sampler, ctx, outputs[i]))
                if llama_cpp.llama_vocab_is_eog(vocab, token):
                    seq.done = True
                    continue
                seq.tokens.append(token)
                generated += 1
                seq.text = llama.detokenize(seq.tokens).decode("utf-8", errors="ignore")
                cut = min((at for at in (seq.text.find(s) for s in stop if s) if at >= 0), default=-1)
                if cut >= 0:
                    seq.text, seq.done = seq.text[:cut], True
            live = [i for i, seq in enumerate(seqs) if not seq.done]
            if on_done is not None and k - len(live) > said:
                said = k - len(live)
                on_done(said)
            if not live or step == max_tokens - 1:
                break
            if should_stop is not None and should_stop():
                raise StoppedError("stopped between decoding steps")
            batch.n_tokens = len(live)
            for j, i in enumerate(live):
                batch.token[j] = seqs[i].tokens[-1]
                batch.pos[j] = start + len(seqs[i].tokens) - 1
                batch.n_seq_id[j] = 1
                batch.seq_id[j][0] = i
                batch.logits[j] = 1
                outputs[i] = j
            code = llama_cpp.llama_decode(ctx, batch)
            if code != 0:  # 2: aborted by the abort callback (a deadline); others: no room or a failure
                raise StoppedError(f"llama_decode returned {code}") if code == 2 else RuntimeError(
                    f"llama_decode returned {code}")
    finally:
        llama_cpp.llama_batch_free(batch)
        for seq in seqs:
            seq.sampler.close()
        # Leave the context as a call leaves it: the prompt alone, in sequence 0 (its state is what was saved); its
        # last logits are the batch's now, so the next call evaluates the prompt's last token again.
        for i in range(1, k):
            llama_cpp.llama_memory_seq_rm(memory, i, -1, -1)
        llama_cpp.llama_memory_seq_rm(memory, 0, start, -1)
        llama._requires_eval = True
    return [seq.text for seq in seqs], generated


def allow_sequences(llama: Any, n_seq_max: int = MAX_SEQUENCES) -> None:
    """Remake ``llama``'s context so that it holds ``n_seq_max`` sequences in one unified KV cache (the prompt's
    cells shared, not copied); a fresh context, so call it right after loading."""
    import contextlib

    from llama_cpp import _internals

    params = llama.context_params
    if int(params.n_seq_max) >= n_seq_max and bool(params.kv_unified):
        return
    params.n_seq_max = n_seq_max
    params.kv_unified = True
    llama._ctx.close()
    llama._ctx = llama._stack.enter_context(contextlib.closing(
        _internals.LlamaContext(model=llama._model, params=params, verbose=llama.verbose)))
    llama.n_tokens = 0


__all__ = ["MAX_SEQUENCES", "StoppedError", "allow_sequences", "sample_together"]
