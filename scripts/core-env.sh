#!/usr/bin/env bash
# A second environment with only sqlweave's core and the test runner (no extras): .venv-core.
# `make test` runs the suite there too; every test that needs an extra is skipped with the extra named.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV=.venv-core
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
fi
STAMP="$VENV/.installed"
WANT=$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  "$VENV/bin/pip" install -q -e ".[test]"
  echo "$WANT" > "$STAMP"
fi
