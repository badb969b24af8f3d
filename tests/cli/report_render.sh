#!/usr/bin/env bash
# report.html as a user opens it: rendered by headless Chromium from disk (no network), for the
# campaign that report_campaign.sh made (the CTest fixture report_campaign): the screenshot
# shows the plots (their colours are on the page), the rendered DOM has one findings row per
# finding, the summary, and non-empty plot lines.
# Usage: report_render.sh WORK CHROMIUM
set -euo pipefail
WORK=$1; CHROMIUM=$2
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
R="$WORK/camp/report.html"
[ -f "$R" ] || fail "$R missing: the report_campaign fixture did not run"
nf=$(wc -l < "$WORK/camp/findings.jsonl")
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
