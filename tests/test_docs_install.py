"""The install the docs describe is the one the scripts do: the llama.cpp flags, the demo's extras, the CI step."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ROOT / "scripts" / "llama-flags.sh"

needs_sh = pytest.mark.skipif(shutil.which("sh") is None or shutil.which("sha256sum") is None,
                              reason="needs a POSIX shell with sha256sum")


def _flags(*args: str, env: dict[str, str] | None = None) -> str:
    base = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"}
    return subprocess.run(["sh", str(FLAGS), *args], env={**base, **(env or {})}, capture_output=True, text=True,
                          check=True).stdout.strip()


@needs_sh
def test_the_llama_flags_never_turn_on_avx512_or_amx() -> None:
    flags = _flags()
    assert "GGML_NATIVE=ON" not in flags
    for wide in ("AVX512", "AMX_TILE", "AMX_INT8", "AMX_BF16"):
        assert f"GGML_{wide}=ON" not in flags
    if re.search(r"GGML_AVX2=", flags):  # x86_64: every set named, none left to the compiler's guess
        assert "GGML_NATIVE=OFF" in flags and "GGML_AVX512=OFF" in flags


@needs_sh
def test_the_llama_flags_can_be_chosen_by_the_user() -> None:
    assert _flags(env={"SQLWEAVE_LLAMA_FLAGS": "-DGGML_NATIVE=OFF -DGGML_AVX=OFF"}) == "-DGGML_NATIVE=OFF -DGGML_AVX=OFF"


@needs_sh
def test_the_wheel_folder_is_keyed_by_version_flags_and_python(tmp_path: Path) -> None:
    first = _flags("--wheels", sys.executable, env={"XDG_CACHE_HOME": str(tmp_path)})
    other = _flags("--wheels", sys.executable, env={"XDG_CACHE_HOME": str(tmp_path), "SQLWEAVE_LLAMA_FLAGS": "-DX=1"})
    assert first.startswith(f"{tmp_path}/sqlweave/wheels/") and first != other
    assert _flags("--version") == re.search(r'"llama-cpp-python==([\d.]+)"',
                                            (ROOT / "pyproject.toml").read_text()).group(1)  # type: ignore[union-attr]


def test_install_sh_takes_its_flags_from_llama_flags_and_keeps_the_cache_private() -> None:
    script = (ROOT / "scripts" / "install.sh").read_text(encoding="utf-8")
    assert "sh scripts/llama-flags.sh" in script and "GGML_AVX2" not in script  # one place chooses the flags
    assert "umask 077" in script and "chmod 700" in script and "chmod 600" in script


def _make_recipe(target: str) -> list[str]:
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(rf"^{re.escape(target)}:([^\n]*)\n((?:\t[^\n]*\n)*)", make, re.M)
    assert match, target
    return [match.group(1).strip()] + [line.strip() for line in match.group(2).splitlines()]


def test_make_demo_installs_only_what_the_demo_needs() -> None:
    deps, *_ = _make_recipe("demo")
    assert deps == "install-demo"
    assert _make_recipe("install-demo")[1:] == ["bash scripts/install.sh local"]


def test_ci_runs_make_test_which_checks_a_clean_pip_install() -> None:
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == "make test"
    assert "bash scripts/check-pip-install.sh" in _make_recipe("test")
    check = (ROOT / "scripts" / "check-pip-install.sh").read_text(encoding="utf-8")
    assert "[local,server]" in check and "--find-links" in check and "sqlweave\" demo" in check
