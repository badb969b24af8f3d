#!/usr/bin/env bash
# flowmut report, as a user opens it: a campaign on a seed with a real LibTorch defect (F2),
# its finding reduced, then report.html rendered by headless Chromium from disk (no network):
# the screenshot shows the plots (their colours are on the page), the rendered DOM has one
# findings row, the summary, and non-empty plot lines; the finding's page, findings.jsonl.
# Usage: report_render.sh FLOWMUT SRC WORK CHROMIUM
set -euo pipefail
FLOWMUT=$1; SRC=$2; WORK=$3; CHROMIUM=$4
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
sql() { $PY -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("\n".join("|".join(map(str,r)) for r in c.execute(sys.argv[2])))' "$1" "$2"; }
rm -rf "$WORK"; mkdir -p "$WORK"
export GLOG_minloglevel=2
"$PY" "$SRC/tests/data/make_repro_seeds.py" "$WORK" || fail "make_repro_seeds.py"
"$FLOWMUT" run "$WORK/gelu_tanh_conv.pt" --rounds 6 --out "$WORK/camp" -q --reruns 1 --reduce-budget 120 \
  --config eager_op_by_op --config frozen_optimized --config float64_reference > "$WORK/run.out" 2>&1 \
  || { cat "$WORK/run.out"; fail "the campaign failed"; }
"$FLOWMUT" report "$WORK/camp" > "$WORK/report.out" 2>&1 || { cat "$WORK/report.out"; fail "report exited $?"; }
cat "$WORK/report.out"
R="$WORK/camp/report.html"
[ -f "$R" ] && [ -f "$WORK/camp/findings.jsonl" ] || fail "report.html or findings.jsonl missing"
grep -q "https\?://" <(grep -o 'src="[^"]*"\|href="http[^"]*"' "$R") && fail "report.html references the network"
nf=$(sql "$WORK/camp/campaign.db" "select count(*) from findings")
[ "$(wc -l < "$WORK/camp/findings.jsonl")" = "$nf" ] || fail "findings.jsonl does not have one line per finding"
"$PY" -c "
import json, sys
rows = [json.loads(l) for l in open('$WORK/camp/findings.jsonl')]
assert any(r['culprit_op'] == 'aten::gelu' and r.get('reduction', {}).get('repro_py') == 'REPRODUCED' for r in rows), rows
" || fail "findings.jsonl lacks the reduced gelu finding"
id=$(sql "$WORK/camp/campaign.db" "select id from findings where culprit_op = 'aten::gelu'")
grep -q "Issue draft" "$WORK/camp/findings/$id/index.html" || fail "the finding's page has no issue draft"

flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --disable-extensions)
"$CHROMIUM" "${flags[@]}" --window-size=1200,1800 --screenshot="$WORK/shot.png" "file://$R" > "$WORK/chromium.log" 2>&1 \
  || { cat "$WORK/chromium.log"; fail "chromium --screenshot failed"; }
"$CHROMIUM" "${flags[@]}" --dump-dom "file://$R" > "$WORK/dom.html" 2> "$WORK/chromium_dom.log" \
  || { cat "$WORK/chromium_dom.log"; fail "chromium --dump-dom failed"; }
"$PY" - "$WORK/dom.html" "$WORK/shot.png" "$nf" <<'PYEOF' || fail "the rendered report is not what a user should see"
import re, sys
from PIL import Image
dom, shot, nf = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
rows = re.findall(r'<tr class="finding', dom)
assert len(rows) == nf, ("findings rows", len(rows), nf)
assert "aten::gelu" in dom and "REPRODUCED" in dom, "the gelu finding and its repro status"
plots = re.findall(r'<svg class="plot ([a-z]+)"', dom)
assert {"diversity", "rewards", "legality"} <= set(plots), plots
lines = re.findall(r'<polyline class="series"[^>]*points="([^"]*)"', dom)
nonempty = [p for p in lines if len(p.split()) >= 2]
assert len(nonempty) >= 5, ("plot lines with points", len(nonempty), len(lines))
img = Image.open(shot).convert("RGB")
w, h = img.size
px = img.load()
# Pixels of the first two palette colours (series lines, bars): the plots are drawn on screen.
def near(c, ref): return all(abs(a - b) < 40 for a, b in zip(c, ref))
blue = red = 0
for y in range(0, h, 2):
    for x in range(0, w, 2):
        c = px[x, y]
        blue += near(c, (0x1f, 0x77, 0xb4))
        red += near(c, (0xd6, 0x27, 0x28))
assert blue > 200 and red > 20, ("plot colours on screen", blue, red)
print("rendered: %d findings rows, %d plots, %d lines with points, %d/%d plot pixels" % (len(rows), len(plots), len(nonempty), blue, red))
PYEOF
echo "report_render: all checks passed"
