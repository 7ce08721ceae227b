#!/usr/bin/env bash
# Builds chunkscope with CUDA on a build machine and packs the binaries into gpu-pack/ at the
# repository root, for a GPU machine that has a CUDA driver but none of this project's
# libraries: tests/gpu/check.sh then runs the pack without building. Carry gpu-pack/ with
# the tree (it is git-ignored).
#
# Usage: tests/gpu/pack.sh [BUILD_DIR]     (default: build-gpu-pack at the repository root)
# Environment: JOBS (build parallelism, default: all cores), CUDA_ARCHS (default: the
# project's 90-real;90-virtual), NO_CHROOT=1 (skip the bare-root test; the pack is then
# marked untested).
#
# What goes in:
#   chunkscope, tests/chunkscope_tests  built with -DCHUNKSCOPE_STATIC_RUNTIME=ON: the CUDA
#                runtime (cudart_static), libstdc++ and libgcc are linked in, fmt is
#                header-only; stripped; the same layout as a build folder (the tests find
#                ../chunkscope beside them); an RPATH ($ORIGIN/lib, $ORIGIN/../lib)
#                finds lib/ without LD_LIBRARY_PATH
#   lib/         the shared libraries that cannot be linked statically (libsndfile and its
#                codecs, PortAudio with ALSA and JACK, ...), and what they need in turn
#                (libjack is C++: it brings libstdc++ and libgcc_s). Never the C library
#                family (libc, libm, libpthread, libdl, librt, ld-linux) nor the CUDA driver
#                (libcuda), which belong to the GPU machine.
#   tools/       libnvtx_count.so (tests/gpu/nvtx_count.cpp, an NVTX injection library that
#                counts pushed ranges) and nvtx_selftest, its check
#   MANIFEST     the commit (git rev-parse HEAD), whether the tree was dirty, the sha256 of
#                SOURCES (the source files as they were built), the CUDA version,
#                and the highest GLIBC_ symbol version each binary and library needs
#                (objdump -T), with the overall maximum; check.sh refuses a pack whose
#                source hash or commit differs from the tree it runs in
#   SOURCES      sha256sum of every source file (tracked and untracked-but-not-ignored)
#
# Before calling the pack good it is tested in a bare root: a temporary folder holding only
# the C library pieces copied from this machine (ld-linux, libc, libm, libpthread, libdl,
# librt), a /proc and the pack, where `chroot` runs `chunkscope --version`, the CPU-only tests and
# the NVTX self-test (needs root; NO_CHROOT=1 skips it and says so in the manifest).
# Exit status: 0 packed and tested; 1 a step failed (the pack is removed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build-gpu-pack}
PACK=$ROOT/gpu-pack
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
CUDA_INC=/usr/local/cuda/include

say() { echo "pack: $*"; }
die() {
  echo "pack: FAILED: $*" >&2
  rm -rf "$PACK"
  exit 1
}

# ------------------------------------------------------------------ source identity
# SOURCES is `sha256sum` output ("hash  path") for every file git lists (tracked, and
# untracked but not ignored), in path order; the source hash is the sha256 of SOURCES.
# check.sh verifies the tree against SOURCES (sha256sum -c) and SOURCES against the hash.
cd "$ROOT"
git rev-parse HEAD >/dev/null 2>&1 || die "not a git checkout: the pack records the commit it was built from"
COMMIT=$(git rev-parse HEAD)
DIRTY=$(git status --porcelain --untracked-files=normal | wc -l)
SOURCES_TMP=$(mktemp)
trap 'rm -f "$SOURCES_TMP"' EXIT
git ls-files --cached --others --exclude-standard | LC_ALL=C sort -u | while read -r f; do
  [ -f "$f" ] && sha256sum -- "$f"
done >"$SOURCES_TMP"
SRC_HASH=$(sha256sum <"$SOURCES_TMP" | cut -d' ' -f1)
say "commit $COMMIT, $([ "$DIRTY" = 0 ] && echo clean || echo "dirty ($DIRTY paths)"), sources $SRC_HASH"

# ------------------------------------------------------------------ build
CMAKE_ARGS=(-S "$ROOT" -B "$BUILD" -DCHUNKSCOPE_CUDA=ON -DCHUNKSCOPE_STATIC_RUNTIME=ON -DCMAKE_BUILD_TYPE=Release)
[ -n "${CUDA_ARCHS:-}" ] && CMAKE_ARGS+=("-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS")
if command -v ccache >/dev/null 2>&1; then
  CMAKE_ARGS+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
