#!/usr/bin/env bash
# End-to-end campaign checks, as a user runs them: a campaign on the default seed, fault
# injection (the campaign survives every fault and records exactly one finding per fault), and
# kill -9 followed by --resume (no reported finding is lost).
# Usage: run_campaign_e2e.sh FLOWMUT SRC WORK
set -euo pipefail
FLOWMUT=$1 SRC=$2 WORK=$3
PY=${TFG_PYTHON:-/usr/bin/python3}   # the Python with the torch of the build under test
SEED=$SRC/tests/data/tiny_mix.pt
FAULTS=$SRC/tests/data/fault_ops
rm -rf "$WORK" && mkdir -p "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
sql() { $PY -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("\n".join("|".join(map(str,r)) for r in c.execute(sys.argv[2])))' "$1" "$2"; }

echo "== 1. a campaign on the default seed with the bundled operators"
"$FLOWMUT" run --reduce-budget 0 "$SEED" --rounds 12 --out "$WORK/plain" --config eager_op_by_op --config graph_executor \
  --config float64_reference -q > "$WORK/plain.out" 2>&1 || { rc=$?; cat "$WORK/plain.out"; fail "plain campaign exited $rc"; }
rounds=$(sql "$WORK/plain/campaign.db" "select count(*) from rounds")
[ "$rounds" = 13 ] || fail "expected 13 recorded rounds (round 0 is the seed), found $rounds"
[ "$(sql "$WORK/plain/campaign.db" "select op from rounds where round = 0")" = "(seed)" ] || fail "round 0 does not judge the seed"
legal=$(sql "$WORK/plain/campaign.db" "select count(*) from rounds where verdict in ('legal','finding')")
[ "$legal" -ge 1 ] || fail "no legal mutant in 12 rounds"
sql "$WORK/plain/campaign.db" "select count(*) from metrics" | grep -qv '^0$' || fail "no metrics checkpoint"
"$FLOWMUT" summary "$WORK/plain" > "$WORK/summary.out" || fail "summary failed"
# a campaign is deterministic for a given --seed: the same operators at the same sites
"$FLOWMUT" run --reduce-budget 0 "$SEED" --rounds 12 --out "$WORK/plain2" --config eager_op_by_op --config graph_executor \
  --config float64_reference -q > "$WORK/plain2.out" 2>&1 || { cat "$WORK/plain2.out"; fail "second plain campaign failed"; }
q="select round || ' ' || op || ' ' || site from rounds order by round"
[ "$(sql "$WORK/plain/campaign.db" "$q")" = "$(sql "$WORK/plain2/campaign.db" "$q")" ] \
  || fail "two campaigns with the same --seed chose different mutations"
grep -q "verdicts:" "$WORK/summary.out" || fail "summary has no verdict counts"
# an existing campaign is never overwritten by accident
if "$FLOWMUT" run --reduce-budget 0 "$SEED" --rounds 2 --out "$WORK/plain" -q > "$WORK/again.out" 2>&1; then fail "overwrote a campaign"; fi
grep -q "already holds a campaign" "$WORK/again.out" || { cat "$WORK/again.out"; fail "no clear message for an occupied folder"; }

echo "== 2. fault injection: segfault, abort, hang, unbounded allocation, NaN in one configuration"
"$FLOWMUT" run --reduce-budget 0 "$SEED" --ops "$FAULTS" --policy one-shot --rounds 8 --out "$WORK/fault" --timeout 5 \
  --rss-limit-mb 256 --reruns 1 --config eager_op_by_op --config float64_reference -q > "$WORK/fault.out" 2>&1 \
  || { cat "$WORK/fault.out"; fail "the campaign did not survive the faults"; }
rounds=$(sql "$WORK/fault/campaign.db" "select count(*) from rounds")
[ "$rounds" = 9 ] || fail "fault campaign: expected 9 rounds, found $rounds"
kinds=$(sql "$WORK/fault/campaign.db" "select distinct kind from findings order by kind" | tr '\n' ' ')
echo "finding kinds: $kinds"
[ "$kinds" = "abort crash hang nan_inf out_of_memory " ] || { cat "$WORK/fault.out"; fail "expected a finding of every fault kind, got: $kinds"; }
# each finding is attributed to the fault operator that causes it (crashes and the NaN in one
# configuration are localised to it), once per fault and input state class
bad=$(sql "$WORK/fault/campaign.db" "select count(*) from findings where culprit_op not like 'tfg_fault::%'")
[ "$bad" = 0 ] || { sql "$WORK/fault/campaign.db" "select key from findings"; fail "$bad finding(s) not attributed to a fault operator"; }
dups=$(sql "$WORK/fault/campaign.db" "select count(*) - count(distinct kind || culprit_op || key) from findings")
[ "$dups" = 0 ] || fail "duplicate findings"
sql "$WORK/fault/campaign.db" "select title from findings where kind='crash'" | grep -q "SIGSEGV" || fail "crash title lacks SIGSEGV"
sql "$WORK/fault/campaign.db" "select key from findings where kind='crash'" | grep -q "tfg_fault_segv_here" || fail "crash signature lacks the faulting frame"
for d in $(sql "$WORK/fault/campaign.db" "select dir from findings"); do
  [ -s "$WORK/fault/$d/mutant.pt" ] && [ -s "$WORK/fault/$d/meta.json" ] || fail "finding folder $d is incomplete"
done
# every stored finding replays from its folder alone
for d in $(sql "$WORK/fault/campaign.db" "select dir from findings"); do
  "$FLOWMUT" repro "$WORK/fault/$d" --timeout 5 --rss-limit-mb 256 > "$WORK/repro.out" 2>&1 \
    || { cat "$WORK/repro.out"; fail "flowmut repro $d did not reproduce the finding"; }
done

# a mutant that produced a finding never becomes a seed (healthy acceptance)
[ "$(sql "$WORK/fault/campaign.db" "select count(*) from rounds where verdict = 'finding' and accepted = 1")" = 0 ] \
  || fail "a mutant with a finding was accepted as a seed"

echo "== 3. kill -9 mid-campaign, then --resume: no reported finding is lost"
"$FLOWMUT" run --reduce-budget 0 "$SEED" --ops "$FAULTS" --policy random --rounds 14 --out "$WORK/kill" --timeout 5 \
  --rss-limit-mb 256 --reruns 0 --config eager_op_by_op --config float64_reference -q > "$WORK/kill.out" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  n=$(sql "$WORK/kill/campaign.db" "select count(*) from findings" 2>/dev/null || echo 0)
  [ "${n:-0}" -ge 2 ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
before=$(sql "$WORK/kill/campaign.db" "select id from findings order by id" | tr '\n' ' ')
[ -n "$before" ] || fail "no finding was reported before the kill"
echo "reported before kill -9: $before"
"$FLOWMUT" run --reduce-budget 0 --resume --out "$WORK/kill" --rounds 14 --ops "$FAULTS" --policy random --timeout 5 --rss-limit-mb 256 \
  --reruns 0 --config eager_op_by_op --config float64_reference -q > "$WORK/resume.out" 2>&1 \
  || { cat "$WORK/resume.out"; fail "resume failed"; }
after=$(sql "$WORK/kill/campaign.db" "select id from findings order by id" | tr '\n' ' ')
for id in $before; do
  case " $after " in *" $id "*) ;; *) fail "finding $id was lost by kill -9 + resume" ;; esac
