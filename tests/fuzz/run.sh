#!/usr/bin/env bash
# Builds the DSL fuzz harness with clang (ASan + UBSan + libFuzzer) and fuzzes for SECONDS
# (default 30) from a seed corpus of the bundled operators and the must-fail files.
#   tests/fuzz/run.sh [SECONDS] [BUILD_DIR]
# Fails on a crash, a sanitizer report, an internal error (E000) or an input that takes longer
# than TFG_FUZZ_TIMEOUT seconds (default 5; the 10-minute acceptance run uses 1 with inputs up
# to 100 KB, i.e. "no input slower than 1 s per 100 KB"). Crashing inputs land in BUILD_DIR.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
secs="${1:-30}"
out="${2:-$src/build/fuzz}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"  # absolute: the fuzzer runs from inside it
if [ ! -f "$out/build.ninja" ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$src/tests/fuzz" -B "$out" -G Ninja -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" >/dev/null
fi
cmake --build "$out" >/dev/null
corpus="$out/corpus"
seeds="$out/seeds"
rm -rf "$seeds"
mkdir -p "$corpus" "$seeds"
i=0
while IFS= read -r -d '' f; do cp "$f" "$seeds/$i.tfg"; i=$((i + 1)); done \
  < <(find "$src/operators" "$src/tests/dsl/must_fail" -name '*.tfg' -print0)
cd "$out"
exec ./fuzz_dsl -max_total_time="$secs" -timeout="${TFG_FUZZ_TIMEOUT:-5}" -max_len=102400 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$out/" "$corpus" "$seeds"