mkdir -p "$BUILD"
cmake "${CMAKE_ARGS[@]}" >"$BUILD/pack-configure.log" 2>&1 || { cat "$BUILD/pack-configure.log"; die "configure"; }
grep -q "CUDA: static runtime" "$BUILD/pack-configure.log" || die "configure did not take the static runtime (CUDA not found?)"
cmake --build "$BUILD" -j "$JOBS" --target chunkscope chunkscope_tests || die "build"

rm -rf "$PACK"
mkdir -p "$PACK/tests" "$PACK/lib" "$PACK/tools"
strip -o "$PACK/chunkscope" "$BUILD/chunkscope"
strip -o "$PACK/tests/chunkscope_tests" "$BUILD/tests/chunkscope_tests"
cp "$SOURCES_TMP" "$PACK/SOURCES"

# NVTX injection library and its self-test (C++ runtime linked in, like the binaries)
g++ -std=c++17 -O2 -Wall -Wextra -shared -fPIC -static-libstdc++ -static-libgcc -I"$CUDA_INC" \
  "$ROOT/tests/gpu/nvtx_count.cpp" -o "$PACK/tools/libnvtx_count.so" || die "nvtx_count library"
g++ -std=c++17 -O2 -Wall -Wextra -DNVTX_COUNT_SELFTEST -static-libstdc++ -static-libgcc -I"$CUDA_INC" \
  "$ROOT/tests/gpu/nvtx_count.cpp" -o "$PACK/tools/nvtx_selftest" -ldl || die "nvtx_count self-test"
strip "$PACK/tools/nvtx_selftest"

# ------------------------------------------------------------------ shared libraries
is_system_lib() {
  case "$1" in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libresolv.so* | libcuda.so* | \
      libnvidia*.so* | linux-vdso*) return 0 ;;
  esac
  return 1
}
for bin in "$PACK/chunkscope" "$PACK/tests/chunkscope_tests" "$PACK/tools/libnvtx_count.so"; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
  is_system_lib "$(basename "$lib")" || cp -L "$lib" "$PACK/lib/"
done
for bin in "$PACK/chunkscope" "$PACK/tests/chunkscope_tests"; do
  objdump -p "$bin" | grep -E '^ *RPATH .*\$ORIGIN' >/dev/null || die "$(basename "$bin") has no \$ORIGIN RPATH"
done
# The packed binaries themselves must not need the C++ runtime or the CUDA runtime as .so.
for bin in "$PACK/chunkscope" "$PACK/tests/chunkscope_tests" "$PACK/tools/libnvtx_count.so" "$PACK/tools/nvtx_selftest"; do
  needed=$(objdump -p "$bin" | awk '/NEEDED/ { print $2 }')
  if echo "$needed" | grep -qE '^(libstdc\+\+|libgcc_s|libcudart)'; then
    die "$(basename "$bin") still needs $(echo "$needed" | grep -E '^(libstdc\+\+|libgcc_s|libcudart)' | tr '\n' ' ')"
  fi
done

