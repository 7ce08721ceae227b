#!/usr/bin/env bash
# GPU check for the CUDA backend: proves in one short run (under 5 minutes on an H200
# machine) what the docs claim for it, on a machine with a CUDA device.
#
# Exit codes
#   0  every step passed and every target was met
#   1  a step failed: a test failed or skipped for want of a device, a run failed or a
#      variant could not run, NVTX ranges were not seen, a sanitizer found errors, the
#      summary could not be computed (needs python3)
#   2  usage, or nothing to run (no binaries)
#   3  every step passed but a target was missed (see "targets" in summary.txt)
#   4  refused before running: the pack was built from another commit or other sources
#      than this tree, or needs a newer C library than this machine has
#
# Steps, in order (each logged with its exit status in OUT_DIR/check.log, its output in
# OUT_DIR/NAME.out):
#   1. pack identity: gpu-pack/MANIFEST and SOURCES against this tree (exit 4 on mismatch)
#   2. CUDA tests: chunkscope_tests -tc='cuda*,warp emulation*' (device output equal to
#      the CPU backend bit for bit, launches per chunk, short chunks, reset, timing); a
#      test that skips for want of a device fails the check
#   3. target runs, at once after the tests (synthetic noise, 2 channels, `compare`):
#        c256 / c128   cpu + cuda:eager, cuda:eager:unfused, cuda:graph, cuda:graph:unfused,
#                      7 sections (hp:80:6 | lp:12000:8), --speed max, 3 rounds
#        chain10_c128  a 10-filter chain at 128 frames, the same four CUDA variants
#        paced_c256    --speed 1, 4 s, cuda:graph and cuda:eager
#        timing_off    c256 with --gpu-timing off
#      SM clocks (nvidia-smi) before and after each, sampled every 200 ms during it
#   4. NVTX: a synth run per mode with tests/gpu/nvtx_count.cpp injected
#      (NVTX_INJECTION64_PATH): the "chunk" ranges counted must equal the chunks processed
#   5. compute-sanitizer memcheck and racecheck over a few CUDA test cases (skipped, and
#      said so, when compute-sanitizer is not on this machine)
#   6. a small sweep of chunk sizes and 32 channels, and 32 and 128 stereo streams batched
#      (--batch), for the record (skipped, not failed, when past the deadline)
#   7. summary.txt: per-run tables, and the targets, each measured figure beside its target:
#        f32 output identical to the CPU (first-chunk checksums of every CUDA variant)
#        launches per chunk: graph 1, eager = the plan's dispatches
#        256 frames stereo 7 sections, cuda:graph: GPU stage p95 <= 15 us and process()
#          p95 <= 30 us, at --speed max and at --speed 1
#        128 frames, 10-filter chain unfused: graph >= 3x eager (process p50), with a table
#          of how much of the speed-up is fusion and how much graph
#      "GPU stage" is the device view: H2D + kernels + D2H from CUDA events, per chunk;
#      "process()" the host view: the backend's process call as the engine timed it.
#
# Usage: tests/gpu/check.sh OUT_DIR [BUILD_DIR]
#   OUT_DIR    where logs, test output, JSON reports and summary.txt go (created)
#   BUILD_DIR  a pack (a folder with a MANIFEST, made by tests/gpu/pack.sh) or a build
#              folder to configure and build here (default: gpu-pack/ when it holds
#              prebuilt binaries, else build-gpu-check in the source tree)
# A GPU machine without the project's Debian libraries cannot build: make the pack on a
# build machine (tests/gpu/pack.sh, after committing) and carry gpu-pack/ with the tree.
# Environment: JOBS (build parallelism, default: all cores), CUDA_ARCHS (default: the
# project's 90-real;90-virtual), DEADLINE (seconds; steps that would start later are
# skipped and count as failed, default 270).
set -u

