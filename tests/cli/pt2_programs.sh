#!/usr/bin/env bash
# torch.export programs in and out, as a user runs them (LibTorch 2.x build):
#  1. `flowmut profile` reads .pt2 archives made by torch.export.save (a small CNN, torchvision's
#     resnet18, nn.TransformerEncoderLayer) and runs them op by op equal to their graph;
#  2. `flowmut export X.pt2 Y.pt2` writes a program that torch.export.load reads and runs with
#     the outputs of the original program (plain PyTorch, outside flowmut), weights named as before;
#  3. a campaign runs on a .pt2 seed; a mutant it made, written as .pt2, loads in torch.export
#     and computes what the TorchScript mutant computes;
#  4. programs flowmut cannot take are refused with the file, the node and the reason:
#     control flow (torch.cond), dynamic shapes, a model exported in training mode, inputs of
#     other shapes than the program's.
# Usage: pt2_programs.sh FLOWMUT SRC WORK
set -euo pipefail
FLOWMUT=$1; SRC=$2; WORK=$3
PY=${TFG_PYTHON:?TFG_PYTHON names the Python with this build\'s torch}
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK"; mkdir -p "$WORK"
export GLOG_minloglevel=2

"$PY" "$SRC/tests/data/make_pt2_seeds.py" "$WORK" > /dev/null 2>&1 || fail "make_pt2_seeds.py"

# The outputs of plain torch.export.load(A).module() and of B on A's sample inputs, compared.
same_outputs() {
  "$PY" - "$1" "$2" <<'EOF'
import sys, warnings
warnings.simplefilter("ignore")
import torch
a, b = (torch.export.load(p) for p in sys.argv[1:3])
args = a.example_inputs[0]
ra, rb = a.module()(*args), b.module()(*args)
d = (ra - rb).abs().max().item()
names = lambda ep: sorted(s.target for s in ep.graph_signature.input_specs if s.target)
print("max abs diff %g, weights named alike: %s" % (d, names(a) == names(b)))
sys.exit(0 if d == 0 and names(a) == names(b) else 1)
EOF
}

echo "== 1. profile"
for m in small resnet18 encoder; do
  "$FLOWMUT" profile "$WORK/$m.pt2" > "$WORK/$m.profile" 2>&1 || { rc=$?; cat "$WORK/$m.profile"; fail "profile $m.pt2 exited $rc"; }
  grep -q "(torch.export, 3 profiling inputs" "$WORK/$m.profile" || fail "$m: not read as a torch.export program on 3 inputs"
  grep -q "^check .*max abs diff 0 (equal)" "$WORK/$m.profile" || { cat "$WORK/$m.profile"; fail "$m: op by op differs"; }
  echo "$m: $(grep -o 'graph  *[0-9]* nodes' "$WORK/$m.profile")"
done
grep -q "aten::_native_batch_norm_legit_no_training\|aten::batch_norm" "$WORK/small.profile" || fail "small: no batch norm node"

echo "== 2. round trip through flowmut export"
for m in small resnet18 encoder; do
  "$FLOWMUT" export "$WORK/$m.pt2" "$WORK/$m.rt.pt2" > "$WORK/$m.export" 2>&1 || { rc=$?; cat "$WORK/$m.export"; fail "export $m exited $rc"; }
  same_outputs "$WORK/$m.pt2" "$WORK/$m.rt.pt2" || fail "$m: the written program differs from the original"
done
# A .pt2 written by flowmut is read by flowmut again.
"$FLOWMUT" profile "$WORK/resnet18.rt.pt2" | grep -q "max abs diff 0 (equal)" || fail "resnet18.rt.pt2 does not profile"

echo "== 3. a campaign on a .pt2 seed, its mutants written as .pt2"
"$FLOWMUT" run --reduce-budget 0 "$WORK/small.pt2" --rounds 6 --out "$WORK/camp" -q --reruns 1 > "$WORK/run.out" 2>&1 \
  || { cat "$WORK/run.out"; fail "the campaign on small.pt2 failed"; }
grep -q "^verdicts: legal [1-9]" "$WORK/run.out" || { cat "$WORK/run.out"; fail "no legal mutant"; }
mutant=$(ls -t "$WORK"/camp/corpus/*.pt | head -1)
[ "$(basename "$mutant")" != 0.pt ] || fail "the corpus holds only the seed"
"$FLOWMUT" export "$mutant" "$WORK/mutant.pt2" --inputs "$WORK/camp/inputs.pt" > "$WORK/mexport.out" 2>&1 \
  || { cat "$WORK/mexport.out"; fail "export of the mutant to .pt2"; }
"$PY" - "$mutant" "$WORK/mutant.pt2" "$WORK/camp/inputs.pt" <<'EOF' || fail "the .pt2 mutant differs from the TorchScript mutant"
import sys, warnings
warnings.simplefilter("ignore")
import torch
ts, ep = torch.jit.load(sys.argv[1]), torch.export.load(sys.argv[2]).module()
for args in torch.load(sys.argv[3]):
    d = (ts(*args) - ep(*args)).abs().max().item()
    print("mutant: TorchScript vs torch.export max abs diff", d)
    assert d == 0
EOF

echo "== 4. refusals name the file, the node and the reason"
refused() {  # FILE PATTERN...
  local f=$1; shift
  if "$FLOWMUT" profile "$f" > "$WORK/refusal.out" 2>&1; then fail "$f was not refused"; fi
  for p in "$@"; do grep -q -- "$p" "$WORK/refusal.out" || { cat "$WORK/refusal.out"; fail "$f: the message lacks '$p'"; }; done
  cat "$WORK/refusal.out"
}
refused "$WORK/cond.pt2" "$WORK/cond.pt2" "node \`cond\`" "control flow"
refused "$WORK/dynamic.pt2" "$WORK/dynamic.pt2" "symbolic size" "static shapes"
refused "$WORK/train_bn.pt2" "$WORK/train_bn.pt2" "node \`add_\`" "num_batches_tracked" "eval mode"
"$PY" -c "import torch; torch.save([(torch.randn(5, 3, 8, 8),)], '$WORK/batch5.pt')"
if "$FLOWMUT" profile "$WORK/small.pt2" --inputs "$WORK/batch5.pt" > "$WORK/shape.out" 2>&1; then fail "inputs of other shapes accepted"; fi
grep -q "small.pt2: input 1, argument 1 has shape \[5, 3, 8, 8\]; the program was exported for \[2, 3, 8, 8\]" "$WORK/shape.out" \
  || { cat "$WORK/shape.out"; fail "the shape refusal does not say which shapes"; }
# Not an archive at all: the TorchScript reader's message, never an empty one.
head -c 100 "$WORK/small.pt2" > "$WORK/truncated.pt2"
if "$FLOWMUT" profile "$WORK/truncated.pt2" > "$WORK/trunc.out" 2>&1; then fail "a truncated archive was accepted"; fi
grep -q "truncated.pt2: ." "$WORK/trunc.out" || { cat "$WORK/trunc.out"; fail "no message naming the truncated file"; }
echo "PASS"
