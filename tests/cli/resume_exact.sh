#!/bin/bash
# Exact resume: a campaign killed (SIGKILL, at whatever point of the round the signal lands)
# at three different rounds and resumed each time makes the same choices as the uninterrupted
# campaign with the same --seed: the same operator, site and parameters, candidate count,
# verdict, reward and acceptance every round, the same metric curve and the same findings.
# usage: resume_exact.sh FLOWMUT SEED_MODEL WORK_DIR [ROUNDS]
set -u
FLOWMUT=$1 SEED=$2 WORK=$3 ROUNDS=${4:-16}
# The binary is copied: a rebuild during the test must not swap the worker under the campaign.
mkdir -p "$WORK" && cp "$FLOWMUT" "$WORK/flowmut" && FM=$WORK/flowmut
# Names of one length: the summary cuts long reasons at a fixed width.
A=$WORK/run-a B=$WORK/run-b
rm -rf "$A" "$B"
fail() { echo "FAIL: $*"; exit 1; }

"$FM" run --reduce-budget 0 "$SEED" --rounds "$ROUNDS" --out "$A" --seed 7 --corpus 3 --return-every 5 -q >"$WORK/a.log" 2>&1 || fail "uninterrupted run: $(tail -3 "$WORK/a.log")"

# Round the checkpoint names (state.json is replaced atomically after every round).
checkpoint_round() { grep -o '"round":[0-9]*' "$1/state.json" 2>/dev/null | head -1 | cut -d: -f2; }

kills=0
for at in 3 7 11; do
  if [ -f "$B/state.json" ]; then
    "$FM" run --reduce-budget 0 --resume --rounds "$ROUNDS" --out "$B" -q >>"$WORK/b.log" 2>&1 &
  else
    "$FM" run --reduce-budget 0 "$SEED" --rounds "$ROUNDS" --out "$B" --seed 7 --corpus 3 --return-every 5 -q >>"$WORK/b.log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 1 1200); do
    r=$(checkpoint_round "$B")
    [ -n "$r" ] && [ "$r" -ge "$at" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  # Let the next round get under way, then kill the campaign and its worker.
  sleep 0.$((RANDOM % 5 + 1))
  kill -0 $pid 2>/dev/null || fail "the campaign ended before round $at: $(tail -3 "$WORK/b.log")"
  pkill -KILL -P $pid 2>/dev/null
  kill -KILL $pid
  wait $pid 2>/dev/null
  kills=$((kills + 1))
  echo "killed at checkpoint round $(checkpoint_round "$B")"
done
"$FM" run --reduce-budget 0 --resume --rounds "$ROUNDS" --out "$B" -q >>"$WORK/b.log" 2>&1 || fail "final resume: $(tail -3 "$WORK/b.log")"

# The summaries without the timings and with the folder names made equal.
norm() {
  "$FM" summary "$1" | sed -e "s|$1|DIR|g" |
    awk '/^ +[0-9]+ (legal|illegal|rejected|finding|worker_failure|no_candidate) /{ $7 = ""; if ($6 != "yes") $6 = "-"; print; next } { print }' |
    sed -e 's/, resumed//' | grep -v '^campaign '
}
norm "$A" >"$WORK/a.txt"
norm "$B" >"$WORK/b.txt"
[ "$(grep -c '^ *[0-9]' "$WORK/a.txt")" -gt "$ROUNDS" ] || fail "the uninterrupted summary lists too few rounds"
if ! diff -u "$WORK/a.txt" "$WORK/b.txt"; then fail "the resumed campaign diverges from the uninterrupted one"; fi
echo "PASS: $kills kills, $ROUNDS rounds, same choices"