done
rounds=$(sql "$WORK/kill/campaign.db" "select count(*) from rounds")
[ "$rounds" = 15 ] || fail "resumed campaign: expected 15 rounds, found $rounds"
echo "== 4. round 0, localisation and inheritance: a graph-executor defect in the seed, a second one added"
VALUES=$SRC/tests/data/fault_values
C3="--config eager_op_by_op --config graph_executor --config float64_reference"
"$FLOWMUT" run --reduce-budget 0 "$SEED" --ops "$VALUES/a" --rounds 1 --accept any --policy one-shot --out "$WORK/va" $C3 --reruns 1 -q \
  > "$WORK/va.out" 2>&1 || { cat "$WORK/va.out"; fail "campaign with the wrong_in_graph fault failed"; }
[ "$(sql "$WORK/va/campaign.db" "select culprit_op from findings")" = "tfg_fault::wrong_in_graph" ] \
  || { cat "$WORK/va.out"; fail "the graph-executor defect was not localised to tfg_fault::wrong_in_graph"; }
# The accepted mutant (it carries the defect) is the seed of a second campaign.
"$FLOWMUT" run --reduce-budget 0 "$WORK/va/current.pt" --inputs "$WORK/va/inputs.pt" --ops "$VALUES/b" --rounds 4 --accept any \
  --policy one-shot --out "$WORK/vb" $C3 --reruns 1 -q > "$WORK/vb.out" 2>&1 \
  || { cat "$WORK/vb.out"; fail "campaign on the defective seed failed"; }
