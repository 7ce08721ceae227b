#!/usr/bin/env bash
# make fuzz: builds the libFuzzer targets of tests/fuzz with clang in their own build folder
# (AddressSanitizer, UndefinedBehaviorSanitizer, CUDA off), replays the committed corpus
# through each, then fuzzes each for FUZZ_SECONDS starting from that corpus. Fails on any
# crash, sanitizer report, leak, timeout or broken invariant, naming the input it kept.
#   FUZZ_SECONDS   seconds of fuzzing per target (default 60; 0: replay the corpus only)
#   FUZZ_TARGETS   the targets to run (default: all)
#   FUZZ_BUILD     the build folder (default build-fuzz)
#   FUZZ_REQUIRED  1: fail, instead of skipping, when clang or libFuzzer cannot be had
#   JOBS           build jobs (default 2)
# New inputs found go to $FUZZ_BUILD/corpus/<target>/ (never into the committed corpus),
# crashes to $FUZZ_BUILD/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD:-build-fuzz}
jobs=${JOBS:-2}
read -r -a targets <<<"${FUZZ_TARGETS:-chain_spec sos_file saved_report report_fields}"

skip() {
  if [ "${FUZZ_REQUIRED:-0}" = 1 ]; then
    echo "fuzz: FAILED: $*" >&2
    exit 1
  fi
  echo "fuzz: SKIPPED: $* (the fuzz targets were not built or run)"
  exit 0
}

# clang and libFuzzer: installed when missing (scripts/install-deps.sh --fuzz)
bash scripts/install-deps.sh --fuzz || skip "clang and libFuzzer could not be installed (scripts/install-deps.sh --fuzz)"
cxx=${FUZZ_CXX:-clang++}
command -v "$cxx" >/dev/null || skip "$cxx not found"
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$probe/p.cpp"
"$cxx" -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" 2>"$probe/err" ||
  skip "$cxx cannot link with -fsanitize=fuzzer,address,undefined: $(head -n 1 "$probe/err")"

start=$(date +%s)
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" -DCHUNKSCOPE_CUDA=OFF \
  -DCHUNKSCOPE_FUZZ=ON -DCHUNKSCOPE_BUILD_TESTS=OFF -DCHUNKSCOPE_BUILD_EXAMPLES=OFF >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; echo "fuzz: FAILED: configuring $build" >&2; exit 1; }
cmake --build "$build" -j "$jobs" --target fuzz_all
built=$(date +%s)
echo "fuzz: built in $((built - start)) s"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=()
for t in "${targets[@]}"; do
  exe="$build/tests/fuzz/fuzz_$t"
  seeds="tests/fuzz/corpus/$t"
  [ -x "$exe" ] || { echo "fuzz: no target $t" >&2; exit 2; }
  dict=()
  case "$t" in
    chain_spec) dict=(-dict=tests/fuzz/chain_spec.dict) ;;
    saved_report) dict=(-dict=tests/fuzz/report.dict) ;;
  esac
  work="$build/corpus/$t"
  art="$build/artifacts/$t"
  mkdir -p "$work" "$art"
  log="$build/fuzz-$t.log"
  # every committed input once, each on its own: a crash names its file
  if ! "$exe" -runs=0 "${dict[@]}" "$seeds" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $t: FAILED replaying $seeds (log: $log)" >&2
    failed+=("$t")
    continue
  fi
  if [ "$seconds" -gt 0 ]; then
    # -timeout: one input running 10 s is a hang; -rss_limit_mb: a memory blow-up is a crash
    if ! "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$art/" "${dict[@]}" "$work" "$seeds" >>"$log" 2>&1; then
      tail -n 80 "$log"
      echo "fuzz: $t: FAILED; the input is kept in $art/ (log: $log)" >&2
      failed+=("$t")
      continue
    fi
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$' || true)
  echo "fuzz: $t: ok (corpus replayed${execs:+, $execs inputs in ${seconds} s})"
done
echo "fuzz: $(( $(date +%s) - start )) s in all"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ok"
