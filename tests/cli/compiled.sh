#!/usr/bin/env bash
# The compiled configurations of PyTorch 2.x (torch.compile, Inductor, aot_eager), as a user runs
# them: `flowmut configs` lists them as available; a test-only wrong Inductor lowering
# (TFG_TEST_FAULT_INDUCTOR=hardswish_rank2: aten.hardswish wrong by +0.25 on rank-2 inputs only,
# i.e. in MobileNetV3's classifier, deep in a graph of 150+ nodes) makes `flowmut run` on the zoo's
# mobilenet_v3_small report one finding of `inductor`, localised to that hardswish and attributed
# to Inductor (aot_eager agrees with eager), reduced to a repro.py that compiles with
# torch.compile and, on plain PyTorch (no fault there), says NOT REPRODUCED; where plain PyTorch
# has the fault too, the triage names the faulty decomposition (torch's compiler bisector) and
# tries Inductor config flags; without the fault
# a 1-round campaign on the bundled seed (tests/data/tiny_mix.pt, three inputs of one shape) reports
# nothing.
# Usage: compiled.sh FLOWMUT ZOO_DIR WORK
set -euo pipefail
FLOWMUT=$1; ZOO=$2; WORK=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK"; mkdir -p "$WORK"
export GLOG_minloglevel=2
SEED="$ZOO/mobilenet_v3_small.pt"
[ -f "$SEED" ] || fail "$SEED is missing (the zoo fixture makes it)"

"$FLOWMUT" configs > "$WORK/configs.out"
for c in aot_eager inductor inductor_freezing inductor_dynamic export_decomposed inductor_autograd aoti; do
  grep -Eq "^$c +yes " "$WORK/configs.out" || { cat "$WORK/configs.out"; fail "$c is not listed as available"; }
done
echo "ok   flowmut configs lists the seven compiled configurations as available"

