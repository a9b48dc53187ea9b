#!/usr/bin/env bash
# Installs what is missing (PyTorch included), builds the release preset and compares CPU training
# steps with PyTorch at the same thread count: bench/compare_cpu.py prints the ratios.
# Usage: scripts/run-bench.sh [--threads N] [--model all|mlp|resnet18|resnet50]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --bench
cmake --preset release > /dev/null
cmake --build --preset release --target cpu_train_step
/usr/bin/python3 bench/compare_cpu.py --binary build/release/bench/cpu_train_step "$@"
