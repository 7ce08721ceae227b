#!/usr/bin/env bash
# chunkscope demo: show a planned chain, then stream the bundled speech clip through it at
# real-time pace (about 6 s) and print the report.
#   scripts/demo.sh <path to the chunkscope binary>
# Writes out/report.json, out/report.html, out/trace.json, out/hgrm/*.hgrm,
# out/speech_filtered.wav and out/compare.json.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 <chunkscope binary>" >&2
  exit 2
fi

# Resolve the binary before leaving the caller's folder, then work from the repository root.
cs="$1"
case "$cs" in
  /*) ;;
  */*) cs="$(cd "$(dirname "$cs")" && pwd)/$(basename "$cs")" ;;
  *) cs="$(command -v "$cs" || echo "$cs")" ;;
esac
if [ ! -x "$cs" ]; then
  echo "demo: '$1' is not an executable chunkscope binary (run 'make build' first)" >&2
  exit 2
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."

speech_chain='hp:120:2 | peak:3000:q=1:gain=4'

# Echo a command the way one would type it (arguments with spaces in single quotes), then run it.
run() {
  local shown="" a
  for a in "$@"; do
    case "$a" in
      *[[:space:]\|]*) shown+=" '$a'" ;;
      *) shown+=" $a" ;;
    esac
  done
  echo
  echo "\$ chunkscope${shown}"
  "$cs" "$@"
}

echo "== chunkscope demo =="
"$cs" --version
echo "Plans a filter chain, then streams the bundled audio through it in fixed-size chunks"
echo "at real-time pace and tells whether the chain keeps real time."

mkdir -p out

run chain "$speech_chain" --rate 44100
run replay audio/speech_mono_44k1.wav --chain "$speech_chain" --chunk 256 \
  --output out/speech_filtered.wav --report-dir out

run report out/report.json --html out/report.html
run cadence out/report.json
# fused against unfused (and the GPU variants, listed as unavailable where there is no GPU)
run compare audio/speech_mono_44k1.wav --chain "$speech_chain" --chunk 256 --speed 4 --rounds 2 \
  --variants cpu:fused,cpu:unfused,cuda:eager,cuda:graph --json out/compare.json

echo
echo "demo: wrote out/report.json, out/report.html (open it in a browser), out/trace.json (open it in"
echo "      Perfetto), out/hgrm/, out/speech_filtered.wav and out/compare.json"
echo "demo: commands, flags and formats are described in docs/profiler.md"