# ------------------------------------------------------------------ manifest
max_glibc() { # FILE: the highest GLIBC_x.y symbol version FILE needs (or "none")
  objdump -T "$1" 2>/dev/null | grep -oE 'GLIBC_[0-9]+(\.[0-9]+)+' | sort -uV | tail -n 1 | grep . || echo none
}
GLIBC_LINES=$(
  cd "$PACK"
  for f in chunkscope tests/chunkscope_tests tools/libnvtx_count.so tools/nvtx_selftest lib/*; do
    [ -f "$f" ] && printf '  %-28s %s\n' "$f" "$(max_glibc "$f")"
  done
)
GLIBC_MAX=$(echo "$GLIBC_LINES" | awk '{ print $2 }' | grep -v none | sort -uV | tail -n 1)
CUDA_VERSION=$(grep -m1 -oE 'CUDA: ON \([0-9.]+' "$BUILD/pack-configure.log" | grep -oE '[0-9.]+$' || echo unknown)
{
  echo "commit: $COMMIT"
  echo "dirty: $([ "$DIRTY" = 0 ] && echo no || echo "yes ($DIRTY paths differ from the commit; the source hash covers them)")"
  echo "source_sha256: $SRC_HASH"
  echo "source_files: $(wc -l <"$SOURCES_TMP") (SOURCES)"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(ldd --version | head -n 1)"
  echo "cuda: $CUDA_VERSION, runtime linked statically (cudart_static); libstdc++ and libgcc linked in"
  echo "glibc_max: $GLIBC_MAX"
  echo "glibc_needed:"
  echo "$GLIBC_LINES"
  echo "bare_root_test: pending"
  echo "libraries:"
  ls -1 "$PACK/lib" | sed 's/^/  /'
} >"$PACK/MANIFEST"

# ------------------------------------------------------------------ bare-root test
# CPU-only test cases that need nothing outside the pack: no shell, no bundled audio, no
# other program. The CUDA ones here run host logic and the no-device answer (no libcuda in
# the root); the others are pure computation.
BARE_TESTS='warp emulation*,cuda: layout*,cuda: sample blocks*,cuda: routing*,cuda: planned launches*,cuda: make_cuda_backend without*,cuda: mode names,chunked processing*,fused and unfused*,f64 output equals the scalar*,process reports dispatches*,denormals are flushed*,reset clears state*,Butterworth: bands*,Butterworth: the magnitude*,cookbook*,LogHistogram*,IntervalRecorder*,hgrm*,chain spec*,bad chain specs*,planner*,rate-dependent*,durations,compare: variant lists*,diagnosis*,print_diagnosis*'
BARE_MIN_CASES=50  # the list above is 62 test cases today; fewer means names changed
if [ "${NO_CHROOT:-0}" = 1 ]; then
  sed -i 's/^bare_root_test: pending$/bare_root_test: not run (NO_CHROOT=1)/' "$PACK/MANIFEST"
  say "bare-root test skipped (NO_CHROOT=1)"
else
  [ "$(id -u)" = 0 ] || die "the bare-root test needs root for chroot (or NO_CHROOT=1)"
  BARE=$(mktemp -d)
  trap 'rm -f "$SOURCES_TMP"; umount "$BARE/proc" 2>/dev/null; rm -rf --one-file-system "$BARE"' EXIT
  mkdir -p "$BARE/lib64" "$BARE/lib/x86_64-linux-gnu" "$BARE/tmp" "$BARE/proc"
  # /proc, as every machine has it: the loader resolves $ORIGIN through /proc/self/exe.
  mount -t proc proc "$BARE/proc" || die "cannot mount /proc in the bare root"
  chmod 1777 "$BARE/tmp"
  cp -L /lib64/ld-linux-x86-64.so.2 "$BARE/lib64/"
  for l in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1; do
    cp -L "/lib/x86_64-linux-gnu/$l" "$BARE/lib/x86_64-linux-gnu/"
  done
  cp -a "$PACK" "$BARE/pack"
  CHROOT=$(command -v chroot) || die "no chroot on this machine (or NO_CHROOT=1)"
  inroot() { env -i HOME=/tmp TMPDIR=/tmp "$CHROOT" "$BARE" "$@"; }  # no LD_LIBRARY_PATH: the RPATH finds /pack/lib
  say "bare root: $(cd "$BARE" && find . -path ./proc -prune -o -type f -print | grep -v '^./pack/' | sort | tr '\n' ' ')+ /proc"
  out=$(cd / && inroot /pack/chunkscope --version 2>&1) || die "chunkscope --version in the bare root: $out"
  say "bare root: $out"
  echo "$out" | grep -q "${COMMIT:0:12}" || die "the packed binary says '$out', not commit ${COMMIT:0:12}"
  if ! (cd / && inroot /pack/tests/chunkscope_tests -tc="$BARE_TESTS" >"$BUILD/pack-bare-tests.log" 2>&1); then
    tail -n 30 "$BUILD/pack-bare-tests.log"
    die "CPU-only tests in the bare root (log: $BUILD/pack-bare-tests.log)"
  fi
  say "bare root: $(grep -E '^\[doctest\] test cases' "$BUILD/pack-bare-tests.log")"
  passed=$(grep -E '^\[doctest\] test cases' "$BUILD/pack-bare-tests.log" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+')
  [ "${passed:-0}" -ge "$BARE_MIN_CASES" ] || die "only ${passed:-0} CPU-only test cases ran in the bare root (expected at least $BARE_MIN_CASES)"
  out=$(cd / && env -i NVTX_INJECTION64_PATH=/pack/tools/libnvtx_count.so "$CHROOT" "$BARE" /pack/tools/nvtx_selftest 2>&1) ||
    die "NVTX self-test in the bare root: $out"
  echo "$out" | grep -q "nvtx_count: pushes=5 pops=5 max_depth=2 names=outer:3,inner:2" ||
    die "NVTX injection counted something else than the self-test pushed: $out"
  say "bare root: NVTX injection counts the self-test's 5 ranges"
  sed -i "s/^bare_root_test: pending$/bare_root_test: passed $(date -u +%Y-%m-%dT%H:%M:%SZ): --version, $(grep -oE '[0-9]+ passed' "$BUILD/pack-bare-tests.log" | head -n 1) CPU-only test cases, NVTX self-test/" "$PACK/MANIFEST"
fi

say "$(du -sh "$PACK" | cut -f1) in $PACK ($(ls "$PACK/lib" | wc -l) libraries), needs GLIBC up to $GLIBC_MAX"
say "carry gpu-pack/ to the GPU machine and run: tests/gpu/check.sh OUT_DIR"
