#!/usr/bin/env bash
# make package's Debian package: what cmake --install puts in place, under /usr, with its
# dependencies read from the linked libraries (dpkg-shlibdeps).
#   check_package.sh BUILD_DIR OUT_DIR
set -uo pipefail
build=$1 out=$2
if ! command -v dpkg-deb >/dev/null || ! command -v dpkg-shlibdeps >/dev/null; then
  echo "package: SKIPPED: dpkg-deb or dpkg-shlibdeps (dpkg-dev) is not installed"
  exit 0
fi
rm -rf "$out" && mkdir -p "$out"
(cd "$build" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log" >&2; exit 1; }
deb=$(ls "$out"/chunkscope_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || { echo "package: no chunkscope_*.deb in $out" >&2; exit 1; }
fail=0
files=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/chunkscope ./usr/share/man/man1/chunkscope.1 ./usr/share/bash-completion/completions/chunkscope \
         ./usr/include/chunkscope/probe.h ./usr/include/chunkscope/stage.h ./usr/lib/libchunkscope_probe.so.0 \
         ./usr/lib/cmake/chunkscope/chunkscopeConfig.cmake ./usr/lib/pkgconfig/chunkscope-probe.pc; do
  grep -qxF "$f" <<<"$files" || { echo "package: $deb lacks $f" >&2; fail=1; }
done
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libsndfile1 libportaudio2 libc6; do
  [[ $depends == *"$lib"* ]] || { echo "package: Depends lacks $lib: '$depends'" >&2; fail=1; }
done
[[ $depends != *cuda* ]] || { echo "package: depends on a CUDA package: '$depends'" >&2; fail=1; }
[ "$fail" -eq 0 ] && echo "package: $(basename "$deb"): Depends: $depends"
exit $fail
