"""Evaluated prompt states of the embedded model, in memory and on disk, so a new process does not pay again
for a prompt prefix (instructions, schema, examples) it evaluated before.

llama.cpp looks a prompt up by its longest cached token prefix and evaluates only what follows. The memory
part keeps recent states (``ram_mb``); the disk part keeps one state per distinct prefix in ``folder`` (at most
``disk_mb``, least recently used removed first), written atomically (temporary file, then rename) with no pickle:
numpy arrays only. A state is written to disk only when no state already there covers all of the prompt but its
last ``NEW_TAIL`` tokens: the next question on the same database (same prefix, another question) does not write
again. Each folder belongs to one model file and context size (the caller names it so).

>>> from pathlib import Path
>>> cache = PromptStates(Path("/tmp/sqlweave-doc-states"), ram_mb=1, disk_mb=1)   # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, BinaryIO, Sequence

import numpy as np

from ..files import write_atomically

#: A prompt whose first tokens (all but this many) a disk state already covers is not written again.
NEW_TAIL = 256


def _prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class PromptStates:
    """A ``llama_cpp`` cache (the ``BaseLlamaCache`` interface) in memory, backed by files in ``folder``."""

    def __init__(self, folder: Path | None, *, ram_mb: int = 1024, disk_mb: int = 2048) -> None:
        self.folder = folder
        self.capacity_bytes = ram_mb << 20
        self.disk_bytes = disk_mb << 20
        self._ram: "OrderedDict[tuple[int, ...], Any]" = OrderedDict()
        self._disk: dict[tuple[int, ...], Path] = {}
        self._lock = threading.Lock()
        self.loaded_from_disk = 0  # states read back from disk (for tests and benchmarks)
        if folder is not None:
            self._scan()

    # --- the llama_cpp cache interface ----------------------------------------------------------------

    @property
    def cache_size(self) -> int:
        return sum(int(s.llama_state_size) for s in self._ram.values())

    def __contains__(self, key: Sequence[int]) -> bool:
        return self._best(tuple(key))[0] > 0

    def __getitem__(self, key: Sequence[int]) -> Any:
        key = tuple(key)
        with self._lock:
            n, found, on_disk = self._best(key)
            if n == 0 or found is None:
                raise KeyError("no cached prompt state shares a prefix")
            if not on_disk:
                self._ram.move_to_end(found)
                return self._ram[found]
            state = self._read(self._disk[found])
            if state is None:
                self._disk.pop(found, None)
                raise KeyError("the cached prompt state could not be read")
            self.loaded_from_disk += 1
            self._put_ram(found, state)
            return state

    def __setitem__(self, key: Sequence[int], value: Any) -> None:
        key = tuple(key)
        with self._lock:
            self._put_ram(key, value)
            if self.folder is None:
                return
            covered = max((_prefix_len(k, key) for k in self._disk), default=0)
            if covered >= len(key) - NEW_TAIL:
                return
            self._write(key, value)

    def in_memory(self) -> list[Any]:
        """The states held in memory, least recently used first."""
        with self._lock:
            return list(self._ram.values())

    # --- memory ---------------------------------------------------------------------------------------

    def _put_ram(self, key: tuple[int, ...], value: Any) -> None:
        self._ram.pop(key, None)
        self._ram[key] = value
        while self.cache_size > self.capacity_bytes and len(self._ram) > 1:
            self._ram.popitem(last=False)

    def _best(self, key: tuple[int, ...]) -> tuple[int, tuple[int, ...] | None, bool]:
        """The longest shared prefix, its cached key, and whether only the disk has it."""
        best: tuple[int, tuple[int, ...] | None, bool] = (0, None, False)
        for k in self._ram:
            n = _prefix_len(k, key)
            if n > best[0]:
                best = (n, k, False)
        for k in self._disk:
            n = _prefix_len(k, key)
            if n > best[0]:
                best = (n, k, True)
        return best

    # --- disk ----------------------------------------------------------------------------------------------

    def _scan(self) -> None:
        assert self.folder is not None
        if not self.folder.is_dir():
            return
        for path in self.folder.glob("*.npz"):
            try:
                with np.load(path, allow_pickle=False) as data:
                    self._disk[tuple(int(t) for t in data["input_ids"])] = path
            except Exception:  # noqa: BLE001 - zipfile, numpy and OS errors alike: a file that cannot be read
                path.unlink(missing_ok=True)  # is dropped, never trusted

    def _write(self, key: tuple[int, ...], value: Any) -> None:
        assert self.folder is not None
        name = hashlib.sha256(np.asarray(key, dtype=np.int64).tobytes()).hexdigest()[:24] + ".npz"
        def save(fh: BinaryIO) -> None:
            np.savez(fh, input_ids=np.asarray(value.input_ids), scores=np.asarray(value.scores),
                     n_tokens=np.asarray([value.n_tokens]), seed=np.asarray([value.seed]),
                     llama_state=np.frombuffer(value.llama_state, dtype=np.uint8))

        if not write_atomically(self.folder / name, save):
            return  # a folder that cannot be made or a full disk costs the speed-up, never the answer
        self._disk[tuple(int(t) for t in np.asarray(value.input_ids))] = self.folder / name
        self._trim()

    def _trim(self) -> None:
        files = sorted(self._disk.items(), key=lambda kv: kv[1].stat().st_mtime if kv[1].exists() else 0)
        total = sum(p.stat().st_size for _, p in files if p.exists())
        while files and total > self.disk_bytes and len(files) > 1:
            k, p = files.pop(0)
            total -= p.stat().st_size if p.exists() else 0
            p.unlink(missing_ok=True)
            self._disk.pop(k, None)

    @staticmethod
    def _read(path: Path) -> Any:
        from llama_cpp.llama import LlamaState

        try:
            with np.load(path, allow_pickle=False) as data:
                blob = data["llama_state"].tobytes()
                state = LlamaState(input_ids=data["input_ids"].astype(np.intc), scores=data["scores"].astype(np.single),
                                   n_tokens=int(data["n_tokens"][0]), llama_state=blob, llama_state_size=len(blob),
                                   seed=int(data["seed"][0]))
            os.utime(path)  # recently used: trimmed last
            return state
        except Exception:  # noqa: BLE001 - zipfile, numpy and OS errors alike: the speed-up is lost, not the answer
            path.unlink(missing_ok=True)
            return None
