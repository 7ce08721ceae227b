#!/usr/bin/env bash
# make bench-plugins: three packaged LV2 plugins at 64, 256 and 1024 frames, chunkscope's
# per-chunk time of the plugin's step (its mean over a synth run of silence at --speed max)
# against lv2bench's per-block time (its total over the same frames / the blocks, same block
# size, same plugin, silence as lv2bench feeds), ROUNDS interleaved rounds, medians and their
# ratio; then the largest safe instance count of one plugin chain at 256 frames, threaded and
# --inline (sweep over stream counts).
#   scripts/bench_plugins.sh CHUNKSCOPE [ROUNDS]
set -euo pipefail
cs=$1
rounds=${2:-5}
frames=96000
command -v lv2bench >/dev/null || { echo "bench-plugins: lv2bench not found (lilv-utils)" >&2; exit 1; }
# URI and the channels it takes (one instance, as lv2bench runs it)
plugins=("http://plugin.org.uk/swh-plugins/lowpass_iir 1" "http://gareus.org/oss/lv2/fil4#stereo 2"
         "http://gareus.org/oss/lv2/dpl#stereo 2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
step_mean() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["steps"]["list"][0]["wall"]["mean"])' "$1"; }
echo "bench-plugins: $rounds interleaved rounds, $frames frames of silence per run, per-block mean time in ns"
printf '%-46s %6s %12s %12s %8s\n' plugin block chunkscope lv2bench ratio
for p in "${plugins[@]}"; do
  read -r uri ch <<<"$p"
  for block in 64 256 1024; do
    : >"$tmp/cs" ; : >"$tmp/lb" ; : >"$tmp/lb.err"
    for _ in $(seq 1 "$rounds"); do
      "$cs" synth --signal silence --channels "$ch" --duration "$((frames / 48))ms" --chunk "$block" --speed max \
        --warmup 0 -q -c "lv2:$uri" --json "$tmp/r.json"
      step_mean "$tmp/r.json" >>"$tmp/cs"
      t=$(lv2bench -b "$block" -n "$frames" "$uri" 2>>"$tmp/lb.err" | awk -v u="$uri" '$NF == u {print $1}')
      awk -v t="$t" -v n="$frames" -v b="$block" 'BEGIN {print t * 1e9 / (n / b)}' >>"$tmp/lb"
    done
    c=$(median <"$tmp/cs"); l=$(median <"$tmp/lb")
    note=""
    # lv2bench runs the plugin without what it asked for: its time is not the plugin's normal work
    [ -s "$tmp/lb.err" ] && note="  (lv2bench: $(head -n 1 "$tmp/lb.err"))"
    printf '%-46s %6d %12.0f %12.0f %7.3fx%s\n' "$uri" "$block" "$c" "$l" "$(awk -v a="$c" -v b="$l" 'BEGIN {print a / b}')" "$note"
  done
done
chain='hp:80:4 | lv2:fil4#stereo | lp:12k:8'
for mode in threaded inline; do
  extra=(); [ "$mode" = inline ] && extra=(--inline)
  "$cs" sweep --synth noise -c "$chain" --chunks 256 --streams 1,2,4,8,16,32,64 --duration 2s "${extra[@]}" -q \
    --json "$tmp/s.json" >/dev/null
  n=$(/usr/bin/python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["frontier"][0]["largest_safe_streams"][0]["streams"]; print(f if f is not None else "none (not even 1 stream was safe)")' "$tmp/s.json")
  echo "capacity ($mode): '$chain' at 256 frames, largest safe stream count: $n"
done
