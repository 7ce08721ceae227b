#!/usr/bin/env bash
# GPU check for the CUDA backend, for a machine with a CUDA device. Runs in a few minutes:
#   1. configures and builds chunkscope with CUDA into its own build folder
#   2. runs the CUDA tests (graph == eager == CPU within 1e-5 f32 / 1e-10 f64 over 100
#      chunks, launches per chunk, short-chunk policy, reset, timing) and fails if they skip
#   3. runs `chunkscope compare` (cpu, cuda:eager, cuda:eager:unfused, cuda:graph) at chunks
#      64..4096 for 2 channels (bundled audio) and 32 channels (synthetic noise), plus a
#      10-filter chain at 128 frames and the 6-section chain at 256 frames stereo
#   4. prints a summary (python3 when present, else the compare tables) and the two targets
# Every step is logged with its exit status; the script keeps going after a failure to
# collect as much as it can, and exits 1 if any step failed.
#
# Usage: tests/gpu/check.sh OUT_DIR [BUILD_DIR]
#   OUT_DIR    where logs, test output and compare JSON go (created)
#   BUILD_DIR  build folder (default: gpu-pack/ when it holds prebuilt binaries, made by
#              tests/gpu/pack.sh on a build machine; else build-gpu-check in the source tree)
# A GPU machine without the project's Debian libraries cannot build: make the pack on a
# build machine (tests/gpu/pack.sh) and carry gpu-pack/ with the tree.
# Environment: JOBS (build parallelism, default: all cores), CUDA_ARCHS (default: the
# project's 90-real;90-virtual), DEADLINE (seconds; steps that would start later are
# skipped and counted as failed, default 280).
set -u

if [ $# -lt 1 ]; then
  echo "usage: tests/gpu/check.sh OUT_DIR [BUILD_DIR]" >&2
  exit 2
fi
OUT=$1
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PACKED=0
if [ $# -ge 2 ]; then
  BUILD=$2
elif [ -x "$ROOT/gpu-pack/chunkscope" ] && [ -x "$ROOT/gpu-pack/tests/chunkscope_tests" ]; then
  BUILD=$ROOT/gpu-pack
  PACKED=1
  export LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  BUILD=$ROOT/build-gpu-check
fi
DEADLINE=${DEADLINE:-280}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 16)}
mkdir -p "$OUT" || { echo "check.sh: cannot create $OUT" >&2; exit 2; }
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/check.log
: >"$LOG"
FAILED=()
START=$SECONDS

have_timeout=0
command -v timeout >/dev/null 2>&1 && have_timeout=1

log() { echo "$*" | tee -a "$LOG"; }

# step NAME LIMIT_S CMD...: runs CMD with its output in OUT/NAME.out, logs the status.
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS rc
  if [ $((SECONDS - START)) -ge "$DEADLINE" ]; then
    log "== [$((SECONDS - START))s] $name: SKIPPED, past the ${DEADLINE}s deadline"
    FAILED+=("$name (skipped: deadline)")
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

# ------------------------------------------------------------------ environment
{
  echo "source:  $ROOT"
  echo "build:   $BUILD"
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null)"
  echo "commit:  $(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  echo "host:    $(uname -srm)"
  echo "cores:   $JOBS"
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
  command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 1
  [ -x /usr/local/cuda/bin/nvcc ] && /usr/local/cuda/bin/nvcc --version | tail -n 1
  cmake --version | head -n 1
} >"$OUT/environment.txt" 2>&1
cat "$OUT/environment.txt" | tee -a "$LOG"

# ------------------------------------------------------------------ build
if [ "$PACKED" = 1 ]; then
  log "prebuilt binaries from $BUILD (tests/gpu/pack.sh):"
  sed 's/^/   /' "$BUILD/MANIFEST" 2>/dev/null | head -n 2 | tee -a "$LOG"
else
  missing=()
  for pc in sndfile portaudio-2.0; do
    pkg-config --exists "$pc" 2>/dev/null || missing+=("$pc")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "this machine lacks build dependencies (${missing[*]}): run tests/gpu/pack.sh on a build"
    log "machine with the project's Debian packages and carry gpu-pack/ here, then rerun"
    exit 1
  fi
  CMAKE_ARGS=(-S "$ROOT" -B "$BUILD" -DCHUNKSCOPE_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)
  [ -n "${CUDA_ARCHS:-}" ] && CMAKE_ARGS+=("-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS")
  step configure 120 cmake "${CMAKE_ARGS[@]}"
  step build 240 cmake --build "$BUILD" -j "$JOBS" --target chunkscope_tests chunkscope
