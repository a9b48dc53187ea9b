#!/usr/bin/env bash
# Installs what is missing, builds the release preset and runs the main example. This is the README's
# first command. (The Fashion-MNIST training example replaces the tensor tour when it lands.)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset release > /dev/null
cmake --build --preset release --target tensors
build/release/examples/tensors "$@"
