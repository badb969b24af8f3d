#!/usr/bin/env bash
# The third-party zoo (examples/seeds/make_zoo3p.py: torchvision, timm and transformers models)
# as a user meets it: every file the manifest lists, .pt2 and .pt, is read by `flowmut profile`
# and runs op by op equal to its graph; every .pt2 written back by `flowmut export` loads in
# plain torch.export and gives the outputs of the original program. At least 15 families, from
# the three libraries, with a detector and a transformer language model among them.
# Usage: zoo3p_check.sh FLOWMUT ZOO3P_DIR WORK
set -euo pipefail
FLOWMUT=$1; ZOO=$2; WORK=$3
PY=${TFG_PYTHON:?TFG_PYTHON names the Python with this build\'s torch}
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK"; mkdir -p "$WORK"
export GLOG_minloglevel=2
[ -f "$ZOO/manifest.json" ] || fail "no manifest at $ZOO (make_zoo3p.py)"

"$PY" - "$ZOO/manifest.json" > "$WORK/files" <<'EOF' || fail "the manifest does not cover the families"
import json, sys
entries = json.load(open(sys.argv[1]))
both = [e for e in entries if all("file" in e["formats"].get(k, {}) for k in ("torch.export", "torchscript"))]
fams = {e["family"] for e in both}
libs = {e["library"] for e in both}
tasks = {e["task"] for e in both}
print("# %d seeds, %d families with .pt2 and .pt, libraries %s" % (len(entries), len(fams), sorted(libs)), file=sys.stderr)
assert len(fams) >= 15, fams
assert libs == {"torchvision", "timm", "transformers"}, libs
assert {"detection", "segmentation", "language model"} <= tasks, tasks
for e in entries:
    for v in e["formats"].values():
        if "file" in v:
            print(v["file"])
EOF

failed=0
for f in $(cat "$WORK/files"); do
  if ! "$FLOWMUT" profile "$ZOO/$f" > "$WORK/$f.profile" 2>&1; then
    echo "$f: profile exited nonzero"; tail -3 "$WORK/$f.profile"; failed=1; continue
  fi
  grep -q "^check .*max abs diff 0 (equal)" "$WORK/$f.profile" || { echo "$f: op by op differs"; failed=1; }
  case $f in
    *.pt2)
      "$FLOWMUT" export "$ZOO/$f" "$WORK/$f" > "$WORK/$f.export" 2>&1 || { echo "$f: export failed"; cat "$WORK/$f.export"; failed=1; } ;;
  esac
  echo "$f: $(grep -o 'graph  *[0-9]* nodes' "$WORK/$f.profile")"
done
[ $failed = 0 ] || fail "some seeds did not profile or export"

"$PY" - "$ZOO" "$WORK" $(grep '\.pt2$' "$WORK/files") <<'EOF' || fail "a written program differs from its original"
import os, sys, warnings
warnings.simplefilter("ignore")
import torch
zoo, work, files = sys.argv[1], sys.argv[2], sys.argv[3:]
bad = []
for f in files:
    a, b = torch.export.load(os.path.join(zoo, f)), torch.export.load(os.path.join(work, f))
    inputs = torch.load(os.path.join(zoo, f[:-4] + ".inputs.pt"))
    flat = lambda r: r if isinstance(r, (tuple, list)) else (r,)
    d = max((x - y).abs().max().item() for args in inputs
            for x, y in zip(flat(a.module()(*args)), flat(b.module()(*args))))
    print("%s: written back, max abs diff %g" % (f, d))
    if d != 0:
        bad.append(f)
sys.exit(1 if bad else 0)
EOF
echo "PASS"
