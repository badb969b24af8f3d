#!/usr/bin/env bash
# Puts the SARIF 2.1.0 JSON schema (the OASIS standard's final schema, 2.1.0-rtm.5) at DEST,
# for the report_sarif test. Debian packages no copy of it; Microsoft's npm package
# @microsoft/jest-sarif (MIT) ships it, so it comes from the npm registry, pinned by version and
# checked against its sha256. Re-running it with the file in place costs a checksum.
# Usage: tools/sarif-schema.sh DEST
set -euo pipefail
DEST=$1
PKG=@microsoft/jest-sarif@1.0.0-beta.0
MEMBER=package/lib/schemas/sarif-2.1.0-rtm.5.json
SHA256=2d99159ae54a3eea97f81781cff48780548657c35949f4b7f25e99a2ba4de4f8
ok() { [ -f "$DEST" ] && echo "$SHA256  $DEST" | sha256sum -c --status; }
ok && exit 0
command -v npm > /dev/null || { echo "sarif-schema: npm not found (tools/setup-deps.sh installs it)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$PKG" > /dev/null) || { echo "sarif-schema: npm pack $PKG failed" >&2; exit 1; }
tar -xzf "$tmp"/*.tgz -C "$tmp" "$MEMBER"
mkdir -p "$(dirname "$DEST")"
mv "$tmp/$MEMBER" "$DEST"
ok || { echo "sarif-schema: $DEST does not have the pinned sha256 $SHA256" >&2; rm -f "$DEST"; exit 1; }
echo "sarif-schema: $DEST"
