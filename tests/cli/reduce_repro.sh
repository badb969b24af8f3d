#!/usr/bin/env bash
# flowmut reduce on a real LibTorch 1.13 defect, as a user runs it: a campaign finds F2
# (optimize_for_inference's MKLDNN gelu refuses approximate='tanh', docs/findings.md) in a seed
# at round 0; `flowmut reduce` shrinks it to the convolution and the gelu, writes repro.py and
# repro.cpp, which reproduce standalone under plain PyTorch and plain LibTorch, and issue.md. Then: a tool-injected defect
# (tests/data/fault_values, a fake operator registered only inside flowmut) reduces too, and
# its repro.py and repro.cpp say NOT REPRODUCED: plain PyTorch does not have the defect, so
# it is not a framework bug.
# Usage: reduce_repro.sh FLOWMUT SRC WORK
set -euo pipefail
FLOWMUT=$1; SRC=$2; WORK=$3
PY=${TFG_PYTHON:-/usr/bin/python3}   # the Python with the torch of the build under test
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK"; mkdir -p "$WORK"
export GLOG_minloglevel=2

"$PY" "$SRC/tests/data/make_repro_seeds.py" "$WORK" || fail "make_repro_seeds.py"
"$FLOWMUT" run --reduce-budget 0 "$WORK/gelu_tanh_conv.pt" --rounds 1 --out "$WORK/camp" -q --reruns 1 \
  --config eager_op_by_op --config frozen_optimized --config float64_reference > "$WORK/run.out" 2>&1 \
  || { cat "$WORK/run.out"; fail "the campaign failed"; }
id=$(ls "$WORK/camp/findings" | head -1)
[ -n "$id" ] || { cat "$WORK/run.out"; fail "no finding on the gelu seed"; }
F="$WORK/camp/findings/$id"
grep -q '"culprit_op": "aten::gelu"' "$F/meta.json" || fail "the finding is not localised at aten::gelu"

echo "== 1. reduce the real defect"
"$FLOWMUT" reduce "$F" > "$WORK/reduce.out" 2>&1 || { rc=$?; cat "$WORK/reduce.out"; fail "reduce exited $rc"; }
cat "$WORK/reduce.out"
grep -Eq "^reduced: 2 of [0-9]+ operators \(depth 1\), 1 of 2 inputs" "$WORK/reduce.out" \
  || fail "expected conv + gelu (2 operators, depth 1) on one of the two inputs"
grep -q "^repro.py: REPRODUCED" "$WORK/reduce.out" || fail "repro.py did not reproduce"
grep -q "^repro.cpp: REPRODUCED" "$WORK/reduce.out" || { cat "$F/repro_cpp.log" "$F/repro_cpp_build.log" 2>/dev/null; fail "repro.cpp did not reproduce"; }
[ -f "$F/reduced/mutant.pt" ] && [ -f "$F/reduce/progress.json" ] || fail "reduced/ or reduce/progress.json missing"
# Standalone: a copy of the two files alone, run from elsewhere, with nothing of flowmut.
mkdir -p "$WORK/alone" && cp "$F/repro.py" "$F/repro_data.pt" "$WORK/alone/"
grep -q "flowmut\|tfg" <(grep -E "^(import|from) " "$WORK/alone/repro.py") && fail "repro.py imports something besides torch"
(cd / && "$PY" "$WORK/alone/repro.py" > "$WORK/alone/out.txt" 2>&1) || { rc=$?; cat "$WORK/alone/out.txt"; fail "standalone repro.py exited $rc"; }
tail -1 "$WORK/alone/out.txt" | grep -qx "REPRODUCED" || fail "standalone repro.py: last line is not REPRODUCED"
grep -q "frozen_optimized   raised: RuntimeError: mkldnn_gelu" "$WORK/alone/out.txt" || fail "repro.py does not show the error"
grep -q "aten.gelu(v[0-9]*, approximate='tanh')" "$WORK/alone/repro.py" || fail "repro.py does not call gelu with approximate='tanh'"
# repro.cpp's binary, alone with the data, run from elsewhere.
cp "$F/repro" "$WORK/alone/" && (cd / && "$WORK/alone/repro" > "$WORK/alone/cpp.txt" 2>&1) \
  || { rc=$?; cat "$WORK/alone/cpp.txt"; fail "standalone repro (C++) exited $rc"; }
tail -1 "$WORK/alone/cpp.txt" | grep -qx "REPRODUCED" || fail "standalone repro (C++): last line is not REPRODUCED"
grep -q "^#include <tfg\|flowmut/" "$F/repro.cpp" && fail "repro.cpp includes something of flowmut"
grep -q "aten::gelu" "$F/issue.md" && grep -q "frozen_optimized" "$F/issue.md" && grep -q "REPRODUCED" "$F/issue.md" \
  && grep -q "LibTorch" "$F/issue.md" || fail "issue.md lacks the operator, the pair, the repro status or versions"
# A second reduce resumes from the checkpoint: no try is made again.
"$FLOWMUT" reduce "$F" > "$WORK/reduce2.out" 2>&1 || fail "second reduce exited $?"
cmp <(grep "depth" "$WORK/reduce.out") <(grep "depth" "$WORK/reduce2.out") || fail "resumed reduce differs"

echo "== 2. a tool-injected defect is not a framework bug"
"$FLOWMUT" run --reduce-budget 0 "$SRC/tests/data/tiny_mix.pt" --ops "$SRC/tests/data/fault_values/a" --rounds 1 --accept any \
  --policy one-shot --out "$WORK/fault" -q --reruns 1 --config eager_op_by_op --config graph_executor --config float64_reference > "$WORK/fault.out" 2>&1 \
  || { cat "$WORK/fault.out"; fail "fault campaign failed"; }
fid=$(ls "$WORK/fault/findings" | head -1)
[ -n "$fid" ] || { cat "$WORK/fault.out"; fail "no finding with the fault-values seed"; }
set +e
"$FLOWMUT" reduce "$WORK/fault/findings/$fid" > "$WORK/freduce.out" 2>&1
rc=$?
set -e
cat "$WORK/freduce.out"
[ $rc = 1 ] || fail "reduce of a tool-injected defect exited $rc, expected 1 (not reproduced by plain PyTorch)"
grep -q "^repro.py: NOT REPRODUCED" "$WORK/freduce.out" || fail "expected repro.py: NOT REPRODUCED"
grep -q "^repro.cpp: NOT REPRODUCED" "$WORK/freduce.out" || fail "expected repro.cpp: NOT REPRODUCED"
grep -q "Not ready to file" "$WORK/fault/findings/$fid/issue.md" || fail "the issue draft of a tool-injected defect does not say it is not ready to file"
echo "reduce_repro: all checks passed"
