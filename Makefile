# chunkscope front door. Every target brings what it needs first.
#   make demo      set up, build, and run the bundled audio through a chain
#   make test      set up, build, and run the test suite
BUILD     ?= build
ASAN_BUILD ?= build-asan
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CONFIG    ?= RelWithDebInfo
CMAKE_ARGS ?=
CS        := $(BUILD)/chunkscope

.PHONY: all deps configure build demo test test-asan bench clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CONFIG) $(CMAKE_ARGS)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(CS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCHUNKSCOPE_SANITIZE=ON -DCHUNKSCOPE_CUDA=OFF $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	$(CS) bench

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) out
