#!/usr/bin/env bash
# Memory of a long run and of writing its reports: runs
#   chunkscope synth --speed max --chunk 128 --duration D --report-dir R --quiet
# under /usr/bin/time -v, samples the process's RSS every 20 ms, and prints
#   start RSS    the first sample once the engine's threads run
#   steady RSS   the RSS the run holds when it has streamed: the largest sample while the
#                engine's threads run (the trace ring and the statistics are allocated before
#                they start; the per-chunk series fills up as chunks arrive)
#   after run    the largest sample once they have been joined: building and writing the reports
#   peak RSS     the high-water mark of the whole process (time -v's maximum resident set size)
#   peak/steady  the ratio; the goal is at most 2
# and the size of each file written. A benchmark, not a test: the figures depend on the machine.
#
#   scripts/bench_report_memory.sh [BINARY] [DURATION] [EXTRA ARGS...]
#   scripts/bench_report_memory.sh build/chunkscope 600s
#   scripts/bench_report_memory.sh build/chunkscope 600s --trace-limit 1000000
# /usr/bin/time comes from the Debian package "time" (scripts/install-deps.sh installs it);
# without it the peak is the largest VmHWM sampled.
set -euo pipefail

bin=${1:-build/chunkscope}
duration=${2:-600s}
shift $(( $# > 2 ? 2 : $# ))
[ -x "$bin" ] || { echo "bench_report_memory: '$bin' is not an executable (build first)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/chunkscope-mem.XXXXXX")
trap 'rm -rf "$work"' EXIT
rdir="$work/R"
samples="$work/samples"
timelog="$work/time.log"

cmd=("$bin" synth --speed max --chunk 128 --duration "$duration" --report-dir "$rdir" --quiet "$@")
echo "bench_report_memory: ${cmd[*]}"

have_time=0
if [ -x /usr/bin/time ]; then
  have_time=1
  /usr/bin/time -v -o "$timelog" "${cmd[@]}" &
else
  echo "bench_report_memory: /usr/bin/time not found (scripts/install-deps.sh installs it); peak from sampled VmHWM" >&2
  "${cmd[@]}" &
fi
outer=$!

# the chunkscope process: the child of time, or the process itself
pid=$outer
if [ $have_time -eq 1 ]; then
  for _ in $(seq 1 100); do
    child=$(ps -o pid= --ppid "$outer" 2>/dev/null | head -n1 | tr -d ' ' || true)
    [ -n "$child" ] && { pid=$child; break; }
    sleep 0.02
  done
fi

# One sample every 20 ms, read with bash builtins only (no process per sample). The phase
# comes from the thread count: the engine's source, processor and sink threads exist while
# the run streams and are joined before the report is built and written.
start=$EPOCHREALTIME
: > "$samples"
while [ -r "/proc/$pid/status" ]; do
  rss="" hwm="" threads=""
  while read -r key value _; do
    case $key in
      VmRSS:) rss=$value ;;
      VmHWM:) hwm=$value ;;
      Threads:) threads=$value ;;
    esac
  done < "/proc/$pid/status" 2>/dev/null || true
  [ -n "$rss" ] || break
  phase=other
  if [ "${threads:-1}" -gt 1 ]; then phase=run; streamed=1; elif [ -n "${streamed:-}" ]; then phase=write; fi
  echo "$EPOCHREALTIME $phase $rss $hwm" >> "$samples"
  sleep 0.02
done
rc=0
wait "$outer" || rc=$?
[ $rc -eq 0 ] || { echo "bench_report_memory: chunkscope exited $rc" >&2; cat "$timelog" 2>/dev/null >&2; exit 1; }

first=$(awk '$2 == "run" {print $3; exit}' "$samples")
steady=$(awk '$2 == "run" && $3 > m {m = $3} END {print m + 0}' "$samples")
after=$(awk '$2 == "write" && $3 > m {m = $3} END {print m + 0}' "$samples")
sampled_hwm=$(awk '$4 > m {m = $4} END {print m + 0}' "$samples")
if [ $have_time -eq 1 ]; then
  peak=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$timelog")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$timelog")
else
  peak=$sampled_hwm
  wall="$(awk -v s="$start" 'END {printf "%.1f s", $1 - s}' "$samples")"
fi
span() { awk -v p="$1" '$2 == p {if (!n++) a = $1; b = $1} END {printf "%d samples over %.1f s", n, b - a}' "$samples"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f MiB", k / 1024}'; }
echo "wall         $wall; streaming: $(span run); reports: $(span write)"
echo "start RSS    $(mib "${first:-0}")  (first sample while streaming)"
echo "steady RSS   $(mib "$steady")  (largest sample while streaming)"
echo "after run    $(mib "$after")  (largest sample while building and writing the reports)"
echo "peak RSS     $(mib "$peak")"
awk -v p="$peak" -v s="$steady" 'BEGIN {if (s > 0) printf "peak/steady  %.2f  (goal: at most 2)\n", p / s}'
echo "files:"
(cd "$rdir" && find . -type f -printf '%s %p\n' | sort -k2 | awk '{printf "  %10.1f MiB  %s\n", $1 / 1048576, substr($2, 3)}')
