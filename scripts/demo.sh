#!/usr/bin/env bash
# chunkscope demo: show a planned chain, then run the bundled audio through two chains.
#   scripts/demo.sh <path to the chunkscope binary>
# Writes out/mix_filtered.wav and out/speech_filtered.flac under the repository root.
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

music_chain='hp:80:4 | lp:12000:8 | peak:1000:q=0.7:gain=6'
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
echo "Plans a filter chain, then streams the bundled audio through it in fixed-size chunks."

mkdir -p out

run chain "$music_chain" --rate 48000
run process audio/mix_stereo_48k.flac out/mix_filtered.wav --chain "$music_chain" --chunk 256
run process audio/speech_mono_44k1.wav out/speech_filtered.flac --chain "$speech_chain"

echo
echo "demo: wrote out/mix_filtered.wav and out/speech_filtered.flac"
echo "demo: commands, flags and formats are described in docs/profiler.md"
