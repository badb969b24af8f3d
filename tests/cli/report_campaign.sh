#!/usr/bin/env bash
# flowmut report's input and its files a program reads: a campaign on a seed with a real
# LibTorch defect (F2), its finding reduced (by default: no flag asks for it), then `flowmut report`: report.html references no
# network, findings.jsonl has one line per finding and the reduced gelu finding, the finding's
# page has its issue draft. The CTest fixture report_campaign: report_render.sh (Chromium) and
# report_sarif.sh (SARIF schema) read what this leaves in WORK/camp.
# Usage: report_campaign.sh FLOWMUT SRC WORK
set -euo pipefail
FLOWMUT=$1; SRC=$2; WORK=$3
PY=${TFG_PYTHON:-/usr/bin/python3}   # the Python with the torch of the build under test
fail() { echo "FAIL: $*" >&2; exit 1; }
sql() { $PY -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("\n".join("|".join(map(str,r)) for r in c.execute(sys.argv[2])))' "$1" "$2"; }
rm -rf "$WORK"; mkdir -p "$WORK"
export GLOG_minloglevel=2
"$PY" "$SRC/tests/data/make_repro_seeds.py" "$WORK" || fail "make_repro_seeds.py"
"$FLOWMUT" run "$WORK/gelu_tanh_conv.pt" --rounds 6 --out "$WORK/camp" -q --reruns 1 \
  --config eager_op_by_op --config frozen_optimized --config float64_reference > "$WORK/run.out" 2>&1 \
  || { cat "$WORK/run.out"; fail "the campaign failed"; }
"$FLOWMUT" report "$WORK/camp" > "$WORK/report.out" 2>&1 || { rc=$?; cat "$WORK/report.out"; fail "report exited $rc"; }
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

echo "report_campaign: all checks passed"
