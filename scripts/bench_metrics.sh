#!/usr/bin/env bash
# What a 1 s Prometheus scrape costs the engine: runs, alternating, RUNS times each
#   plain    chunkscope synth --chunk 256 --duration D --chain lp:8000:4 --json R
#   scraped  the same with --metrics-listen 127.0.0.1:PORT, and GET /metrics every second
#            (curl) while it runs
# and prints per run and as medians over the runs the report's engine_overhead (latency
# minus processing time) p50 and p99, the latency p99 and the misses. "scraped" pays both
# sides of the metrics: the sink thread's recording into the interval recorders and the
# sampler and HTTP threads beside the engine. Interleaving spreads drift in the machine's
# load over both. A benchmark, not a test: the figures depend on the machine and on what
# else runs on it.
#
#   scripts/bench_metrics.sh [BINARY] [RUNS] [DURATION] [EXTRA ARGS...]
#   scripts/bench_metrics.sh build/chunkscope 5 10s
set -euo pipefail

bin=${1:-build/chunkscope}
runs=${2:-5}
duration=${3:-10s}
shift $(( $# > 3 ? 3 : $# ))
[ -x "$bin" ] || { echo "bench_metrics: '$bin' is not an executable (build first)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench_metrics: needs python3 to read the JSON reports" >&2; exit 2; }
command -v curl >/dev/null || { echo "bench_metrics: needs curl to scrape" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/chunkscope-metrics.XXXXXX")
scraper=""
trap '[ -n "$scraper" ] && kill "$scraper" 2>/dev/null; rm -rf "$work"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
common=(synth --chunk 256 --duration "$duration" --chain lp:8000:4 --quiet)

echo "bench_metrics: $runs alternating runs each: $bin ${common[*]} [--metrics-listen + 1 s scrape] $*"
for ((i = 1; i <= runs; ++i)); do
  "$bin" "${common[@]}" --json "$work/plain.$i.json" "$@" || { echo "bench_metrics: plain run $i failed" >&2; exit 3; }
  port=$(free_port)
  ( while sleep 1; do curl -s -o /dev/null "http://127.0.0.1:$port/metrics" || true; done ) &
  scraper=$!
  "$bin" "${common[@]}" --json "$work/scraped.$i.json" --metrics-listen "127.0.0.1:$port" "$@" 2>/dev/null ||
    { echo "bench_metrics: scraped run $i failed" >&2; exit 3; }
  kill "$scraper" 2>/dev/null || true
  wait "$scraper" 2>/dev/null || true
  scraper=""
done

python3 - "$work" "$runs" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
modes = ["plain", "scraped"]
us = lambda ns: f"{ns / 1000:.1f} us"
rows = {m: [] for m in modes}
print(f"{'mode':<8} {'run':>3}  {'overhead p50':>12}  {'overhead p99':>12}  {'latency p99':>12}  misses")
for i in range(1, runs + 1):
    for m in modes:
        r = json.load(open(f"{work}/{m}.{i}.json"))
        o, l = r["engine_overhead"], r["latency"]
        rows[m].append((o["p50"], o["p99"], l["p99"]))
        print(f"{m:<8} {i:>3}  {us(o['p50']):>12}  {us(o['p99']):>12}  {us(l['p99']):>12}  {r['counts']['misses']}")
print(f"\nmedians over {runs} runs:")
med = {m: [statistics.median(x[k] for x in rows[m]) for k in range(3)] for m in modes}
for m in modes:
    p50, p99, lp99 = med[m]
    print(f"  {m:<8} engine overhead p50 {us(p50)}, p99 {us(p99)}; latency p99 {us(lp99)}")
d = med["scraped"][1] - med["plain"][1]
print(f"  the scrape's cost at p99: {d / 1000:+.1f} us")
PY
