#!/bin/bash
# Queues a flowmut fuzzing job of N shards and its merge, which runs when every shard has ended.
# Usage: SEEDS=/shared/zoo OUT=/shared/flowmut/job1 examples/cluster/submit-slurm.sh N
set -euo pipefail
N=${1:?number of shards}
here=$(cd "$(dirname "$0")" && pwd)
jid=$(sbatch --parsable --array=0-$((N - 1)) --export=ALL "$here/fuzz.sbatch")
sbatch --dependency=afterany:"$jid" --export=ALL "$here/merge.sbatch"
echo "shards: job $jid (array 0-$((N - 1))); merge queued after it -> $OUT/merged/report.html"
