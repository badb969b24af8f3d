#!/usr/bin/env bash
# flowmut fuzz and merge, as a user runs them: three seeds (two of them the same model under two
# names) with three fault-injection operators and LibTorch 1.13's gelu defect.
#  1. One job over all seeds: every campaign runs its round budget; the findings index has one
#     line per signature; a defect reached from several seeds is one finding with several
#     witnesses; report.html and findings.sarif are written.
#  2. The same work as 3 shards, merged: the same signatures as the unsharded job; the shards
#     ran disjoint campaigns that together are the job's; merging in another order, or merging
#     the merge again with a shard, gives the same findings.jsonl byte for byte.
#  3. The status screen under tmux (a terminal): the totals line and one line per job; Ctrl-C
#     stops the job cleanly with the time left recorded, and --resume continues it: the campaign
#     goes on from where it stopped and the job ends within its budget.
#  4. The binary replaced mid-job (a rebuild): later slices still start.
# Usage: fuzz_shards.sh FLOWMUT SRC WORK
set -euo pipefail
FLOWMUT=$1; SRC=$2; WORK=$3
PY=${TFG_PYTHON:-/usr/bin/python3}   # the Python with the torch of the build under test
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK"; mkdir -p "$WORK/seeds" "$WORK/ops"
export GLOG_minloglevel=2
"$PY" "$SRC/tests/data/make_repro_seeds.py" "$WORK/gen" > /dev/null || fail "make_repro_seeds.py"
for name in gelu_tanh_conv gelu_b; do
  cp "$WORK/gen/gelu_tanh_conv.pt" "$WORK/seeds/$name.pt"
  cp "$WORK/gen/gelu_tanh_conv.inputs.pt" "$WORK/seeds/$name.inputs.pt"
done
cp "$SRC/tests/data/tiny_mix.pt" "$SRC/tests/data/tiny_mix.inputs.pt" "$WORK/seeds/"
cp "$SRC"/tests/data/fault_ops/{fault_segv,fault_abort,fault_nan_in_f64}.tfg "$WORK/ops/"
common=(--time 5m --rounds 3 --jobs 2 --ops "$WORK/ops" --policy one-shot --config eager_op_by_op
        --config frozen_optimized --config float64_reference --reruns 1 --timeout 5)

echo "== 1. one job over all seeds"
"$FLOWMUT" fuzz --reduce-budget 0 "$WORK/seeds" "${common[@]}" --out "$WORK/all" > "$WORK/all.out" 2>&1 || { rc=$?; cat "$WORK/all.out"; fail "fuzz exited $rc"; }
cat "$WORK/all.out"
for f in fuzz.json findings.jsonl report.html findings.sarif; do [ -f "$WORK/all/$f" ] || fail "$f missing"; done
"$PY" - "$WORK/all" <<'PYEOF' || fail "the unsharded job's index"
import json, os, re, sys
d = sys.argv[1]
rows = [json.loads(l) for l in open(d + "/findings.jsonl")]
keys = [r["key"] for r in rows]
assert len(keys) == len(set(keys)), "a signature twice in the index"
units = json.load(open(d + "/fuzz.json"))["units"]
assert sorted(u["name"] for u in units) == ["gelu_b-c1", "gelu_tanh_conv-c1", "tiny_mix-c1"], units
assert all(u["done"] and not u["error"] and u["round"] == 4 for u in units), units
kinds = {r["kind"] for r in rows}
assert {"crash", "abort", "nan_inf", "exception"} <= kinds, kinds
segv = [r for r in rows if r["kind"] == "crash"][0]
assert len({w["seed"] for w in segv["witnesses"]}) == 3, segv["witnesses"]
gelu = [r for r in rows if r["culprit_op"] == "aten::gelu"][0]
assert sorted(w["unit"] for w in gelu["witnesses"]) == ["gelu_b-c1", "gelu_tanh_conv-c1"], gelu["witnesses"]
for r in rows:
    assert os.path.isfile(os.path.join(d, r["dir"], "mutant.pt")), r["dir"]