[ "$(sql "$WORK/vb/campaign.db" "select culprit_op from findings where first_round = 0")" = "tfg_fault::wrong_in_graph" ] \
  || { cat "$WORK/vb.out"; fail "round 0 did not report the seed's own disagreement, localised"; }
# A second, different defect on the same configuration pair is a new finding, localised to it.
[ "$(sql "$WORK/vb/campaign.db" "select culprit_op from findings where first_round = 1 and config_b = 'graph_executor'")" = "tfg_fault::wrong_in_graph_b" ] \
  || { cat "$WORK/vb.out"; fail "the second divergence on eager_op_by_op vs graph_executor was not reported as new"; }
# Mutants that show only what their seed shows inherit it: no new finding in those rounds.
inh=$(sql "$WORK/vb/campaign.db" "select count(*) from rounds where round > 1 and reason like '%inherited%'")
[ "$inh" -ge 1 ] || { sql "$WORK/vb/campaign.db" "select round, verdict, reason from rounds"; fail "no round inherited the seed's disagreement"; }
[ "$(sql "$WORK/vb/campaign.db" "select count(*) from findings")" = 2 ] || fail "inherited disagreements became findings"
for d in $(sql "$WORK/vb/campaign.db" "select dir from findings"); do
  "$FLOWMUT" repro "$WORK/vb/$d" --timeout 10 > "$WORK/repro.out" 2>&1 || { cat "$WORK/repro.out"; fail "flowmut repro $d did not reproduce"; }
  grep -q "localised to tfg_fault::" "$WORK/repro.out" || { cat "$WORK/repro.out"; fail "repro of $d did not localise"; }
done

echo "== 5. a performance anomaly is reported only after interleaved re-timing confirms it"
# tfg_fault::slow_in_graph sleeps 300 ms a call under graph_executor only: graph_executor is
# many times its seed ratio slower than eager_op_by_op, every time it is timed.
"$FLOWMUT" run --reduce-budget 0 "$SEED" --ops "$SRC/tests/data/fault_perf" --rounds 1 --policy one-shot --out "$WORK/perf" \
  --config eager_op_by_op --config graph_executor --reruns 1 -q > "$WORK/perf.out" 2>&1 \
  || { rc=$?; cat "$WORK/perf.out"; fail "campaign with the slow_in_graph fault exited $rc"; }
[ "$(sql "$WORK/perf/campaign.db" "select kind || ' ' || config_b || ' ' || status from findings")" = "performance graph_executor reproduced" ] \
  || { cat "$WORK/perf.out"; sql "$WORK/perf/campaign.db" "select key, status from findings"; fail "no confirmed performance finding for graph_executor"; }
