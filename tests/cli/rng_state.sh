#!/usr/bin/env bash
# A framework difference in random-number consumption (docs/findings.md F5) is one finding,
# named after the model's random operator: a seed with dropout(x, 0.0, train=True), whose
# TorchScript autodiff draws random numbers where eager does not, gives at round 0 a `state`
# finding autograd_eager vs autograd attributed to aten::dropout, and the mutants of later
# rounds inherit it (and so can become seeds) instead of reporting it again at other
# operators; it reproduces.
# Usage: rng_state.sh FLOWMUT SRC WORK
set -euo pipefail
FLOWMUT=$1; SRC=$2; WORK=$3
PY=${TFG_PYTHON:-/usr/bin/python3}   # the Python with the torch of the build under test
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK"; mkdir -p "$WORK"
export GLOG_minloglevel=2
"$PY" "$SRC/tests/data/make_repro_seeds.py" "$WORK" > /dev/null || fail "make_repro_seeds.py"
"$FLOWMUT" run --reduce-budget 0 "$WORK/dropout_p0.pt" --rounds 8 --out "$WORK/camp" -q --reruns 1 --policy random \
  --config autograd_eager --config autograd > "$WORK/run.out" 2>&1 || { cat "$WORK/run.out"; fail "the campaign failed"; }
cat "$WORK/run.out"
"$PY" - "$WORK/camp/campaign.db" <<'PYEOF' || fail "not one RNG finding at aten::dropout"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("select kind, culprit_op, first_round, message from findings where status != 'flaky'").fetchall()
rng = [r for r in rows if "random number generator consumption" in r[3]]
assert len(rng) == 1, rows
assert rng[0][0] == "state" and rng[0][1] == "aten::dropout" and rng[0][2] == 0, rng
executed = c.execute("select count(*) from rounds where round > 0 and verdict in ('legal', 'finding')").fetchone()[0]
assert executed >= 4, ("too few executed rounds to see inheritance", executed)
inherited = c.execute("select count(*) from rounds where round > 0 and reason like '%inherited from the seed%'").fetchone()[0]
accepted = c.execute("select count(*) from rounds where accepted = 1").fetchone()[0]
assert inherited >= 1 and accepted >= 1, ("mutants showing only the seed's RNG finding inherit it and can become seeds", inherited, accepted)
print("one RNG finding at aten::dropout (round 0) over %d executed rounds; %d inherited it, %d accepted" % (executed, inherited, accepted))
PYEOF
id=$(ls "$WORK/camp/findings" | head -n 1)
"$FLOWMUT" repro "$WORK/camp/findings/$id" > "$WORK/repro.out" 2>&1 || { cat "$WORK/repro.out"; fail "the finding does not reproduce"; }
grep -q "reproduced: yes" "$WORK/repro.out" || fail "repro did not say yes"
echo "rng_state: all checks passed"
