"""Evaluated prompt states kept on disk: found by longest prefix, written once per prefix, atomic, bounded, and a
file that cannot be read is dropped (never trusted)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sqlweave.llm.prompt_states import NEW_TAIL, PromptStates

pytestmark = pytest.mark.extra("local")  # states are llama-cpp-python's LlamaState


def state(tokens: list[int], size: int = 1000):
    from llama_cpp.llama import LlamaState

    blob = bytes(range(256)) * (size // 256 + 1)
    return LlamaState(input_ids=np.asarray(tokens, dtype=np.intc), scores=np.zeros((1, 8), dtype=np.single),
                      n_tokens=len(tokens), llama_state=blob[:size], llama_state_size=size, seed=7)


def test_a_new_process_finds_the_longest_prefix_on_disk(tmp_path: Path) -> None:
    schema = list(range(1000))
    first = PromptStates(tmp_path, ram_mb=1, disk_mb=10)
    first[schema + [5001, 5002]] = state(schema + [5001, 5002])
    assert len(list(tmp_path.glob("*.npz"))) == 1
    again = PromptStates(tmp_path, ram_mb=1, disk_mb=10)  # another process: empty memory
    found = again[schema + [7001]]  # another question on the same schema
    assert again.loaded_from_disk == 1 and list(found.input_ids) == schema + [5001, 5002]
    assert found.seed == 7 and found.llama_state == state(schema + [1]).llama_state
    again[schema + [7001, 7002]] = state(schema + [7001, 7002])  # same prefix: not written again
    assert len(list(tmp_path.glob("*.npz"))) == 1
    other = list(range(5000, 5000 + NEW_TAIL + 10))
    again[other] = state(other)  # another database's prompt: written
    assert len(list(tmp_path.glob("*.npz"))) == 2
    with pytest.raises(KeyError):
        PromptStates(tmp_path)[[99999]]


def test_disk_is_bounded_and_unreadable_files_are_dropped(tmp_path: Path) -> None:
    cache = PromptStates(tmp_path, ram_mb=1, disk_mb=1)
    for i in range(4):
        tokens = [i * 10_000 + t for t in range(NEW_TAIL + 5)]
        cache[tokens] = state(tokens, size=400_000)
    assert sum(p.stat().st_size for p in tmp_path.glob("*.npz")) <= 1 << 20
    assert not list(tmp_path.glob("*.tmp"))
    (tmp_path / "torn.npz").write_bytes(b"PK\x03\x04 cut short")
    reopened = PromptStates(tmp_path, ram_mb=1, disk_mb=1)
    assert not (tmp_path / "torn.npz").exists() and len(reopened._disk) >= 1


def test_without_a_folder_it_is_a_memory_cache(tmp_path: Path) -> None:
    cache = PromptStates(None, ram_mb=1)
    cache[[1, 2, 3]] = state([1, 2, 3])
    assert [1, 2, 4] in cache and list(cache[[1, 2, 4]].input_ids) == [1, 2, 3] and cache.loaded_from_disk == 0
