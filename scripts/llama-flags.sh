#!/bin/sh
# Print the CMAKE_ARGS that build llama.cpp (the llama-cpp-python package) safely on this CPU.
#
#   CMAKE_ARGS="$(sh scripts/llama-flags.sh)" pip install --no-cache-dir 'sqlweave[local]'
#   sh scripts/llama-flags.sh --wheels PYTHON     # the folder where scripts/install.sh keeps the built wheel
#
# llama-cpp-python ships as source on PyPI, so pip compiles it (about 4 minutes on 2 cores). By default llama.cpp
# builds for the CPU it is compiled on, with every instruction set that CPU reports. Some virtual machines report
# AVX-512 or AMX and then trap when a program uses them: the model dies with "Illegal instruction". So the build
# is chosen here instead:
#   - x86_64 with AVX2, FMA, F16C and BMI2: those four (the fastest set measured, BENCHMARKS.md "llama.cpp builds");
#   - x86_64 without them: a portable SSE-only build (slower, runs anywhere);
#   - other machines (ARM, Apple silicon): llama.cpp's own choice.
# AVX-512 and AMX stay off on x86_64. SQLWEAVE_LLAMA_FLAGS, when set, is printed instead.
set -eu

LLAMA_VERSION=0.3.36

cpu_has() {  # cpu_has FLAG: whether this CPU reports the instruction set FLAG (lower case, as in /proc/cpuinfo)
  if [ -r /proc/cpuinfo ]; then
    grep -qw "$1" /proc/cpuinfo
  elif command -v sysctl >/dev/null 2>&1; then  # macOS on Intel
    sysctl -n machdep.cpu.features machdep.cpu.leaf7_features 2>/dev/null | tr 'A-Z' 'a-z' | grep -qw "$1"
  else
    return 1
  fi
}

flags() {
  if [ -n "${SQLWEAVE_LLAMA_FLAGS:-}" ]; then
    printf '%s\n' "$SQLWEAVE_LLAMA_FLAGS"
    return
  fi
  off_wide="-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  case "$(uname -m)" in
    x86_64|amd64)
      if cpu_has avx2 && cpu_has fma && cpu_has f16c && cpu_has bmi2; then
        echo "-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON $off_wide"
      else
        echo "This CPU lacks AVX2/FMA/F16C/BMI2: building the portable llama.cpp (slower)." >&2
        echo "-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF $off_wide"
      fi
      ;;
    *)
      echo "-DLLAVA_BUILD=OFF"
      ;;
  esac
}

case "${1:-}" in
  "")
    flags
    ;;
  --version)
    echo "$LLAMA_VERSION"
    ;;
  --wheels)
    # One folder per llama-cpp-python version, build flags and Python version, under the user's cache.
    python="${2:?usage: llama-flags.sh --wheels PYTHON}"
    pyver=$("$python" -c 'import sys; print(sys.version_info[:2])')
    key=$(printf '%s %s %s' "$LLAMA_VERSION" "$(flags 2>/dev/null)" "$pyver" | sha256sum | cut -c1-16)
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/sqlweave/wheels/$key"
    ;;
  *)
    echo "usage: sh scripts/llama-flags.sh [--version | --wheels PYTHON]" >&2
    exit 2
    ;;
esac
