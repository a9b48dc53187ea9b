#!/usr/bin/env bash
# Installs what is missing, builds the harnesses in the asan preset's tree (clang, libFuzzer coverage +
# ASan + UBSan; the fuzz build preset) and runs each harness of fuzz/ for a bounded time, starting from a copy of its committed corpus fuzz/corpus/<name>/
# (nothing is written into the repository). Fails on any finding: a crash, a sanitizer report, a leak,
# a hang past -timeout, a memory blow-up past -rss_limit_mb, or a broken contract the harness checks.
# A finding's reproducer is kept in build/asan/findings/<harness>/; run the harness on it to see
# it again (build/asan/fuzz/<harness> FILE).
# Usage: scripts/run-fuzz.sh [seconds-per-harness]   (default 60)
# OF_FUZZ_SEED fixes libFuzzer's seed (default 0: a new random seed each run). CI (run-tests.sh) uses
# seed 1, so that a CI run retraces the inputs that the last one tried and fails only on what the
# change broke; campaigns by hand keep random seeds to explore.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
harnesses=(fuzz_safetensors fuzz_ops fuzz_graph)

scripts/install-deps.sh
cmake --preset asan > /dev/null
cmake --build --preset fuzz

work="$(mktemp -d "${TMPDIR:-/tmp}/oneflow-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export PATH="/usr/lib/llvm-16/bin:$PATH"  # llvm-symbolizer, for symbolised sanitizer reports
export OMP_NUM_THREADS=1  # the harnesses' sessions use one thread; so does oneDNN's OpenMP

failed=()
for h in "${harnesses[@]}"; do
  mkdir -p "$work/$h/corpus" "$work/$h/artifacts" "$work/$h/tmp"
  cp fuzz/corpus/"$h"/* "$work/$h/corpus/"
  dict=()
  if [ -f "fuzz/$h.dict" ]; then dict=(-dict="fuzz/$h.dict"); fi
  echo "=== $h: ${seconds}s from $(ls "$work/$h/corpus" | wc -l) corpus files"
  start=$(date +%s)
  if TMPDIR="$work/$h/tmp" "build/asan/fuzz/$h" -seed="${OF_FUZZ_SEED:-0}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -detect_leaks=1 -max_len=4096 -print_final_stats=1 -artifact_prefix="$work/$h/artifacts/" "${dict[@]}" \
      "$work/$h/corpus" > "$work/$h/log" 2>&1; then
    result=ok
  else
    result=FINDING
    failed+=("$h")
    tail -n 80 "$work/$h/log"
    mkdir -p "build/asan/findings/$h"
    cp "$work/$h/artifacts/"* "build/asan/findings/$h/" 2>/dev/null || true
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$h/log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$h/log")
  cov=$(grep -o 'cov: [0-9]*' "$work/$h/log" | tail -n 1 || true)
  echo "=== $h: $result after $(( $(date +%s) - start ))s: ${execs:-?} runs, ${rate:-?} runs/s, ${cov:-cov: ?}"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "run-fuzz: findings in ${failed[*]} (reproducers in build/asan/findings/)"
  exit 1
fi
echo "run-fuzz: no findings in ${harnesses[*]} (${seconds}s each)"