sarif = json.load(open(d + "/findings.sarif"))
assert len(sarif["runs"][0]["results"]) == len(rows)
html = open(d + "/report.html").read()
assert html.count('<tr class="finding') == len(rows)
# Findings of one mechanism (kind, pair, culprit, dtype, device, detail) share a defect id.
mech = lambda k: re.split(r'(?<!\\)\|', k)[:7]
for a in rows:
    for b in rows:
        assert (a["defect"] == b["defect"]) == (mech(a["key"]) == mech(b["key"])), (a["key"], b["key"])
print("index: %d distinct findings, %d witnesses" % (len(rows), sum(len(r["witnesses"]) for r in rows)))
PYEOF

echo "== 2. three shards, merged"
for i in 0 1 2; do
  "$FLOWMUT" fuzz --reduce-budget 0 "$WORK/seeds" "${common[@]}" --shard $i/3 --out "$WORK/s$i" -q > "$WORK/s$i.out" 2>&1 \
    || { rc=$?; cat "$WORK/s$i.out"; fail "shard $i exited $rc"; }
done
"$FLOWMUT" merge "$WORK/s0" "$WORK/s1" "$WORK/s2" --out "$WORK/m" || fail "merge exited $?"
"$FLOWMUT" merge "$WORK/s2" "$WORK/s0" "$WORK/s1" --out "$WORK/m_order" > /dev/null || fail "merge (other order)"
"$FLOWMUT" merge "$WORK/m" "$WORK/s1" --out "$WORK/m_again" > /dev/null || fail "merge (again)"
cmp -s "$WORK/m/findings.jsonl" "$WORK/m_order/findings.jsonl" || fail "merging in another order changed findings.jsonl"
cmp -s "$WORK/m/findings.jsonl" "$WORK/m_again/findings.jsonl" || fail "merging the merge again changed findings.jsonl"
"$FLOWMUT" merge "$WORK/s0" --out "$WORK/s0" > /dev/null 2>&1 && fail "merge accepted its output folder as an input"
"$PY" - "$WORK" <<'PYEOF' || fail "the merged shards are not the unsharded job"
import json, sys
w = sys.argv[1]
keys = lambda d: {json.loads(l)["key"] for l in open(w + "/" + d + "/findings.jsonl")}
assert keys("m") == keys("all"), (keys("m") ^ keys("all"))
units = [{u["name"] for u in json.load(open("%s/s%d/fuzz.json" % (w, i)))["units"]} for i in range(3)]
assert all(len(u) == 1 for u in units) and set().union(*units) == {u["name"] for u in json.load(open(w + "/all/fuzz.json"))["units"]}, units
wit = lambda d: {(json.loads(l)["key"], x["unit"]) for l in open(w + "/" + d + "/findings.jsonl") for x in json.loads(l)["witnesses"]}
assert wit("m") == wit("all"), "the witnesses differ"
print("merged: %d signatures, %d witnesses, as the unsharded job" % (len(keys("m")), len(wit("m"))))
PYEOF

echo "== 3. the status screen in a terminal, Ctrl-C, --resume"
command -v tmux > /dev/null || fail "tmux not found (tools/setup-deps.sh installs it)"
S="fuzz_shards_$$"
tmux kill-session -t "$S" 2> /dev/null || true
tmux new-session -d -s "$S" -x 160 -y 20 "GLOG_minloglevel=2 '$FLOWMUT' fuzz --reduce-budget 0 '$WORK/seeds/tiny_mix.pt' --time 45s --jobs 1 --out '$WORK/tty' --config eager_op_by_op --config float64_reference; echo EXIT=\$?; sleep 60"
screen=""
for _ in $(seq 1 60); do
  sleep 1
  screen=$(tmux capture-pane -p -t "$S")
  grep -q "round  *[1-9]" <<< "$screen" && break
