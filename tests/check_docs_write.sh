#!/usr/bin/env bash
# make docs-examples on a stale example: after --write, --check finds nothing; the stale row
# is gone, the rows the command prints inside the stretch shown whole are in, the cuts stay
# where they were, and the response row shows the real figure.
#   check_docs_write.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 source=$2
doc=$(mktemp "${TMPDIR:-/tmp}/chunkscope-docs-write.XXXXXX.md")
trap 'rm -f "$doc"' EXIT
cp "$source/tests/data/docs_write_example.md" "$doc"
fail() { echo "docs write: $*" >&2; cat "$doc" >&2; exit 1; }
if python3 "$source/scripts/docs_examples.py" --check --build "$build" --source "$source" "$doc" >/dev/null; then
  fail "the check passed on the stale example"
fi
python3 "$source/scripts/docs_examples.py" --write --build "$build" --source "$source" "$doc"
python3 "$source/scripts/docs_examples.py" --check --build "$build" --source "$source" "$doc" || fail "the check fails after --write"
grep -q '^latencyx' "$doc" && fail "the stale row is still there"
grep -q '^rate       48000 Hz$' "$doc" || fail "the rate row the command prints was not brought in"
grep -q '^fusion ' "$doc" || fail "the fusion row the command prints was not brought in"
grep -q '^dispatches 1 per chunk' "$doc" || fail "the dispatches row was not regenerated"
[ "$(grep -c '^\.\.\.$' "$doc")" -eq 2 ] || fail "the cuts did not stay"
want=$("$build/chunkscope" chain 'lp:1k | gain:6dB' | grep -E '^ +20 Hz')
grep -qxF -- "$want" "$doc" || fail "the response row is not the command's: $want"
echo "docs write: the stale example was regenerated"
