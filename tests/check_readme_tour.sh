#!/usr/bin/env bash
# The README's tour, run top to bottom as a new user would: every `$ build/chunkscope ...`
# (and `$ mkdir ...`) command of README.md (with its `\` continuation lines), in order, in a fresh folder where
# build/ is the build under test and audio/ the bundled audio, out/ not there yet. Each must
# exit 0; a command with --fail-on-miss or --fail-on-unsafe may exit 1 (the verdict it asks
# for). Exit 2 (bad input) or 3 (a failure) fails the tour, naming the command.
#   check_readme_tour.sh README BUILD_DIR SOURCE_DIR
set -uo pipefail
readme=$1 build=$2 source=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/chunkscope-tour.XXXXXX")
trap 'rm -rf "$work"' EXIT
ln -s "$(cd "$build" && pwd)" "$work/build"
ln -s "$(cd "$source" && pwd)/audio" "$work/audio"

# the commands, one a line, continuations joined; and for each, the labels of the lines the
# README shows as its output ("workload   ...", "headline   ...": a word, then two or more
# spaces), space-separated on the line after it
mapfile -t listing < <(awk '
  function flush() { if (have) { print cmd; print labels }; have = 0; labels = "" }
  /^```/ { if (in_code) flush(); in_code = !in_code; next }
  in_code && cont { sub(/^ +/, ""); cmd = cmd " " $0; if (!sub(/ *\\$/, "", cmd)) cont = 0; next }
  in_code && /^\$ (build\/chunkscope|mkdir) / {
    flush(); cmd = substr($0, 3); have = 1; if (sub(/ *\\$/, "", cmd)) cont = 1; next }
  in_code && have && /^[a-z][a-z_-]*  / { split($0, w, " "); labels = labels " " w[1] }
' "$readme")
commands=() labels=()
for ((i = 0; i + 1 < ${#listing[@]}; i += 2)); do commands+=("${listing[i]}"); labels+=("${listing[i + 1]}"); done
[ "${#commands[@]}" -ge 1 ] || { echo "readme tour: found only ${#commands[@]} commands in $readme" >&2; exit 1; }

fail=0
cd "$work" || exit 1
for k in "${!commands[@]}"; do
  c=${commands[k]}
  start=$(date +%s)
  bash -c "$c" >"$work/last.out" 2>"$work/last.err" </dev/null
  rc=$?
  allowed=0
  if [[ $rc -eq 1 && ( "$c" == *--fail-on-miss* || "$c" == *--fail-on-unsafe* ) ]]; then allowed=1; fi
  if [[ $rc -ne 0 && $allowed -eq 0 ]]; then
    echo "readme tour: FAILED (exit $rc): $c" >&2
    sed 's/^/    /' "$work/last.err" | tail -n 5 >&2
    fail=1
  else
    echo "readme tour: ok (exit $rc, $(( $(date +%s) - start )) s): $c"
  fi
  # the output the README shows still has the shape the command prints: each labelled line
  for label in ${labels[k]}; do
    if ! grep -qE "^${label}  " "$work/last.out" "$work/last.err"; then
      echo "readme tour: the README shows a '$label' line that the command no longer prints: $c" >&2
      fail=1
    fi
  done
done
[ $fail -eq 0 ] && echo "readme tour: all ${#commands[@]} commands ran"
exit $fail
