#!/usr/bin/env bash
# Runs a slice of the test suite as a regular user (not root): the plugin, hosted-stage,
# bad-input, output-file and probe cases, which read the installed plugins, load stages,
# write and remove output files and refuse what a user may not do. For CI, which runs as
# root: it makes the user (chunkscope-test) when missing and lets it through the folders
# above the checkout (search permission only).
#   scripts/test_as_user.sh BUILD
set -euo pipefail
build=${1:?usage: scripts/test_as_user.sh BUILD}
build=$(cd "$build" && pwd)
if [ "$(id -u)" -ne 0 ]; then
  echo "test as user: already a regular user ($(id -un)); running the slice as it"
  runner=()
else
  user=chunkscope-test
  id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
  d=$build
  while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done
  runner=(runuser -u "$user" --)
fi
cd /tmp
"${runner[@]}" env HOME=/tmp "$build/tests/chunkscope_tests" \
  --test-case='plugins:*,hosted*,bad input*,outputs*,probe*' --no-intro=true
