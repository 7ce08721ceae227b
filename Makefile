# chunkscope front door. Every target brings what it needs first.
#   make demo      set up, build, and run the bundled audio through a chain
#   make test      set up, build, and run the test suite
BUILD     ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
# the tests run under ThreadSanitizer by test-tsan (doctest source-file filters)
TSAN_TESTS ?= *test_engine.cpp,*test_compare.cpp,*test_stage_bench.cpp,*test_metrics.cpp,*test_streams.cpp,*test_sweep.cpp,*test_batch.cpp,*test_probe.cpp
# ... and the monitor's, against a real JACK server the tests start (a device stream, a server
# that stalls until monitor gives up, a server killed mid-run); without jackd they are skipped
TSAN_JACK_TESTS ?= *test_monitor.cpp
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CONFIG    ?= RelWithDebInfo
CMAKE_ARGS ?=
# Ninja starts a library's compiles before the libraries it links are built, which keeps both
# cores busy; make's generator runs the targets one after another.
GENERATOR ?= $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo 'Unix Makefiles')
CS        := $(BUILD)/chunkscope

.PHONY: all deps deps-demo configure build demo test docs-examples package test-asan test-tsan bench bench-hosted bench-probe bench-plugins bench-memory bench-modes bench-scipy bench-streams fuzz test-stress clean

all: build

deps:
	@bash scripts/install-deps.sh

# make demo installs and builds only what the binary needs: a build folder it configures
# first has no tests or examples, which make build and make test turn on later.
deps-demo:
	@bash scripts/install-deps.sh --demo

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=$(CONFIG) $(CMAKE_ARGS)

configure: deps $(BUILD)/CMakeCache.txt
	@grep -q '^CHUNKSCOPE_BUILD_TESTS:BOOL=ON' $(BUILD)/CMakeCache.txt || \
	  cmake -S . -B $(BUILD) -DCHUNKSCOPE_BUILD_TESTS=ON -DCHUNKSCOPE_BUILD_EXAMPLES=ON

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: deps-demo
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=$(CONFIG) \
	  -DCHUNKSCOPE_BUILD_TESTS=OFF -DCHUNKSCOPE_BUILD_EXAMPLES=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS) --target chunkscope
	@bash scripts/demo.sh $(CS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Run every example command of README.md and docs/profiler.md and write the output each
# printed into its block, keeping the blocks' cuts (scripts/docs_examples.py; the tests run
# the same script with --check)
docs-examples: build
	python3 scripts/docs_examples.py --write --build $(BUILD) README.md docs/profiler.md

# The hosted-plugin cases (and the docs' examples, which host LV2 plugins) load third-party
# LV2 and LADSPA libraries, some of which leak what their initialisers allocate and free it
# with a mismatched delete when unloaded; the faust: cases load libfaust, whose LLVM JIT is
# kept for the life of the process (its allocations are reported as leaks): those cases run
# with leak detection and that one check off (every other check on); the rest of the suite
# runs with every check.
ASAN_PLUGIN_CASES ?= ^(plugins: |faust: |readme_examples_|profiler_doc_examples_)
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCHUNKSCOPE_SANITIZE=ON -DCHUNKSCOPE_CUDA=OFF $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -E '$(ASAN_PLUGIN_CASES)'
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=0:new_delete_type_mismatch=0 \
	  ctest --output-on-failure -j $(JOBS) -R '$(ASAN_PLUGIN_CASES)'

# A Debian package (CPack, dependencies from the libraries the binaries link) in $(BUILD)/:
# chunkscope_<version>_<arch>.deb, installable with apt-get install ./$(BUILD)/chunkscope_*.deb
package: build
	cd $(BUILD) && cpack -G DEB

# Races found are written to $(TSAN_BUILD)/tsan-logs/ (one file per process that had one),
# printed, and fail the target.
test-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHUNKSCOPE_TSAN=ON -DCHUNKSCOPE_CUDA=OFF $(CMAKE_ARGS)
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target chunkscope chunkscope_tests chunkscope_jack_tests
	rm -rf $(TSAN_BUILD)/tsan-logs && mkdir -p $(TSAN_BUILD)/tsan-logs
	cd $(TSAN_BUILD) && TSAN_OPTIONS="log_path=$(CURDIR)/$(TSAN_BUILD)/tsan-logs/race second_deadlock_stack=1 exitcode=0 suppressions=$(CURDIR)/tests/tsan.supp" \
	  ./tests/chunkscope_tests -sf='$(TSAN_TESTS)'
	@cd $(TSAN_BUILD) && TSAN_OPTIONS="log_path=$(CURDIR)/$(TSAN_BUILD)/tsan-logs/race second_deadlock_stack=1 exitcode=0 suppressions=$(CURDIR)/tests/tsan.supp" \
	  ./tests/chunkscope_jack_tests -sf='$(TSAN_JACK_TESTS)'; rc=$$?; \
	  if [ $$rc -eq 77 ]; then echo "test-tsan: the JACK tests were skipped (no jackd; make deps installs it)"; \
	  elif [ $$rc -ne 0 ]; then exit $$rc; fi
	@if ls $(TSAN_BUILD)/tsan-logs/race.* >/dev/null 2>&1; then cat $(TSAN_BUILD)/tsan-logs/race.*; \
	  echo "ThreadSanitizer: reports in $(TSAN_BUILD)/tsan-logs/"; exit 1; fi
	@echo "ThreadSanitizer: no reports"

# libFuzzer targets for chain specs, SOS files and saved reports (tests/fuzz/), built with
# clang, AddressSanitizer and UBSan in $(FUZZ_BUILD); each runs FUZZ_SECONDS from the
# committed corpus. Any crash fails; without clang and libFuzzer it says so and skips.
FUZZ_SECONDS ?= 60
FUZZ_BUILD ?= build-fuzz
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) bash tests/fuzz/run.sh

