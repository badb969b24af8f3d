#!/usr/bin/env bash
# The ONNX configurations (torch.onnx.export + ONNX Runtime), as a user runs them: `flowmut
# configs` lists onnxruntime and onnxruntime_noopt as available; a test-only wrong ONNX model
# (TFG_TEST_FAULT_ONNX=hardswish_rank2: the exported model's HardSwish nodes of rank 2 compute
# +0.25, i.e. the one in MobileNetV3's classifier, deep in a graph of 150+ nodes) makes `flowmut
# run` on the zoo's mobilenet_v3_small report one finding of `onnxruntime`, localised to that
# hardswish by bisection over cuts of the mutant (each cut exported and run in ONNX Runtime) and
# to the faulty ONNX node on the exported graph (its values against eager's, node by node),
# reduced to a repro.py that exports with torch.onnx and runs ONNX Runtime on plain packages (no
# fault there: NOT REPRODUCED) and an issue.md that names ONNX Runtime as the component; where
# plain ONNX Runtime has a fault in one optimiser, the triage names the level and the optimiser;
# without the fault a 1-round campaign on the bundled seed under both ONNX configurations reports nothing.
# Usage: onnx.sh FLOWMUT ZOO_DIR WORK
set -euo pipefail
FLOWMUT=$1; ZOO=$2; WORK=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK"; mkdir -p "$WORK"
export GLOG_minloglevel=2
SEED="$ZOO/mobilenet_v3_small.pt"
[ -f "$SEED" ] || fail "$SEED is missing (the zoo fixture makes it)"
PY=${TFG_PYTHON:?TFG_PYTHON names the Python with this build\'s torch}
SRC=$(cd "$(dirname "$0")/../.." && pwd)

"$FLOWMUT" configs > "$WORK/configs.out"
for c in onnxruntime onnxruntime_noopt; do
  grep -Eq "^$c +yes " "$WORK/configs.out" || { cat "$WORK/configs.out"; fail "$c is not listed as available"; }
done
echo "ok   flowmut configs lists onnxruntime and onnxruntime_noopt as available"

# The seed alone (round 0 judges it) with the wrong ONNX node, on its first input.
"$PY" -c "import sys, torch; x = torch.load(sys.argv[1], weights_only=False); torch.save(x[:1], sys.argv[2])" \
  "$ZOO/mobilenet_v3_small.inputs.pt" "$WORK/one.inputs.pt"
TFG_TEST_FAULT_ONNX=hardswish_rank2 "$FLOWMUT" run "$SEED" --inputs "$WORK/one.inputs.pt" --rounds 0 \
  --config eager_op_by_op --config float64_reference --config onnxruntime --reruns 1 --reduce-budget 600 \
  --out "$WORK/fault" -q > "$WORK/fault.out" 2>&1 \
  || { rc=$?; cat "$WORK/fault.out"; fail "the campaign with the fault exited $rc"; }
"$FLOWMUT" report "$WORK/fault" > /dev/null
F="$WORK/fault/findings.jsonl"
[ -s "$F" ] || { cat "$WORK/fault.out"; fail "no finding with a wrong ONNX node"; }
[ "$(wc -l < "$F")" -eq 1 ] || { cat "$F"; fail "one wrong node, $(wc -l < "$F") findings"; }
grep -q '"config_b":"onnxruntime"' "$F" || { cat "$F"; fail "the finding is not onnxruntime's"; }
grep -q '"kind":"numeric"' "$F" || { cat "$F"; fail "a wrong value is not a numeric finding"; }
grep -q 'aten::hardswish' "$F" || { cat "$F"; fail "not localised to aten::hardswish"; }
# And on the ONNX graph: the node the fault added, exported from the hardswish's FX node.
M=$(ls "$WORK"/fault/findings/*/meta.json | head -1)
grep -q 'first diverging ONNX node: Add `[^`]*__tfg_fault`, exported from FX node `hardswish' "$M" \
  || { cat "$M"; fail "not localised to the faulty ONNX node"; }
echo "ok   wrong ONNX node: $(head -c 300 "$F")"
D=$(ls -d "$WORK"/fault/findings/*/ | head -1)
[ -f "$D/repro.py" ] || { cat "$WORK/fault.out"; fail "no repro.py in $D"; }
grep -q "torch.onnx.export" "$D/repro.py" || fail "repro.py does not export to ONNX"
grep -q "^  onnxruntime " "$D/repro.log" || { cat "$D/repro.log"; fail "repro.py did not run onnxruntime"; }
tail -1 "$D/repro.log" | grep -qx "NOT REPRODUCED" || { cat "$D/repro.log"; fail "a tool-injected fault reproduced on plain packages"; }
grep -q "^### Component" "$D/issue.md" && grep -q "ONNX Runtime (CPU execution provider" "$D/issue.md" \
  || fail "issue.md does not name ONNX Runtime as the component"
grep -q "^onnxruntime 1\." "$D/issue.md" || fail "issue.md does not give onnxruntime's version"
echo "ok   repro.py on plain packages: NOT REPRODUCED (the fault is tfg's); issue.md names ONNX Runtime"

# The same finding where plain ONNX Runtime has a fault (a test-only sitecustomize: a session of a
# model with a HardSwish node returns wrong values at optimisation level extended or above unless
# ConvActivationFusion is disabled): repro.py reproduces it, and flowmut's ONNX Runtime triage
# names the lowest level that shows it and the one optimiser whose disabling makes it go away.
TFG_TEST_FAULT_ORT=1 PYTHONPATH="$SRC/tests/data/fault_onnxruntime" "$FLOWMUT" reduce "$D" \
  > "$WORK/triage.out" 2>&1 || { rc=$?; cat "$WORK/triage.out"; fail "flowmut reduce with the fault in ONNX Runtime exited $rc"; }
tail -1 "$D/repro.log" | grep -qx "REPRODUCED" || { cat "$D/repro.log"; fail "repro.py did not reproduce with the fault in ONNX Runtime"; }
"$PY" - "$D/meta.json" <<'PY' || { cat "$WORK/triage.out"; fail "the triage did not find the faulty optimiser"; }
import json, sys
t = json.load(open(sys.argv[1]))["reduction"]["onnxruntime"]
assert t["level"] == "extended", t
assert t["disabling_flips"] == ["ConvActivationFusion"], t
assert t["optimisers_tried"] >= 30 and t["complete"], t
PY
grep -q "^### Which ONNX Runtime optimisation" "$D/issue.md" && grep -q "Disabling \`ConvActivationFusion\` alone" "$D/issue.md" \
  || fail "issue.md does not name the optimiser"
echo "ok   ONNX Runtime triage: $(grep '^onnxruntime triage' "$WORK/triage.out")"

# Without the fault: the bundled seed and one mutant agree under both ONNX configurations.
"$FLOWMUT" run --reduce-budget 0 "$SRC/tests/data/tiny_mix.pt" --rounds 1 --config eager_op_by_op \
  --config float64_reference --config onnxruntime --config onnxruntime_noopt --out "$WORK/clean" -q > "$WORK/clean.out" 2>&1 \
  || { rc=$?; cat "$WORK/clean.out"; fail "the clean campaign exited $rc"; }
if [ -s "$WORK/clean/findings.jsonl" ]; then cat "$WORK/clean/findings.jsonl"; fail "findings without a fault"; fi
"$PY" - "$WORK/clean/campaign.db" <<'PY' || { cat "$WORK/clean.out"; fail "the ONNX configurations did not run"; }
import json, sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("select phase_ms, extra_json from rounds").fetchall()
compile_ms = max(json.loads(p).get("execute.compile", 0.0) for p, _ in rows)
assert compile_ms > 500, rows  # the export and the session: preparation, not run time
assert not any("unsupported" in (e or "") for _, e in rows), rows
print("export + session: %.1f s" % (compile_ms / 1000))
PY
echo "ok   clean: $(grep '^verdicts' "$WORK/clean.out")"
echo "onnx: all checks passed"
