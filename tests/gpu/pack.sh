#!/usr/bin/env bash
# Builds chunkscope with CUDA on a build machine and packs the binaries, with the shared
# libraries they load, into gpu-pack/ at the repository root: a GPU machine that has the
# CUDA driver but not this project's Debian libraries (libsndfile, PortAudio, fmt, ...) can
# then run tests/gpu/check.sh without building. Carry gpu-pack/ (a few MB) with the tree.
#
# Usage: tests/gpu/pack.sh [BUILD_DIR]     (default: build-gpu-pack at the repository root)
# Leaves out the C library family, libstdc++/libgcc_s and the CUDA driver (libcuda), which
# the GPU machine has; keeps the CUDA runtime (libcudart), which must match the build.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build-gpu-pack}
PACK=$ROOT/gpu-pack
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

cmake -S "$ROOT" -B "$BUILD" -DCHUNKSCOPE_CUDA=ON -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j "$JOBS" --target chunkscope chunkscope_tests

rm -rf "$PACK"
mkdir -p "$PACK/tests" "$PACK/lib"
# the same layout as a build folder: tests find ../chunkscope beside them
strip -o "$PACK/chunkscope" "$BUILD/chunkscope"
strip -o "$PACK/tests/chunkscope_tests" "$BUILD/tests/chunkscope_tests"

for bin in "$PACK/chunkscope" "$PACK/tests/chunkscope_tests"; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libresolv.so* | \
      libstdc++.so* | libgcc_s.so* | libcuda.so*) continue ;;
  esac
  cp -L "$lib" "$PACK/lib/"
done

{
  echo "commit: $(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  echo "built:  $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(ldd --version | head -n 1)"
  ls -1 "$PACK/lib"
} >"$PACK/MANIFEST"
echo "pack: $(du -sh "$PACK" | cut -f1) in $PACK ($(ls "$PACK/lib" | wc -l) libraries)"
echo "pack: carry gpu-pack/ to the GPU machine and run: tests/gpu/check.sh OUT_DIR"