# The test suite (as make test) STRESS_ROUNDS times with stress-ng --cpu STRESS_CPUS running
# beside it; prints N/STRESS_ROUNDS and fails unless every round passed.
STRESS_ROUNDS ?= 5
STRESS_CPUS ?= 2
# Each round's output is kept in $(BUILD)/test-stress/round-N.log; the failed tests of each
# round are printed. stress-ng is stopped when the target ends, however it ends.
test-stress: build
	@command -v stress-ng >/dev/null || { echo "test-stress: stress-ng not found (make deps installs it)" >&2; exit 1; }
	@mkdir -p $(BUILD)/test-stress; \
	stress-ng --cpu $(STRESS_CPUS) --timeout 4h --quiet & load=$$!; \
	trap 'kill $$load 2>/dev/null; wait $$load 2>/dev/null' EXIT INT TERM HUP; \
	sleep 1; pass=0; \
	for i in $$(seq 1 $(STRESS_ROUNDS)); do \
	  log=$(BUILD)/test-stress/round-$$i.log; \
	  if (cd $(BUILD) && ctest --output-on-failure -j $(JOBS)) >$$log 2>&1; then \
	    pass=$$((pass + 1)); echo "test-stress: round $$i/$(STRESS_ROUNDS): passed ($$(grep -o 'Total Test time.*' $$log))"; \
	  else \
	    echo "test-stress: round $$i/$(STRESS_ROUNDS): FAILED (log: $$log)"; \
	    sed -n '/The following tests FAILED/,$$p' $$log | grep -v '^Errors while running' | sed 's/^/  /'; \
	  fi; \
	done; \
	echo "test-stress: $$pass/$(STRESS_ROUNDS) rounds passed with stress-ng --cpu $(STRESS_CPUS) beside the suite"; \
	test $$pass -eq $(STRESS_ROUNDS)

bench: build
	$(CS) bench

# What hosting a stage costs: step timing per step, the example compressor's call through
# chunkscope against a bare loop, the audit per hosted call (HOSTED_ROUNDS interleaved rounds).
HOSTED_ROUNDS ?= 9
# Three packaged LV2 plugins' step time against lv2bench's per block, and a plugin chain's
# largest safe instance count (PLUGIN_ROUNDS interleaved rounds).
PLUGIN_ROUNDS ?= 5
bench-plugins: build
	@bash scripts/bench_plugins.sh $(CS) $(PLUGIN_ROUNDS)

bench-hosted: build
	$(BUILD)/tests/bench_hosted $(BUILD)/examples/libcompressor_stage.so $(BUILD)/tests/stages/libclean_stage.so $(HOSTED_ROUNDS)

# What the probe library costs an application's callback per block (include/chunkscope/probe.h).
bench-probe: build
	$(BUILD)/tests/bench_probe

# Memory of a long run and of writing its reports (peak against steady RSS); MEM_DURATION
# of media at --speed max, chunks of 128 frames.
MEM_DURATION ?= 600s
bench-memory: build
	@bash scripts/bench_report_memory.sh $(CS) $(MEM_DURATION)

# Engine overhead of the default run mode and of --inline --wait spin against the platform
# baseline's wake-up, MODES_RUNS alternating runs of MODES_DURATION each.
MODES_RUNS ?= 5
MODES_DURATION ?= 5s
bench-streams: build
	bash scripts/bench_streams.sh $(CS)

bench-modes: build
	@bash scripts/bench_modes.sh $(CS) $(MODES_RUNS) $(MODES_DURATION)

# The CPU kernels (--isa scalar and auto) beside scipy.signal.sosfilt on the same chain and
# data, SCIPY_ROUNDS interleaved rounds, and replay's process stage at 128 frames with each.
SCIPY_ROUNDS ?= 9
bench-scipy: build
	@bash scripts/install-deps.sh --scipy
	@/usr/bin/python3 scripts/bench_vs_scipy.py --chunkscope $(CS) --rounds $(SCIPY_ROUNDS) --replay audio/mix_stereo_48k.flac

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) out
