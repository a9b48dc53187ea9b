#!/usr/bin/env bash
# Installs the Debian packages oneflow_c needs, idempotently: it asks apt-get only for what is missing.
# Usage: scripts/install-deps.sh [--bench]  (as root, or with sudo available)
#   --bench  also installs what bench/ compares with: Debian's PyTorch and torchvision (the Python scripts),
#            libtorch's C++ headers (bench/libtorch_train_step.cpp) and perf (profiling the bench programs)
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ pkg-config   # build
  libfmt-dev                                 # error messages (fmt)
  libgtest-dev libcmocka-dev                 # core tests (GoogleTest), C ABI tests (CMocka)
  libdnnl-dev                                # CPU kernels (oneDNN)
  libgloo-dev                                # process groups' collectives (Gloo, TCP)
  zlib1g-dev                                 # gzip-compressed IDX files
  dataset-fashion-mnist                      # the training example's data
  swig bindgen golang-go                     # the binding generators (the header is checked against each)
  default-jdk-headless junit4                # the Java binding: javac, JNI headers, JUnit 4
  python3-numpy                              # the DLPack test's peer (tests/capi/dlpack_peers.py)
  clang-16 libclang-rt-16-dev llvm-16        # the asan preset: libFuzzer, ASan, UBSan, llvm-symbolizer (clang 14 cannot
                                             # compile the engine: lambdas capturing structured bindings)
)
if [ "${1:-}" = "--bench" ]; then
  packages+=(python3-torch python3-torchvision libtorch-dev linux-perf)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
