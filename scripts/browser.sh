#!/usr/bin/env bash
# Make sure a headless-capable Chromium is installed (Debian's `chromium` package) and print its path.
# Idempotent: when the browser is already there it only prints the path. The web page tests call it.
# Usage: scripts/browser.sh            (installs with apt-get when missing; needs root or sudo)
set -euo pipefail

find_browser() {
  local candidate
  for candidate in "${SQLWEAVE_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if path=$(find_browser); then
  echo "$path"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "Chromium is not installed and apt-get is not available: install Chromium and set SQLWEAVE_CHROMIUM to its path." >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO="sudo -n"
else
  echo "Chromium is not installed and installing it needs root: run 'sudo apt-get install -y chromium'." >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "Installing Chromium (Debian package 'chromium') ..." >&2
# A stale package index cannot find the package: refresh it once if the first attempt fails.
if ! $SUDO apt-get install -y -q chromium >&2; then
  $SUDO apt-get update -q >&2
  $SUDO apt-get install -y -q chromium >&2
fi

if path=$(find_browser); then
  echo "$path"
else
  echo "Chromium was installed but no chromium executable was found." >&2
  exit 1
fi
