#!/usr/bin/env bash
# Writes the man page (chunkscope.1) and the bash completion (chunkscope.bash) from what the
# program itself says: `chunkscope --help` and each command's `--help`, and the exit codes
# from docs/profiler.md ("Exit codes and errors"). Run by the build after the binary links,
# so both always match the binary they are installed with.
#   gen_cli_files.sh BIN DOCS OUTDIR VERSION
set -euo pipefail
bin=$1 docs=$2 out=$3 version=$4
mkdir -p "$out"

# The help text with the binary's path as users type it.
help_of() { "$bin" "$@" --help | sed "s|$bin|chunkscope|g"; }

# The commands: the names under "Subcommands:" in the top-level help.
commands=$(help_of | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
[ -n "$commands" ] || { echo "gen_cli_files: '$bin --help' lists no commands" >&2; exit 1; }

# A command's flags: the option column of its help ("  -c,--chain TEXT  ..."), long and short.
flags_of() {
  help_of "$@" | awk '/^  -/ {n = split($1, f, ","); for (i = 1; i <= n; ++i) if (f[i] ~ /^-/) print f[i]}' | sort -u
}

# Text for roff: backslashes escaped, a line starting with . or ' protected.
roff() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }

man_page() {
  local summary
  summary=$(help_of | head -n 1 | sed 's/^chunkscope: //')
  cat <<EOF
.TH CHUNKSCOPE 1 "" "chunkscope $version" "User Commands"
.SH NAME
chunkscope \\- $(printf '%s' "$summary" | roff)
.SH SYNOPSIS
.B chunkscope
.I command
.RI [ options ]
.br
.B chunkscope
.RB [ \\-\\-help | \\-\\-version ]
.SH DESCRIPTION
chunkscope pushes audio in fixed-size chunks through a filter chain (on the CPU, or on an
NVIDIA GPU), measures every chunk at every stage boundary, and says, with evidence, whether
the chain keeps real time: p95 chunk latency against the chunk's duration less a margin,
output cadence, drops and deadline misses, and where the time went.
Each command below is followed by its own \\fB\\-\\-help\\fR text.
The full reference (chain specs, metrics, report formats) is docs/profiler.md in the source.
.SH COMMANDS
EOF
  local c
  for c in $commands; do
    printf '.SS %s\n.nf\n' "$c"
    help_of "$c" | roff
    printf '.fi\n'
  done
  printf '.SH "EXIT STATUS"\n'
  awk '/^## Exit codes and errors/ {on = 1; next} on && /^## / {exit}
       on && /^\| [0-9]+ \|/ {split($0, f, "|"); gsub(/^ +| +$/, "", f[2]); gsub(/^ +| +$/, "", f[3]); gsub(/`/, "", f[3]);
                              printf ".TP\n.B %s\n%s\n", f[2], f[3]}' "$docs" | roff_body
  cat <<'EOF'
.SH "SEE ALSO"
.BR jackd (1),
.BR pw-top (1)
EOF
}
# The exit-code lines already carry roff requests; only their text needs escaping.
roff_body() { sed -e '/^\./!s/\\/\\e/g' -e "/^\.[A-Z]/!s/^\([.']\)/\\\\\&\1/"; }

completion() {
  cat <<EOF
# bash completion for chunkscope $version (generated from its --help)
_chunkscope() {
  local cur=\${COMP_WORDS[COMP_CWORD]} opts
  if (( COMP_CWORD == 1 )); then
    COMPREPLY=( \$(compgen -W "$(echo $commands) --help --version" -- "\$cur") )
    return
  fi
  case "\${COMP_WORDS[1]}" in
EOF
  local c
  for c in $commands; do
    printf '    %s) opts="%s" ;;\n' "$c" "$(flags_of "$c" | tr '\n' ' ' | sed 's/ $//')"
  done
  cat <<'EOF'
    *) opts="" ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=( $(compgen -W "$opts" -- "$cur") )
  else
    COMPREPLY=( $(compgen -f -- "$cur") )
  fi
}
complete -o filenames -F _chunkscope chunkscope
EOF
}

man_page > "$out/chunkscope.1.tmp" && mv "$out/chunkscope.1.tmp" "$out/chunkscope.1"
completion > "$out/chunkscope.bash.tmp" && mv "$out/chunkscope.bash.tmp" "$out/chunkscope.bash"
