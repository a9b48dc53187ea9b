#!/usr/bin/env bash
# The GPU checks, in two halves, for machines where the GPU is elsewhere (../.library/device: a lent H200
# that has CUDA's driver and toolkit but none of Debian's libraries):
#   scripts/device-check.sh pack [BUILD_DIR]   here: builds BUILD_DIR (default build/dev, CUDA on, sm_90) and
#                                              packs the GPU test programs, liboneflow_c and the shared
#                                              libraries they need (oneDNN, fmt, gloo, ...) into
#                                              build/device-pack.tar.xz
#   scripts/device-check.sh run OUT_DIR        there, in a copy of this repository with the pack carried:
#                                              unpacks it and runs each GPU test, writing OUT_DIR/summary.txt
#                                              and one log per program; exits 1 if any failed
# A test program exits 77 where it finds no GPU (skipped under ctest here); on the GPU machine that is a failure.
set -uo pipefail
cd "$(dirname "$0")/.."

# The GPU test programs, relative to the build folder.
programs=(tests/device/device_cuda_tensors tests/device/device_cuda_ops)

case "${1:-}" in
  pack)
    set -e
    build=${2:-build/dev}
    [ -d "$build" ] || cmake --preset dev > /dev/null
    ninja -C "$build" "${programs[@]}" oneflow_c
    grep -q "OF_WITH_CUDA:BOOL=ON" "$build/CMakeCache.txt" || { echo "device-check: $build is built without CUDA" >&2; exit 1; }
    pack=build/device-pack
    rm -rf "$pack" "$pack.tar.xz"
    mkdir -p "$pack/bin" "$pack/lib"
    for p in "${programs[@]}"; do strip -o "$pack/bin/$(basename "$p")" "$build/$p"; done
    # Every shared library the programs load but glibc's, libstdc++'s and the CUDA driver's (the GPU machine has those).
    for p in "$pack"/bin/*; do
      ldd "$p" | awk '$3 ~ /^\// {print $3}'
    done | sort -u | grep -Ev '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|libcuda|ld-linux[^/]*)\.so' |
      while read -r lib; do cp -L "$lib" "$pack/lib/"; done
    strip --strip-unneeded "$pack"/lib/*.so* 2> /dev/null || true
    tar -C build -cJf "$pack.tar.xz" device-pack
    rm -rf "$pack"
    echo "device-check: packed $(du -h "$pack.tar.xz" | cut -f1) into $pack.tar.xz (carry build/device-pack.tar.xz)"
    ;;
  run)
    out=${2:?usage: scripts/device-check.sh run OUT_DIR}
    mkdir -p "$out"
    work=$(mktemp -d)
    tar -C "$work" -xJf build/device-pack.tar.xz || { echo "device-check: no build/device-pack.tar.xz (pack it here first)"; exit 1; }
    export LD_LIBRARY_PATH="$work/device-pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # cuBLAS and NCCL are loaded at first use (Note [cuBLAS], Note [NCCL]): from the loader's path, else from the
    # CUDA toolkit or the Python wheels that machine has.
    for lib in libcublas.so.13 libnccl.so.2; do
      if ! ldconfig -p | grep -q "$lib"; then
        found=$(find /usr/local /opt /usr/lib -name "$lib" 2> /dev/null | head -1)
        if [ -n "$found" ]; then export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"; fi
      fi
    done
    {
      date -u
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
      echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    } > "$out/summary.txt"
    failed=0
    for p in "${programs[@]}"; do
      name=$(basename "$p")
      start=$(date +%s.%N)
      timeout 240 "$work/device-pack/bin/$name" > "$out/$name.log" 2>&1
      rc=$?
      secs=$(awk "BEGIN { print $(date +%s.%N) - $start }")
      case $rc in
        0) verdict=passed ;;
        77) verdict="SKIPPED (no GPU found: a failure here)"; failed=1 ;;
        *) verdict="FAILED (exit $rc)"; failed=1 ;;
      esac
      printf '%-24s %s in %.1f s\n' "$name" "$verdict" "$secs" | tee -a "$out/summary.txt"
      if [ $rc -ne 0 ]; then tail -40 "$out/$name.log"; fi
    done
    exit $failed
    ;;
  *)
    sed -n '2,12p' "$0" >&2
    exit 2
    ;;
esac