done
echo "$screen" | sed '/^$/d'
grep -q "^fuzz .* left of 45s  jobs 1/1  campaigns 1" <<< "$screen" || { tmux kill-session -t "$S"; fail "no totals line on the status screen"; }
grep -q "^  \[1\] tiny_mix-c1 .* round  *[1-9].* slice .* of " <<< "$screen" || { tmux kill-session -t "$S"; fail "no job line on the status screen"; }
tmux send-keys -t "$S" C-c
for _ in $(seq 1 60); do
  sleep 1
  screen=$(tmux capture-pane -p -t "$S")
  grep -q "EXIT=" <<< "$screen" && break
done
tmux kill-session -t "$S" 2> /dev/null || true
grep -q "EXIT=130" <<< "$screen" || { echo "$screen"; fail "Ctrl-C did not stop the job with status 130"; }
grep -q "continue with: flowmut fuzz --resume" <<< "$screen" || { echo "$screen"; fail "no resume hint after Ctrl-C"; }
before=$("$PY" -c "import json; s=json.load(open('$WORK/tty/fuzz.json')); print(s['units'][0]['round'], s['used_s'])")
read -r round_before used_before <<< "$before"
"$PY" -c "import sys; u=float(sys.argv[1]); sys.exit(0 if 0 < u < 45 else 1)" "$used_before" || fail "used time $used_before after Ctrl-C"
"$FLOWMUT" fuzz --reduce-budget 0 --resume --out "$WORK/tty" > "$WORK/resume.out" 2>&1 || { rc=$?; cat "$WORK/resume.out"; fail "--resume exited $rc"; }
cat "$WORK/resume.out"
"$FLOWMUT" fuzz --reduce-budget 0 --resume --out "$WORK/tty" --time 1h > /dev/null 2>&1 && fail "--resume accepted a new --time"
after=$("$PY" -c "import json; s=json.load(open('$WORK/tty/fuzz.json')); print(s['units'][0]['round'], s['used_s'], s['units'][0]['slices'])")
read -r round_after used_after slices_after <<< "$after"
[ "$round_after" -gt "$round_before" ] || fail "the resumed job did not continue the campaign ($round_before -> $round_after)"
[ "$slices_after" -ge 2 ] || fail "the resumed job ran no slice"
"$PY" -c "import sys; u=float(sys.argv[1]); sys.exit(0 if u < 45 + 40 else 1)" "$used_after" || fail "the job ran $used_after s of a 45 s budget"
echo "== 4. the binary deleted while a job runs (a rebuild): the job's later slices still start"
# A copy of flowmut runs a job of 10-second slices; once its first slice runs, the copy is
# deleted, as a linker deletes the old binary before writing the new one (a failed or slow
# relink leaves no file there). Slices exec the binary the job runs, not its path.
cp "$FLOWMUT" "$WORK/flowmut_copy"
"$WORK/flowmut_copy" fuzz --reduce-budget 0 "$WORK/seeds/tiny_mix.pt" --time 40s --slice 10s --jobs 1 --out "$WORK/rebuilt" \
  --config eager_op_by_op --config float64_reference -q > "$WORK/rebuilt.out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -s "$WORK/rebuilt/logs/tiny_mix-c1.log" ] && break; sleep 0.2; done
rm -f "$WORK/flowmut_copy"
wait $pid || { rc=$?; cat "$WORK/rebuilt.out"; fail "the job whose binary was replaced exited $rc"; }
grep -q "FAILED" "$WORK/rebuilt.out" && { cat "$WORK/rebuilt.out"; fail "a slice failed to start after the binary was replaced"; }
slices=$("$PY" -c "import json; print(json.load(open('$WORK/rebuilt/fuzz.json'))['units'][0]['slices'])")
[ "$slices" -ge 2 ] || { cat "$WORK/rebuilt.out"; fail "only $slices slice(s) ran"; }
echo "ok   $slices slices, the binary deleted after the first"

echo "fuzz_shards: all checks passed (rounds $round_before at Ctrl-C, $round_after after --resume; $used_after s used)"