if [ $# -lt 1 ]; then
  echo "usage: tests/gpu/check.sh OUT_DIR [BUILD_DIR]" >&2
  exit 2
fi
OUT=$1
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PACKED=0
if [ $# -ge 2 ]; then
  BUILD=$(cd "$2" 2>/dev/null && pwd || echo "$2")
  [ -f "$BUILD/MANIFEST" ] && PACKED=1  # a pack given by name
elif [ -x "$ROOT/gpu-pack/chunkscope" ] && [ -x "$ROOT/gpu-pack/tests/chunkscope_tests" ]; then
  BUILD=$ROOT/gpu-pack
  PACKED=1  # the packed binaries find gpu-pack/lib by their RPATH ($ORIGIN/lib)
else
  BUILD=$ROOT/build-gpu-check
fi
DEADLINE=${DEADLINE:-270}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 16)}
mkdir -p "$OUT" || { echo "check.sh: cannot create $OUT" >&2; exit 2; }
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/check.log
: >"$LOG"
FAILED=()
START=$SECONDS
cd "$ROOT" || exit 2

have_timeout=0
command -v timeout >/dev/null 2>&1 && have_timeout=1
have_smi=0
command -v nvidia-smi >/dev/null 2>&1 && have_smi=1

log() { echo "$*" | tee -a "$LOG"; }

# run_step NAME LIMIT_S OPTIONAL CMD...: runs CMD with its output in OUT/NAME.out, logs the
# status. OPTIONAL=1: skipping it at the deadline is not a failure.
run_step() {
  local name=$1 limit=$2 optional=$3
  shift 3
  local t0=$SECONDS rc
  if [ $((SECONDS - START)) -ge "$DEADLINE" ]; then
    log "== [$((SECONDS - START))s] $name: SKIPPED, past the ${DEADLINE}s deadline"
    [ "$optional" = 1 ] || FAILED+=("$name (skipped: deadline)")
    return 1
  fi
  log "== [$((SECONDS - START))s] $name"
  printf '   %q' "$@" >>"$LOG"
  echo >>"$LOG"
  if [ "$have_timeout" = 1 ]; then
    timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.out" 2>&1
  else
    "$@" >"$OUT/$name.out" 2>&1
  fi
  rc=$?
  if [ "$rc" = 0 ]; then
    log "   ok ($((SECONDS - t0))s)"
  else
    [ "$rc" = 124 ] && log "   TIMED OUT after ${limit}s"
    log "   FAILED rc=$rc ($((SECONDS - t0))s); last lines of $name.out:"
    tail -n 15 "$OUT/$name.out" | sed 's/^/   | /' | tee -a "$LOG"
    FAILED+=("$name (rc=$rc)")
  fi
  return "$rc"
}
step() { run_step "$1" "$2" 0 "${@:3}"; }
optional_step() { run_step "$1" "$2" 1 "${@:3}"; }

# SM clocks: one line now (NAME.clocks, appended), and a sampler every 200 ms in between.
smi_query=clocks.sm,clocks.max.sm,clocks.mem,pstate,temperature.gpu,power.draw
clocks_now() { # NAME WHEN
  [ "$have_smi" = 1 ] || return 0
  echo "$2: $(nvidia-smi --query-gpu=$smi_query --format=csv,noheader 2>&1 | head -n 1)" >>"$OUT/$1.clocks"
}
SAMPLER=
sampler_start() { # NAME
  [ "$have_smi" = 1 ] || return 0
  nvidia-smi --query-gpu=clocks.sm,pstate --format=csv,noheader,nounits -lms 200 >"$OUT/$1.clocks_samples" 2>&1 &
  SAMPLER=$!
}
sampler_stop() {
  [ -n "$SAMPLER" ] || return 0
  kill "$SAMPLER" 2>/dev/null
  wait "$SAMPLER" 2>/dev/null
  SAMPLER=
}
# measured NAME LIMIT CMD...: a target run with the clocks recorded around it.
measured() {
  local name=$1
  clocks_now "$name" before
  sampler_start "$name"
  step "$@"
  local rc=$?
  sampler_stop
  clocks_now "$name" after
  [ -f "$OUT/$name.clocks" ] && sed 's/^/   clocks /' "$OUT/$name.clocks" | tee -a "$LOG"
  return "$rc"
}

# ------------------------------------------------------------------ environment
{
  echo "source:  $ROOT"
  echo "build:   $BUILD"
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null)"
  echo "host:    $(uname -srm), $(getconf GNU_LIBC_VERSION 2>/dev/null || echo 'C library unknown')"
  echo "cores:   $JOBS"
  if [ "$have_smi" = 1 ]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm,persistence_mode,pstate \
      --format=csv 2>&1
  else
    echo "nvidia-smi: not found (no SM clocks in this check)"
  fi
  command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 1
  command -v python3 >/dev/null 2>&1 && python3 --version
} >"$OUT/environment.txt" 2>&1
tee -a "$LOG" <"$OUT/environment.txt"