fi
BIN=$BUILD/chunkscope
TESTS=$BUILD/tests/chunkscope_tests
if [ ! -x "$BIN" ] || [ ! -x "$TESTS" ]; then
  log "no binaries in $BUILD: nothing more can run"
  log "FAILED steps: ${FAILED[*]}"
  exit 1
fi

# ------------------------------------------------------------------ CUDA tests
step cuda_tests 180 "$TESTS" -tc='cuda*' --duration=true
if grep -q "skipped: no CUDA device" "$OUT/cuda_tests.out" 2>/dev/null; then
  log "   FAILED: the CUDA tests skipped for want of a device:"
  grep -m1 "skipped: no CUDA device" "$OUT/cuda_tests.out" | sed 's/^/   | /' | tee -a "$LOG"
  FAILED+=("cuda_tests (skipped: no device)")
fi
grep -E "^\[doctest\] (test cases|assertions)" "$OUT/cuda_tests.out" 2>/dev/null | sed 's/^/   /' | tee -a "$LOG"

# ------------------------------------------------------------------ compare runs
FILE2=$ROOT/audio/mix_stereo_48k.flac
CHAIN6='hp:80:4 | lp:12000:8'  # 2 + 4 = 6 sections
CHAIN10='peak:100:gain=2 | peak:350:gain=-2 | peak:600:gain=2 | peak:850:gain=-2 | peak:1100:gain=2 | peak:1350:gain=-2 | peak:1600:gain=2 | peak:1850:gain=-2 | peak:2100:gain=2 | peak:2350:gain=-2'
VARIANTS=cpu,cuda:eager,cuda:eager:unfused,cuda:graph
COMMON=(--speed max --warmup 50)

# The sweep: one round per point (the two target runs below take three). The 10 s file
# gives 117 chunks at 4096 frames; 32 channels of noise run 3 s. Warm-up is a tenth of the
# chunks, at least 5.
for chunk in 64 128 256 512 1024 4096; do
  w2=$(((480000 / chunk) / 10)); [ "$w2" -lt 5 ] && w2=5
  w32=$(((144000 / chunk) / 10)); [ "$w32" -lt 5 ] && w32=5
  step "compare_2ch_c$chunk" 60 "$BIN" compare "$FILE2" --chain "$CHAIN6" --chunk "$chunk" --variants "$VARIANTS" \
    --speed max --warmup "$w2" --rounds 1 --json "$OUT/compare_2ch_c$chunk.json"
  step "compare_32ch_c$chunk" 60 "$BIN" compare --synth noise --channels 32 --rate 48000 --duration 3s \
    --chain "$CHAIN6" --chunk "$chunk" --variants "$VARIANTS" --speed max --warmup "$w32" --rounds 1 \
    --json "$OUT/compare_32ch_c$chunk.json"
done
# Target: graph >= 3x faster than eager unfused, 10-filter chain, 128 frames.
step compare_chain10_c128 120 "$BIN" compare "$FILE2" --chain "$CHAIN10" --chunk 128 \
  --variants cuda:eager:unfused,cuda:graph --rounds 3 "${COMMON[@]}" --json "$OUT/compare_chain10_c128.json"
# Target: graph, 256 frames stereo, 6 sections: GPU stage p95 <= 30 us.
step compare_chain6_c256 120 "$BIN" compare "$FILE2" --chain "$CHAIN6" --chunk 256 \
  --variants cpu,cuda:eager,cuda:graph --rounds 3 "${COMMON[@]}" --json "$OUT/compare_chain6_c256.json"

# ------------------------------------------------------------------ summary
SUMMARY=$OUT/summary.txt
if command -v python3 >/dev/null 2>&1; then
  python3 - "$OUT" >"$SUMMARY" 2>&1 <<'PY'
import glob, json, os, sys

out = sys.argv[1]

def us(v):
    return "-" if v is None else f"{v / 1000:.1f}"

def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(p / 100 * len(v) + 0.5)) - 1))]