msg=$(sql "$WORK/perf/campaign.db" "select message from findings")
echo "$msg" | grep -q "median of 5" && echo "$msg" | grep -q "timed alternately" \
  || fail "the performance finding does not give the interleaved timings: $msg"

echo "== 6. a worker slowed once by a busy machine: a flaky hang, listed apart, not a defect"
# tfg_fault::busy_once sleeps 60 s the first time eager_op_by_op calls it (a marker file shared
# by every process of the campaign), then never again: the round's worker times out as on a
# loaded machine; the reruns in fresh workers reply.
rm -f "$WORK/busy.marker"
TFG_TEST_BUSY_ONCE="$WORK/busy.marker" "$FLOWMUT" run "$SEED" --ops "$SRC/tests/data/fault_busy" --rounds 1 \
  --policy one-shot --out "$WORK/busy" --timeout 5 --config eager_op_by_op --config float64_reference --reruns 2 \
  --reduce-budget 0 -q > "$WORK/busy.out" 2>&1 || { rc=$?; cat "$WORK/busy.out"; fail "campaign with the busy_once fault exited $rc"; }
[ -e "$WORK/busy.marker" ] || { cat "$WORK/busy.out"; fail "the busy_once fault never ran"; }
[ "$(sql "$WORK/busy/campaign.db" "select kind || ' ' || status from findings")" = "hang flaky" ] \
  || { cat "$WORK/busy.out"; sql "$WORK/busy/campaign.db" "select key, status, reliability from findings"; fail "the one-off hang is not a flaky hang"; }
grep -q "^findings: 0 distinct" "$WORK/busy.out" || { cat "$WORK/busy.out"; fail "the flaky hang was counted among the findings"; }
grep -q "flaky, not findings): 1" "$WORK/busy.out" || { cat "$WORK/busy.out"; fail "the flaky hang is not listed apart"; }
grep -q "verdicts:.* finding " "$WORK/busy.out" && { cat "$WORK/busy.out"; fail "the round of the flaky hang is counted as a finding round"; }
"$FLOWMUT" report "$WORK/busy" > "$WORK/busy_report.out" 2>&1 || { rc=$?; cat "$WORK/busy_report.out"; fail "flowmut report exited $rc"; }
grep -q "0 findings and 1 flaky" "$WORK/busy_report.out" || { cat "$WORK/busy_report.out"; fail "flowmut report counts the flaky hang as a finding"; }
grep -q "0 defects" "$WORK/busy/report.html" || { grep -o "[0-9]* defect[^<]*" "$WORK/busy/report.html" | head; fail "report.html counts the flaky hang as a defect"; }

echo "== 7. eager run twice must agree with itself before a pair is judged (PyTorch's triage)"
# tfg_fault::drift_in_eager adds 0.5 x its call count under eager_op_by_op only: eager disagrees
# with graph_executor and with float64, and with itself. Not a finding.
"$FLOWMUT" run --reduce-budget 0 "$SEED" --ops "$SRC/tests/data/fault_drift" --rounds 1 --policy one-shot --out "$WORK/drift" \
  $C3 --reruns 1 -q > "$WORK/drift.out" 2>&1 || { rc=$?; cat "$WORK/drift.out"; fail "campaign with the drift_in_eager fault exited $rc"; }
[ "$(sql "$WORK/drift/campaign.db" "select op || ' ' || verdict from rounds where round = 1")" = "fault_drift_in_eager legal" ] \
  || { cat "$WORK/drift.out"; sql "$WORK/drift/campaign.db" "select round, op, verdict, reason from rounds"; fail "the nondeterministic mutant was not judged legal"; }
[ "$(sql "$WORK/drift/campaign.db" "select count(*) from findings")" = 0 ] \
  || { sql "$WORK/drift/campaign.db" "select key, message from findings"; fail "a nondeterministic eager made a finding"; }

echo "all campaign end-to-end checks passed"
