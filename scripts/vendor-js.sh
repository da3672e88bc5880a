#!/usr/bin/env bash
# The web page's third-party JavaScript, taken from its npm package and kept in sqlweave/web/vendor/.
#
#   scripts/vendor-js.sh          fetch the package named in sqlweave/web/vendor/chart.js.json (npm pack), copy
#                                 its file and licence, and check the file against the recorded SHA-256
#   scripts/vendor-js.sh VERSION  the same for another version of chart.js, recording its new checksum
#
# The page draws its bar and line charts with Chart.js (MIT, https://www.chartjs.org), loaded from the page's
# own origin: the CSP allows no other, and the page works offline. The files are committed, so neither
# installing nor running sqlweave needs npm; this script is how they got there and how they are updated.
# tests/server/test_web.py checks the committed file against the recorded checksum.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENDOR="$ROOT/sqlweave/web/vendor"
RECORD="$VENDOR/chart.js.json"
command -v npm > /dev/null || { echo "npm is needed to fetch the package (Debian: apt-get install npm)" >&2; exit 2; }
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$RECORD" "$1"; }
VERSION="${1:-$(field version)}"
FILE="$(field file)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
(cd "$WORK" && npm pack --silent "chart.js@$VERSION" > /dev/null && tar xzf "chart.js-$VERSION.tgz")
cp "$WORK/package/$FILE" "$VENDOR/$(basename "$FILE")"
cp "$WORK/package/LICENSE.md" "$VENDOR/chart.js-LICENSE.md"
SUM="$(sha256sum "$VENDOR/$(basename "$FILE")" | cut -d' ' -f1)"
if [ $# -eq 0 ]; then
  [ "$SUM" = "$(field sha256)" ] || { echo "checksum differs from $RECORD: $SUM" >&2; exit 1; }
  echo "chart.js $VERSION: $FILE matches its recorded checksum"
else
  python3 - "$RECORD" "$VERSION" "$SUM" <<'PY'
import json, sys
path, version, digest = sys.argv[1:]
record = json.load(open(path))
record.update(version=version, sha256=digest, tarball=f"https://registry.npmjs.org/chart.js/-/chart.js-{version}.tgz")
open(path, "w").write(json.dumps(record, indent=2) + "\n")
PY
  echo "chart.js $VERSION copied; checksum recorded in $RECORD"
fi
