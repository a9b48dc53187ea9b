#!/usr/bin/env bash
# Installs the built tree into a scratch prefix, then builds examples/consumer against it the ways a
# user would — CMake find_package (shared and static targets) and pkg-config — and runs each result.
# Usage: consumer_test.sh <build-dir> <source-dir> <scratch-dir> <generator>
set -euo pipefail
build=$1 src=$2 scratch=$3 generator=$4
rm -rf "$scratch"
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" > /dev/null

echo "== find_package(oneflow_c)"
cmake -S "$src/examples/consumer" -B "$scratch/cmake" -G "$generator" -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build "$scratch/cmake" > /dev/null
"$scratch/cmake/consumer"
"$scratch/cmake/consumer_static"
if ldd "$scratch/cmake/consumer_static" | grep -q liboneflow_c; then
  echo "consumer_static is linked against the shared library"; exit 1
fi

echo "== pkg-config oneflow_c"
libdir=$(dirname "$(find "$prefix" -name 'oneflow_c.pc' | head -1)")
cc_flags=$(PKG_CONFIG_PATH=$libdir pkg-config --cflags --libs oneflow_c)
cc -std=c11 -Wall -Werror "$src/examples/consumer/consumer.c" $cc_flags -o "$scratch/consumer_pkgconfig"
LD_LIBRARY_PATH=$(dirname "$libdir") "$scratch/consumer_pkgconfig"
echo "consumer: find_package (shared, static) and pkg-config builds all ran"