# ------------------------------------------------------------------ pack identity / build
refuse() {
  log "REFUSED: $*"
  log "make a new pack from this tree (tests/gpu/pack.sh on a build machine, after committing) and carry it here"
  exit 4
}
manifest() { sed -n "s/^$1: //p" "$BUILD/MANIFEST" | head -n 1; }
if [ "$PACKED" = 1 ]; then
  log "prebuilt binaries from $BUILD (tests/gpu/pack.sh):"
  grep -E '^(commit|dirty|source_sha256|built|cuda|glibc_max|bare_root_test):' "$BUILD/MANIFEST" 2>/dev/null |
    sed 's/^/   /' | tee -a "$LOG"
  [ -f "$BUILD/MANIFEST" ] && [ -f "$BUILD/SOURCES" ] || refuse "gpu-pack/ has no MANIFEST or SOURCES: it was not made by this pack.sh"
  want=$(manifest source_sha256)
  have=$(sha256sum <"$BUILD/SOURCES" | cut -d' ' -f1)
  [ -n "$want" ] && [ "$want" = "$have" ] || refuse "gpu-pack/SOURCES does not match its MANIFEST (source_sha256)"
  if ! sha256sum --quiet -c "$BUILD/SOURCES" >"$OUT/pack_sources.out" 2>&1; then
    log "files that differ from the ones the pack was built from:"
    grep -v '^sha256sum: WARNING' "$OUT/pack_sources.out" | head -n 20 | sed 's/^/   /' | tee -a "$LOG"
    refuse "this tree is not the one gpu-pack/ was built from (commit $(manifest commit))"
  fi
  if git -C "$ROOT" rev-parse HEAD >/dev/null 2>&1; then
    head_now=$(git -C "$ROOT" rev-parse HEAD)
    [ "$head_now" = "$(manifest commit)" ] || refuse "the tree is at commit $head_now, the pack was built from $(manifest commit)"
    extra=$(git -C "$ROOT" ls-files --cached --others --exclude-standard | LC_ALL=C sort -u |
      while read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done |
      comm -23 - <(sed 's/^[0-9a-f]*  //' "$BUILD/SOURCES" | LC_ALL=C sort -u))
    [ -z "$extra" ] || refuse "the tree has files the pack was not built with: $(echo "$extra" | head -n 5 | tr '\n' ' ')"
  else
    log "   (no git here: the tree is checked against the pack's SOURCES only)"
  fi
  log "   sources match the pack (commit $(manifest commit | cut -c1-12), $(wc -l <"$BUILD/SOURCES") files)"
  # The C library: the pack needs glibc_max or newer.
  need=$(manifest glibc_max | sed 's/^GLIBC_//')
  have_libc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
  if [ -n "$need" ] && [ -n "$have_libc" ]; then
    lowest=$(printf '%s\n%s\n' "$need" "$have_libc" | sort -V | head -n 1)
    [ "$lowest" = "$need" ] || refuse "the pack needs GLIBC_$need, this machine has glibc $have_libc"
    log "   C library: this machine has glibc $have_libc, the pack needs $need"
  fi
  case "$(manifest bare_root_test)" in
    passed*) ;;
    *) log "   WARNING: the pack was not tested in a bare root ($(manifest bare_root_test))" ;;
  esac
  NVTX_LIB=$BUILD/tools/libnvtx_count.so
else
  missing=()
  for pc in sndfile portaudio-2.0; do
    pkg-config --exists "$pc" 2>/dev/null || missing+=("$pc")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "this machine lacks build dependencies (${missing[*]}): run tests/gpu/pack.sh on a build"
    log "machine with the project's Debian packages and carry gpu-pack/ here, then rerun"
    exit 2
  fi
  CMAKE_ARGS=(-S "$ROOT" -B "$BUILD" -DCHUNKSCOPE_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)
  [ -n "${CUDA_ARCHS:-}" ] && CMAKE_ARGS+=("-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS")
  step configure 120 cmake "${CMAKE_ARGS[@]}"
  step build 240 cmake --build "$BUILD" -j "$JOBS" --target chunkscope_tests chunkscope
  NVTX_LIB=$BUILD/libnvtx_count.so
  step nvtx_lib 60 g++ -std=c++17 -O2 -shared -fPIC -I/usr/local/cuda/include "$ROOT/tests/gpu/nvtx_count.cpp" -o "$NVTX_LIB"
