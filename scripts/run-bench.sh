#!/usr/bin/env bash
# Installs what is missing (PyTorch, torchvision and libtorch included), builds the release preset's
# benchmark programs and compares oneflow_c's CPU speed with PyTorch's at the same thread count:
#   cpu            bench/compare_cpu.py: training steps of the MLP, ResNet-18 and ResNet-50 at batch 1, 4,
#                  16 (eager, lazy, PyTorch, libtorch, FMA peak, memory) in one table
#   fashion-mnist  bench/compare_fashion_mnist.py: the main job (examples/fashion_mnist) and its PyTorch twin
#   ddp            bench/compare_ddp.py: the main job data-parallel (1 and 2 processes of 1 thread) against
#                  PyTorch's DistributedDataParallel (gloo)
# Each prints its targets and exits 1 when one is missed; this script then exits 1 too (after running all).
# Usage: scripts/run-bench.sh [all|cpu|fashion-mnist|ddp] [--threads N] [more options for that comparison]
#   (with "all", the default, only --threads may follow, for cpu and fashion-mnist: ddp keeps its processes
#   of 1 thread; see each script's --help for its options)
# OF_BUILD_LOCK=FILE: build under flock FILE (machines whose builds share a lock); the runs are not locked.
set -euo pipefail
cd "$(dirname "$0")/.."

which=all
case "${1:-}" in
  all | cpu | fashion-mnist | ddp) which=$1; shift ;;
esac
if [ "$which" = all ] && [ $# -gt 0 ] && ! { [ $# -eq 2 ] && [ "$1" = --threads ]; }; then
  echo "usage: scripts/run-bench.sh [all|cpu|fashion-mnist|ddp] [--threads N] [options of that comparison]" >&2
  exit 2
fi

lock=()
if [ -n "${OF_BUILD_LOCK:-}" ]; then lock=(flock "$OF_BUILD_LOCK"); fi

scripts/install-deps.sh --bench
cmake --preset release > /dev/null
targets=(cpu_train_step fma_peak train_fashion_mnist)
if cmake --build --preset release --target help | grep -q '^libtorch_train_step:'; then
  targets+=(libtorch_train_step)  # configured only where libtorch-dev is installed
fi
"${lock[@]}" cmake --build --preset release --target "${targets[@]}"

export OMP_WAIT_POLICY=passive  # both sides; the comparisons set it for every process they start as well
status=0
if [ "$which" = all ] || [ "$which" = cpu ]; then
  /usr/bin/python3 bench/compare_cpu.py --build-dir build/release "$@" || status=1
fi
if [ "$which" = all ] || [ "$which" = fashion-mnist ]; then
  /usr/bin/python3 bench/compare_fashion_mnist.py --build-dir build/release "$@" || status=1
fi
if [ "$which" = ddp ]; then
  /usr/bin/python3 bench/compare_ddp.py --build-dir build/release "$@" || status=1
elif [ "$which" = all ]; then
  /usr/bin/python3 bench/compare_ddp.py --build-dir build/release || status=1
fi
exit $status