CONFIGS=(--config eager_op_by_op --config float64_reference --config aot_eager --config inductor)
PY=${TFG_PYTHON:?TFG_PYTHON names the Python with this build\'s torch}

# The seed alone (round 0 judges it) with the wrong lowering, on its first input (one shape:
# one compile per configuration), reduced to repro.py and issue.md.
"$PY" -c "import sys, torch; x = torch.load(sys.argv[1], weights_only=False); torch.save(x[:1], sys.argv[2])" \
  "$ZOO/mobilenet_v3_small.inputs.pt" "$WORK/one.inputs.pt"
TFG_TEST_FAULT_INDUCTOR=hardswish_rank2 "$FLOWMUT" run "$SEED" --inputs "$WORK/one.inputs.pt" --rounds 0 "${CONFIGS[@]}" \
  --reruns 1 --reduce-budget 900 --out "$WORK/fault" -q > "$WORK/fault.out" 2>&1 \
  || { rc=$?; cat "$WORK/fault.out"; fail "the campaign with the fault exited $rc"; }
"$FLOWMUT" report "$WORK/fault" > /dev/null
F="$WORK/fault/findings.jsonl"
[ -s "$F" ] || { cat "$WORK/fault.out"; fail "no finding with a wrong Inductor lowering"; }
[ "$(wc -l < "$F")" -eq 1 ] || { cat "$F"; fail "one wrong lowering, $(wc -l < "$F") findings"; }
grep -q '"inductor"' "$F" || { cat "$F"; fail "the finding is not inductor's"; }
grep -q 'aot_eager"' "$F" && { cat "$F"; fail "aot_eager was reported too"; }
grep -q 'aten::hardswish' "$F" || { cat "$F"; fail "not localised to aten::hardswish"; }
grep -q '"backend":"Inductor (aot_eager' "$F" || { cat "$F"; fail "not attributed to Inductor"; }
echo "ok   wrong lowering: $(head -c 300 "$F")"
D=$(ls -d "$WORK"/fault/findings/*/ | head -1)
[ -f "$D/repro.py" ] || { cat "$WORK/fault.out"; fail "no repro.py in $D"; }
grep -q "torch.compile" "$D/repro.py" || fail "repro.py does not compile"
# The reduced operator runs under torch.compile on plain PyTorch, which has no such fault.
grep -q "^  inductor " "$D/repro.log" || { cat "$D/repro.log"; fail "repro.py did not run inductor"; }
tail -1 "$D/repro.log" | grep -qx "NOT REPRODUCED" || { cat "$D/repro.log"; fail "a tool-injected fault reproduced on plain PyTorch"; }
grep -q "^### Backend" "$D/issue.md" && grep -q "Inductor" "$D/issue.md" || fail "issue.md names no backend"
grep -q "Not ready to file" "$D/issue.md" || fail "issue.md of a fault that does not reproduce is not marked"
[ ! -f "$D/repro.cpp" ] || fail "a repro.cpp for a compiled configuration (LibTorch cannot compile)"
echo "ok   repro.py on plain PyTorch: NOT REPRODUCED (the fault is tfg's); issue.md names the backend"

# The same finding where plain PyTorch has the fault too (a test-only sitecustomize installs it
# in every Python process): repro.py reproduces it, and flowmut's Inductor triage names the part
# of Inductor. torch's compiler bisector finds the decomposition of aten.hardswish (the fault is
# in Inductor's decomposition table, which aot_eager_decomp_partition applies without Inductor's
# lowering), and the flag search says which config flags, if any, make it go away.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
TFG_TEST_FAULT_INDUCTOR=hardswish_rank2 PYTHONPATH="$SRC/tests/data/fault_inductor" "$FLOWMUT" reduce "$D" \
  > "$WORK/triage.out" 2>&1 || { rc=$?; cat "$WORK/triage.out"; fail "flowmut reduce with the fault in PyTorch exited $rc"; }
tail -1 "$D/repro.log" | grep -qx "REPRODUCED" || { cat "$D/repro.log"; fail "repro.py did not reproduce with the fault in PyTorch"; }
"$PY" - "$D/meta.json" <<'PY' || { cat "$WORK/triage.out"; fail "the triage did not find the faulty decomposition"; }
import json, sys
t = json.load(open(sys.argv[1]))["reduction"]["inductor"]
b = t["bisect"]
assert b.get("backend") == "aot_eager_decomp_partition" and b.get("subsystem") == "decomposition", b
assert "hardswish" in b.get("debug_info", ""), b
assert t["flags_tried"] >= 13 and t["complete"], t
PY
grep -q "^### Which part of Inductor" "$D/issue.md" || fail "issue.md does not say which part of Inductor breaks"
echo "ok   Inductor triage: $(grep '^inductor triage' "$WORK/triage.out")"

# Without the fault: nothing to report on the bundled seed (a program and a compile per input
# shape) and one mutant. (MobileNetV3 is left to the fault above: each of its cold Inductor
# compiles takes a minute and a half on 2 cores.)
"$FLOWMUT" run --reduce-budget 0 "$SRC/tests/data/tiny_mix.pt" --rounds 1 "${CONFIGS[@]}" --out "$WORK/clean" -q > "$WORK/clean.out" 2>&1 \
  || { rc=$?; cat "$WORK/clean.out"; fail "the clean campaign exited $rc"; }
if [ -s "$WORK/clean/findings.jsonl" ]; then cat "$WORK/clean/findings.jsonl"; fail "findings without a fault"; fi
grep -q "^verdicts:" "$WORK/clean.out" || { cat "$WORK/clean.out"; fail "no verdicts"; }
echo "ok   clean: $(grep '^verdicts' "$WORK/clean.out")"

# AOTInductor: the bundled seed and a mutant compiled into a package by the Python worker and run here in C++
# (torch::inductor::AOTIModelPackageLoader) agrees with eager and float64 (a package that did not
# compile, or failed in the C++ runner, would be an exception finding of aoti); the round's
# compile share shows the package was built. Then the seed with the wrong lowering installed in
# the worker (no localisation: each cut would be a package of its own): aoti disagrees.
"$FLOWMUT" run --reduce-budget 0 "$SRC/tests/data/tiny_mix.pt" --rounds 1 --config eager_op_by_op \
  --config float64_reference --config aoti --out "$WORK/aoti" -q > "$WORK/aoti.out" 2>&1 \
  || { rc=$?; cat "$WORK/aoti.out"; fail "the aoti campaign exited $rc"; }
if [ -s "$WORK/aoti/findings.jsonl" ]; then cat "$WORK/aoti/findings.jsonl"; fail "aoti findings without a fault"; fi
"$PY" - "$WORK/aoti/campaign.db" <<'PY' || { cat "$WORK/aoti.out"; fail "aoti did not compile a package"; }
import json, sqlite3, sys
phases = [json.loads(p) for (p,) in sqlite3.connect(sys.argv[1]).execute("select phase_ms from rounds")]
compile_ms = max(p.get("execute.compile", 0.0) for p in phases)
assert compile_ms > 1000, phases
print("aoti package compile: %.1f s" % (compile_ms / 1000))
PY
TFG_TEST_FAULT_INDUCTOR=hardswish_rank2 "$FLOWMUT" run --reduce-budget 0 "$SEED" --inputs "$WORK/one.inputs.pt" --rounds 0 \
  --config eager_op_by_op --config float64_reference --config aoti --no-localise --reruns 0 --out "$WORK/aoti_fault" -q \
  > "$WORK/aoti_fault.out" 2>&1 || { rc=$?; cat "$WORK/aoti_fault.out"; fail "the aoti campaign with the fault exited $rc"; }
"$FLOWMUT" report "$WORK/aoti_fault" > /dev/null
grep -q '"config_b":"aoti"' "$WORK/aoti_fault/findings.jsonl" \
  || { cat "$WORK/aoti_fault.out" "$WORK/aoti_fault/findings.jsonl"; fail "the wrong lowering was not caught under aoti"; }
echo "ok   aoti: agrees on the bundled seed; the wrong lowering in its package is a finding of aoti"
echo "compiled: all checks passed"
