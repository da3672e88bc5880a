#!/usr/bin/env bash
# The web page's third-party JavaScript, taken from npm packages and kept in sqlweave/web/vendor/.
#
#   scripts/vendor-js.sh                   fetch every package named in sqlweave/web/vendor/vendor.json (npm pack),
#                                          copy its files and licence, and check each file against its recorded
#                                          SHA-256
#   scripts/vendor-js.sh PACKAGE VERSION   the same for another version of one package, recording new checksums
#
# Chart.js draws the result's bar and line charts; Prism splits SQL into the tokens the page colours. Both are MIT
# licensed and loaded from the page's own origin: the CSP allows no other, and the page works offline. The files
# are committed, so neither installing nor running sqlweave needs npm; this script is how they got there and how
# they are updated. tests/server/test_web.py checks the committed files against the recorded checksums.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENDOR="$ROOT/sqlweave/web/vendor"
command -v npm > /dev/null || { echo "npm is needed to fetch the packages (Debian: apt-get install npm)" >&2; exit 2; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
python3 - "$VENDOR" "$WORK" "$@" <<'PY'
import hashlib, json, shutil, subprocess, sys, tarfile
from pathlib import Path

vendor, work, *update = sys.argv[1:]
vendor, work = Path(vendor), Path(work)
record_path = vendor / "vendor.json"
record = json.loads(record_path.read_text(encoding="utf-8"))
if update and (len(update) != 2 or update[0] not in record):
    sys.exit(f"usage: scripts/vendor-js.sh [PACKAGE VERSION], PACKAGE one of {', '.join(record)}")
failed = False
for name, entry in record.items():
    if update and update[0] != name:
        continue
    version = update[1] if update else entry["version"]
    folder = work / name
    folder.mkdir()
    tgz = subprocess.run(["npm", "pack", "--silent", f"{name}@{version}"], cwd=folder, check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    with tarfile.open(folder / tgz) as tar:
        tar.extractall(folder, filter="data")
    package = folder / "package"
    shutil.copyfile(package / entry["license"], vendor / f"{name}-{Path(entry['license']).name}")
    for file in entry["files"]:
        target = vendor / Path(file).name
        shutil.copyfile(package / file, target)
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
        if update:
            entry["files"][file] = digest
        elif digest != entry["files"][file]:
            print(f"{name} {version}: {file} differs from its recorded checksum ({digest})", file=sys.stderr)
            failed = True
    if update:
        entry["version"] = version
    print(f"{name} {version}: {len(entry['files'])} file(s) copied" + ("" if update else " and checked"))
if update:
    record_path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
sys.exit(1 if failed else 0)
PY