def gpu_stage(report):
    # Per-chunk H2D + kernel + D2H from the series (warm-up excluded) when present,
    # else the sum of the per-part p50/p95 (an upper bound for the p95 of the sum).
    cols = (report.get("series") or {}).get("columns") or {}
    h, k, d, f = (cols.get(n) or [] for n in ("h2d_ns", "kernel_ns", "d2h_ns", "flags"))
    if h and len(h) == len(k) == len(d):
        tot = [h[i] + k[i] + d[i] for i in range(len(h)) if not (f and i < len(f) and f[i] & 2)]
        return pct(tot, 50), pct(tot, 95), "series"
    parts = report.get("process_parts") or {}
    if not all(n in parts for n in ("h2d", "kernel", "d2h")):
        return None, None, "none"
    return (sum(parts[n].get("p50", 0) for n in ("h2d", "kernel", "d2h")),
            sum(parts[n].get("p95", 0) for n in ("h2d", "kernel", "d2h")), "sum of parts")

results = {}
unavailable = []
for path in sorted(glob.glob(os.path.join(out, "compare_*.json"))):
    name = os.path.basename(path)[:-5]
    try:
        doc = json.load(open(path))
    except Exception as e:
        print(f"{name}: cannot read {path}: {e}")
        continue
    print(f"\n{name}")
    print(f"  {'variant':<22} {'proc p50':>9} {'proc p95':>9} {'lat p95':>9} {'launch p50':>10} {'gpu p50':>8} {'gpu p95':>8} {'launches':>8}  (us)")
    rows = {}
    for v in doc.get("variants", []):
        vn = v.get("name", "?")
        if not v.get("available", False):
            print(f"  {vn:<22} unavailable: {v.get('reason', '')}")
            unavailable.append(f"{name} {vn}")
            continue
        r = v.get("report") or {}
        proc = (r.get("stages") or {}).get("process") or {}
        lat = r.get("latency") or {}
        launch = (r.get("process_parts") or {}).get("launch") or {}
        g50, g95, how = gpu_stage(r) if vn.startswith("cuda") else (None, None, "none")
        lpc = r.get("launches_per_chunk")
        if isinstance(lpc, dict):
            lpc = lpc.get("p50", lpc.get("mean"))
        rows[vn] = {"proc_p50": proc.get("p50"), "proc_p95": proc.get("p95"), "gpu_p95": g95, "gpu_how": how}
        print(f"  {vn:<22} {us(proc.get('p50')):>9} {us(proc.get('p95')):>9} {us(lat.get('p95')):>9} "
              f"{us(launch.get('p50')):>10} {us(g50):>8} {us(g95):>8} {str(lpc):>8}")
    results[name] = rows

print("\ntargets")
g = results.get("compare_chain6_c256", {}).get("cuda:graph")
if g and g["gpu_p95"] is not None:
    ok = g["gpu_p95"] <= 30000
    print(f"  graph, 256 frames stereo, 6 sections: GPU stage p95 {us(g['gpu_p95'])} us ({g['gpu_how']}), "
          f"target <= 30 us: {'MET' if ok else 'MISSED'}")
else:
    print("  graph, 256 frames stereo, 6 sections: no data")
rows = results.get("compare_chain10_c128", {})
e, g = rows.get("cuda:eager:unfused"), rows.get("cuda:graph")
if e and g and e["proc_p50"] and g["proc_p50"]:
    ratio = e["proc_p50"] / g["proc_p50"]
    print(f"  10 filters, 128 frames: eager unfused / graph process p50 = {ratio:.2f}x, target >= 3x: "
          f"{'MET' if ratio >= 3 else 'MISSED'}")
else:
    print("  10 filters, 128 frames: no data")
if unavailable:
    print("\nvariants that could not run: " + ", ".join(unavailable))
    sys.exit(3)
PY
  case $? in
    0) ;;
    3) FAILED+=("compare (some variants could not run; see summary)") ;;
    *) FAILED+=("summary (python3)") ;;
  esac
else
  {
    echo "python3 not found: the compare tables as printed"
    for f in "$OUT"/compare_*.out; do
      echo
      echo "== $(basename "$f" .out)"
      cat "$f"
    done
  } >"$SUMMARY"
  if grep -lE '"available": *false' "$OUT"/compare_*.json >/dev/null 2>&1; then
    FAILED+=("compare (some variants could not run: $(grep -lE '"available": *false' "$OUT"/compare_*.json | xargs -n1 basename | tr '\n' ' '))")
  fi
fi
log ""
log "== summary ($SUMMARY)"
cat "$SUMMARY" | tee -a "$LOG"

log ""
log "== done in $((SECONDS - START))s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED steps (${#FAILED[@]}):"
  for f in "${FAILED[@]}"; do log "  - $f"; done
  exit 1
fi
log "all steps passed"
exit 0
