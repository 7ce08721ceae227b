#!/usr/bin/env bash
# How many streams of the bundled chain fit on this machine at one chunk size, threaded,
# --inline and --batch, and what one more stream costs in CPU: runs, alternating, RUNS times each
#   threaded  chunkscope sweep audio/mix_stereo_48k.flac --chain CHAIN --chunks CHUNK --streams LIST
#   inline    the same with --inline
#   batched   the same with --batch (every stream's chunk of a period in one chunk, one call)
# and prints per run and as medians over the runs:
#   largest safe   the sweep's largest safe stream count at CHUNK (0: none of LIST)
#   cpu/stream     the least-squares slope of the engine threads' CPU share (of all CPUs)
#                  over the stream counts that ran: the cost of one more stream
# Interleaving spreads drift in the machine's load over both modes. A benchmark, not a test:
# the figures depend on the machine and on what else runs on it.
#
#   scripts/bench_streams.sh [BINARY] [RUNS] [DURATION] [LIST] [CHUNK]
#   scripts/bench_streams.sh build/chunkscope 3 4s 1,8,16,32,48,64,96,128,192,256 256
set -euo pipefail

bin=${1:-build/chunkscope}
runs=${2:-3}
duration=${3:-4s}
list=${4:-1,8,16,32,48,64,96,128,192,256}
chunk=${5:-256}
chain='hp:80:4 | lp:12000:8 | peak:1000:q=0.7:gain=6'
here=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$bin" ] || { echo "bench_streams: '$bin' is not an executable (build first)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench_streams: needs python3 to read the sweeps' JSON" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/chunkscope-streams.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "bench_streams: $runs alternating runs per mode: $bin sweep audio/mix_stereo_48k.flac --chain '$chain' --chunks $chunk --streams $list --duration $duration [--inline | --batch]"
for ((i = 1; i <= runs; ++i)); do
  for m in threaded inline batched; do
    extra=()
    [ "$m" = inline ] && extra=(--inline)
    [ "$m" = batched ] && extra=(--batch)
    "$bin" sweep "$here/audio/mix_stereo_48k.flac" --chain "$chain" --chunks "$chunk" --streams "$list" \
      --duration "$duration" --quiet --json "$work/$m-$i.json" "${extra[@]}" 2>/dev/null
  done
done

python3 - "$work" "$runs" "$chunk" <<'PY'
import json, statistics, sys
work, runs, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for m in ("threaded", "inline", "batched"):
    safe, slope = [], []
    for i in range(1, runs + 1):
        j = json.load(open(f"{work}/{m}-{i}.json"))
        cells = [c for c in j["cells"] if c["state"] == "done" and c.get("cpu_share") is not None]
        largest = next(e["streams"] for e in j["frontier"][0]["largest_safe_streams"] if e["chunk"] == chunk) or 0
        xs = [c["streams"] for c in cells]
        ys = [100 * c["cpu_share"] for c in cells]
        b = float("nan")
        if len(xs) >= 2:
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        safe.append(largest)
        slope.append(b)
        first_bad = next((c for c in cells if not c["safe"]), None)
        why = ""
        if first_bad:
            owners = ", ".join(f"{k} {v}" for k, v in first_bad["stall_owner"].items() if v)
            why = f"; first not safe: {first_bad['streams']} streams ({first_bad['stall_events']} stall events: {owners or 'none'}, {first_bad['drops']} drops)"
        print(f"  run {i} {m:8s}: largest safe {largest:4d}, cpu/stream {b:.3f}% of all CPUs{why}")
    print(f"{m:8s} median: largest safe {statistics.median(safe):g} streams, one more stream costs {statistics.median(slope):.3f}% of all CPUs")
PY