fi
BIN=$BUILD/chunkscope
TESTS=$BUILD/tests/chunkscope_tests
if [ ! -x "$BIN" ] || [ ! -x "$TESTS" ]; then
  log "no binaries in $BUILD: nothing more can run"
  exit 2
fi
log "binary: $("$BIN" --version 2>&1 | head -n 1)"

# ------------------------------------------------------------------ 2. CUDA tests
step cuda_tests 150 "$TESTS" -tc='cuda*,warp emulation*' --duration=true
if grep -q "skipped: no CUDA device" "$OUT/cuda_tests.out" 2>/dev/null; then
  log "   FAILED: the CUDA tests skipped for want of a device:"
  grep -m1 "skipped: no CUDA device" "$OUT/cuda_tests.out" | sed 's/^/   | /' | tee -a "$LOG"
  FAILED+=("cuda_tests (skipped: no device)")
fi
grep -E "^\[doctest\] (test cases|assertions)" "$OUT/cuda_tests.out" 2>/dev/null | sed 's/^/   /' | tee -a "$LOG"

# ------------------------------------------------------------------ 3. target runs
CHAIN7='hp:80:6 | lp:12000:8'  # 3 + 4 = 7 sections
CHAIN10='peak:100:gain=2 | peak:350:gain=-2 | peak:600:gain=2 | peak:850:gain=-2 | peak:1100:gain=2 | peak:1350:gain=-2 | peak:1600:gain=2 | peak:1850:gain=-2 | peak:2100:gain=2 | peak:2350:gain=-2'
CUDA4=cuda:eager,cuda:eager:unfused,cuda:graph,cuda:graph:unfused
# 20 s of noise divides into whole chunks of 128 and 256 frames (no short last chunk, so
# every chunk is a replay in graph mode); the first 64 chunks are warm-up and checksummed.
NOISE=(--synth noise --channels 2 --rate 48000 --warmup 64)
measured c256 60 "$BIN" compare "${NOISE[@]}" --duration 20s --chain "$CHAIN7" --chunk 256 \
  --variants "cpu,$CUDA4" --speed max --rounds 3 -q --json "$OUT/c256.json"
measured c128 60 "$BIN" compare "${NOISE[@]}" --duration 20s --chain "$CHAIN7" --chunk 128 \
  --variants "cpu,$CUDA4" --speed max --rounds 3 -q --json "$OUT/c128.json"
measured chain10_c128 60 "$BIN" compare "${NOISE[@]}" --duration 20s --chain "$CHAIN10" --chunk 128 \
  --variants "cpu,$CUDA4" --speed max --rounds 3 -q --json "$OUT/chain10_c128.json"
measured paced_c256 60 "$BIN" compare "${NOISE[@]}" --duration 4s --chain "$CHAIN7" --chunk 256 \
  --variants cpu,cuda:graph,cuda:eager --speed 1 --rounds 1 -q --json "$OUT/paced_c256.json"
measured timing_off_c256 60 "$BIN" compare "${NOISE[@]}" --duration 20s --chain "$CHAIN7" --chunk 256 \
  --variants cpu,cuda:graph,cuda:eager --speed max --rounds 3 --gpu-timing off -q --json "$OUT/timing_off_c256.json"

# ------------------------------------------------------------------ 4. NVTX ranges
# 2 s at 256 frames: 375 chunks, each one "chunk" range (prepare's warm-up and capture push
# none). Eager runs show the per-step ranges, graph runs the graph launch.
for mode in graph eager; do
  rm -f "$OUT/nvtx_$mode.count"
  if [ ! -f "$NVTX_LIB" ]; then
    log "== nvtx_$mode: FAILED, no injection library at $NVTX_LIB"
    FAILED+=("nvtx_$mode (no injection library)")
    continue
  fi
  step "nvtx_$mode" 60 env NVTX_INJECTION64_PATH="$NVTX_LIB" NVTX_COUNT_OUT="$OUT/nvtx_$mode.count" \
    "$BIN" synth --signal noise --duration 2s --chunk 256 --chain "$CHAIN7" --backend cuda --mode "$mode" \
    --speed max -q --json "$OUT/nvtx_$mode.json" || continue
  if [ -f "$OUT/nvtx_$mode.count" ]; then
    log "   $(cat "$OUT/nvtx_$mode.count")"
  else
    log "   FAILED: the injection library reported nothing (NVTX compiled out, or not loaded)"
    FAILED+=("nvtx_$mode (no ranges reached the tool)")
  fi
