#!/usr/bin/env bash
# Installs what is missing, builds the release preset and runs the main job: training a ResNet-style
# CNN on Fashion-MNIST (examples/fashion_mnist). This is the README's first command; arguments go to
# the training program (e.g. --long, --epochs N, --threads N).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset release > /dev/null
cmake --build --preset release --target train_fashion_mnist
build/release/examples/train_fashion_mnist "$@"
