#!/usr/bin/env bash
# The generated man page and bash completion cover the binary: every command has its
# section and every flag of its --help is in the page; man renders the page without a
# warning; the completion completes commands and each command's flags.
#   check_cli_files.sh BIN SHARE_DIR
set -uo pipefail
bin=$1 share=$2
page=$share/chunkscope.1 comp=$share/chunkscope.bash
fail=0
bad() { echo "check_cli_files: $*" >&2; fail=1; }
[ -s "$page" ] || { echo "check_cli_files: no man page at $page" >&2; exit 1; }
[ -s "$comp" ] || { echo "check_cli_files: no completion at $comp" >&2; exit 1; }

commands=$("$bin" --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
[ "$(echo "$commands" | wc -w)" -ge 10 ] || bad "'chunkscope --help' lists too few commands: $commands"
for c in $commands; do
  grep -qx ".SS $c" "$page" || bad "the man page has no section for '$c'"
  for f in $("$bin" "$c" --help | awk '/^  -/ {n = split($1, f, ","); for (i = 1; i <= n; ++i) if (f[i] ~ /^--/) print f[i]}'); do
    grep -qF -- "$f" "$page" || bad "the man page lacks '$c $f'"
  done
done
# the chain's stage kinds, built-in and hosted, are in the help of every command that takes a chain
for c in chain replay synth process sweep; do
  grep -qF "$c" <<<"$commands" || continue
  help=$("$bin" "$c" --help)  # whole first: grep -q would end the pipe early (pipefail)
  grep -q 'kinds: lp, hp, .*, so, lv2, ladspa' <<<"$help" || bad "'chunkscope $c --help' does not list the stage kinds"
done
grep -q 'kinds: lp, hp, .*, so, lv2, ladspa' "$page" || bad "the man page does not list the stage kinds"
grep -q '^.SH "EXIT STATUS"' "$page" && grep -qx '.B 4' "$page" || bad "the man page lists no exit codes 0 to 4"
if command -v man >/dev/null; then
  warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
  [ -z "$warnings" ] || bad "man warns about the page: $warnings"
fi

complete_line() {  # the completions of the words given, the last being completed
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _chunkscope; echo "${COMPREPLY[*]}"' _ "$comp" "$@"
}
[ "$(complete_line chunkscope rep)" = "replay report" ] || bad "'chunkscope rep<TAB>' gives '$(complete_line chunkscope rep)'"
got=$(complete_line chunkscope replay --ch)
for want in --chain --channels --chunk; do [[ " $got " == *" $want "* ]] || bad "'chunkscope replay --ch<TAB>' lacks $want: '$got'"; done
[[ " $(complete_line chunkscope report --h) " == *" --html "* ]] || bad "'chunkscope report --h<TAB>' lacks --html"
[ -z "$(complete_line chunkscope chain --chunk)" ] || bad "'chunkscope chain --chunk<TAB>' offers a flag chain does not take"
[ "$fail" -eq 0 ] && echo "check_cli_files: $(echo "$commands" | wc -w) commands covered"
exit $fail