done

# ------------------------------------------------------------------ 5. compute-sanitizer
SANITIZER=$(command -v compute-sanitizer 2>/dev/null)
if [ -z "$SANITIZER" ]; then
  for d in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer /usr/local/cuda-*/bin /opt/nvidia/*/compute-sanitizer; do
    [ -x "$d/compute-sanitizer" ] && SANITIZER=$d/compute-sanitizer && break
  done
fi
SAN_CASES='cuda: reset zeroes*,cuda: a short last chunk*,cuda: launches per chunk - fused*'
if [ -n "$SANITIZER" ]; then
  log "compute-sanitizer: $SANITIZER"
  for tool in memcheck racecheck; do
    step "sanitizer_$tool" 75 "$SANITIZER" --tool "$tool" --error-exitcode 9 "$TESTS" -tc="$SAN_CASES"
    grep -E "(ERROR|RACECHECK) SUMMARY" "$OUT/sanitizer_$tool.out" 2>/dev/null | tail -n 1 | sed 's/^/   /' | tee -a "$LOG"
  done
else
  log "== sanitizer: SKIPPED, compute-sanitizer is not on this machine (PATH, /usr/local/cuda*/bin)"
  echo "skipped: compute-sanitizer not found" >"$OUT/sanitizer.skipped"
fi

# ------------------------------------------------------------------ 6. sweep (for the record)
for chunk in 64 512 1024 4096; do
  optional_step "sweep_2ch_c$chunk" 40 "$BIN" compare "${NOISE[@]}" --duration 10s --chain "$CHAIN7" \
    --chunk "$chunk" --variants cpu,cuda:eager,cuda:graph --speed max --rounds 1 -q --json "$OUT/sweep_2ch_c$chunk.json"
done
for chunk in 256 1024; do
  optional_step "sweep_32ch_c$chunk" 40 "$BIN" compare --synth noise --channels 32 --rate 48000 --warmup 20 \
    --duration 3s --chain "$CHAIN7" --chunk "$chunk" --variants cpu,cuda:eager,cuda:graph --speed max --rounds 1 -q \
    --json "$OUT/sweep_32ch_c$chunk.json"
done
# streams batched (--batch): 32 and 128 stereo streams in one chunk per period (64 and 256
# channels), one set of launches per period, paced
for n in 32 128; do
  optional_step "sweep_batch${n}_c256" 40 "$BIN" compare "${NOISE[@]}" --duration 3s --chain "$CHAIN7" --chunk 256 \
    --streams "$n" --batch --variants cpu,cuda:eager,cuda:graph --speed 1 --rounds 1 -q --json "$OUT/sweep_batch${n}_c256.json"
done

# ------------------------------------------------------------------ 7. summary and targets
SUMMARY=$OUT/summary.txt
TARGETS_MISSED=0
if command -v python3 >/dev/null 2>&1; then
  python3 "$ROOT/tests/gpu/summary.py" "$OUT" >"$SUMMARY" 2>&1
  case $? in
    0) ;;
    3) TARGETS_MISSED=1 ;;
    *) FAILED+=("summary (see summary.txt)") ;;
  esac
else
  echo "python3 not found: no summary; the JSON reports are in $OUT" >"$SUMMARY"
  FAILED+=("summary (python3 not found)")
fi
log ""
log "== summary ($SUMMARY)"
tee -a "$LOG" <"$SUMMARY"

log ""
log "== done in $((SECONDS - START))s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED steps (${#FAILED[@]}):"
  for f in "${FAILED[@]}"; do log "  - $f"; done
  exit 1
fi
if [ "$TARGETS_MISSED" = 1 ]; then
  log "every step passed; TARGETS MISSED (see the targets above)"
  exit 3
fi
log "every step passed and every target was met"
exit 0
