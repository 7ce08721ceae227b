#!/usr/bin/env bash
# Installs the Debian packages chunkscope needs to build, test and run its demo,
# but only those that are missing. Uses sudo when not root; never installs recommends.
#   scripts/install-deps.sh          build + demo + tests (stress-ng: make test-stress)
#   scripts/install-deps.sh --demo   only what building the binary needs (make demo)
#   scripts/install-deps.sh --fuzz   the same, and clang with libFuzzer (make fuzz)
#   scripts/install-deps.sh --scipy  the same, and Python with SciPy (make bench-scipy)
#   scripts/install-deps.sh --check  list what is missing and exit 1 if anything is
set -euo pipefail

check=0
demo=0
fuzz=0
scipy=0
for arg in "$@"; do
  case "$arg" in
    --check) check=1 ;;
    --demo) demo=1 ;;
    --fuzz) fuzz=1 ;;
    --scipy) scipy=1 ;;
    *) echo "usage: scripts/install-deps.sh [--check] [--demo] [--fuzz] [--scipy]" >&2; exit 2 ;;
  esac
done

# what building the chunkscope binary needs (make demo)
packages=(
  cmake make ninja-build g++ pkg-config git
  libsndfile1-dev portaudio19-dev
  libconcurrentqueue-dev libreaderwriterqueue-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libcivetweb-dev
  liblilv-dev ladspa-sdk
  # libfaust's C headers: the build hosts faust: stages (the library is opened at run time)
  faust-common
)
# and what the tests and the rest of the build need (make test)
if [ "$demo" -eq 0 ]; then
  packages+=(
    libjack-jackd2-dev doctest-dev libbenchmark-dev dpkg-dev
    jackd2 chromium time stress-ng prometheus
    # plugins the lv2:/ladspa: tests run, and lv2apply to check chunkscope's output against
    lilv-utils swh-lv2 x42-plugins caps mda-lv2
    # libfaust (LLVM and interpreter backends) that faust: stages load, and the faust command
    # that compiles the equality test's program to C++
    libfaust2 faust
  )
fi
# clang and its runtime libraries, libFuzzer among them (the distribution's default version)
if [ "$fuzz" -eq 1 ]; then
  packages+=(clang libclang-rt-dev)
fi
# the distribution's Python with SciPy and NumPy, for scripts/bench_vs_scipy.py
if [ "$scipy" -eq 1 ]; then
  packages+=(python3 python3-scipy python3-numpy)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "$check" -eq 1 ]; then
  if [ ${#missing[@]} -eq 0 ]; then echo "deps: all present"; exit 0; fi
  echo "deps: missing: ${missing[*]}"; exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: not root and sudo not found; install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# jackd2 asks about real-time priority at install time; answer "no" without a prompt.
echo "jackd2 jackd/tweak_rt_limits boolean false" | $sudo debconf-set-selections 2>/dev/null || true
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
