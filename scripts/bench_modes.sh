#!/usr/bin/env bash
# What the engine adds to a chunk in two run modes, against the machine's bare wake-up:
# runs, alternating, RUNS times each
#   default      chunkscope synth --chunk 128 --duration D --json R   (three threads, blocking waits)
#   inline+spin  the same with --inline --wait spin                     (one thread fills and processes, busy-waits)
# with an empty chain (no processing: what is left is the engine), and prints per run and
# as medians over the runs:
#   overhead p50, p99   the report's engine_overhead (latency minus processing time)
#   wake p50            the platform baseline's wake-up lateness p50 (the report's platform
#                       section, measured before the run with the run's wait mode), when
#                       the report has one
# Interleaving spreads drift in the machine's load over both modes. A benchmark, not a test:
# the figures depend on the machine and on what else runs on it.
#
#   scripts/bench_modes.sh [BINARY] [RUNS] [DURATION] [EXTRA ARGS...]
#   scripts/bench_modes.sh build/chunkscope 5 5s
#   scripts/bench_modes.sh build/chunkscope 5 5s --cpus 0,1
set -euo pipefail

bin=${1:-build/chunkscope}
runs=${2:-5}
duration=${3:-5s}
shift $(( $# > 3 ? 3 : $# ))
[ -x "$bin" ] || { echo "bench_modes: '$bin' is not an executable (build first)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench_modes: needs python3 to read the JSON reports" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/chunkscope-modes.XXXXXX")
trap 'rm -rf "$work"' EXIT

modes=("default" "inline+spin")
mode_args() {
  case "$1" in
    default) ;;
    inline+spin) echo "--inline --wait spin" ;;
  esac
}

echo "bench_modes: $runs alternating runs per mode: $bin synth --chunk 128 --duration $duration [mode flags] $*"
for ((i = 1; i <= runs; ++i)); do
  for m in "${modes[@]}"; do
    # shellcheck disable=SC2046
    "$bin" synth --chunk 128 --duration "$duration" --quiet --json "$work/$m.$i.json" $(mode_args "$m") "$@" ||
      { echo "bench_modes: run $i of $m failed" >&2; exit 3; }
  done
done

python3 - "$work" "$runs" "${modes[@]}" <<'EOF'
import json, statistics, sys

work, runs, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def wake_p50(report):
    """The baseline's wake-up p50 from the report's platform section (the one measured
    before the run when both are there); None when the report has none."""
    found = []
    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                p = path + [str(k)]
                if "wake" in str(k).lower() and isinstance(v, dict) and isinstance(v.get("p50"), (int, float)):
                    found.append((p, v["p50"]))
                walk(v, p)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, path + [str(i)])
    walk(report.get("platform"), [])
    if not found:
        return None
    before = [v for p, v in found if any("before" in x for x in p)]
    return (before or [found[0][1]])[0]

def us(ns):
    return "n/a" if ns is None else f"{ns / 1000:.1f} us"

rows = {m: [] for m in modes}
print(f"{'mode':<12} {'run':>3}  {'overhead p50':>12}  {'overhead p99':>12}  {'wake p50':>10}  drops")
for i in range(1, runs + 1):
    for m in modes:
        with open(f"{work}/{m}.{i}.json") as f:
            r = json.load(f)
        o = r["engine_overhead"]
        w = wake_p50(r)
        rows[m].append((o["p50"], o["p99"], w))
        print(f"{m:<12} {i:>3}  {us(o['p50']):>12}  {us(o['p99']):>12}  {us(w):>10}  {r['counts']['drops']}")

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

print()
print(f"medians over {runs} runs:")
for m in modes:
    p50 = med([x[0] for x in rows[m]])
    p99 = med([x[1] for x in rows[m]])
    w = med([x[2] for x in rows[m]])
    # the ratio within each run (one machine state), then its median; a spinning source
    # does not sleep, so its wake-up is no yardstick
    ratios = [x[0] / x[2] for x in rows[m] if x[2]]
    if "spin" in m:
        extra = " (spinning: no sleep to compare the overhead with)"
    else:
        extra = f", {statistics.median(ratios):.2f}x the bare wake-up (median of the runs' ratios)" if ratios else ""
    print(f"  {m:<12} engine overhead p50 {us(p50)}, p99 {us(p99)}; baseline wake-up p50 {us(w)}{extra}")
if all(x[2] is None for m in modes for x in rows[m]):
    print("  (the reports carry no platform section: no baseline wake-up figures)")
EOF
