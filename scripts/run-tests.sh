#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test through ctest: first the dev build (GCC), then
# the clang AddressSanitizer + UndefinedBehaviorSanitizer build, whose tree also holds the libFuzzer
# harnesses, each then run for a bounded time (scripts/run-fuzz.sh, OF_FUZZ_SECONDS per harness,
# default 30); last the thread tests under ThreadSanitizer (the tsan preset). This is the README's test
# command and CI's.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
for preset in dev asan; do
  echo "=== $preset: configure, build, test"
  cmake --preset "$preset"
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done

echo "=== fuzz: each harness (built in build/asan) for ${OF_FUZZ_SECONDS:-30}s"
OF_FUZZ_SEED="${OF_FUZZ_SEED:-1}" scripts/run-fuzz.sh "${OF_FUZZ_SECONDS:-30}"

echo "=== tsan: configure, build the thread tests, test"
cmake --preset tsan
cmake --build --preset tsan
ctest --preset tsan
