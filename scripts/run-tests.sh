#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test through ctest: first the dev build, then the
# AddressSanitizer + UndefinedBehaviorSanitizer build. This is the README's test command and CI's.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
for preset in dev asan; do
  echo "=== $preset: configure, build, test"
  cmake --preset "$preset"
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
