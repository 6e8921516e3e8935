# The README's entry points. Each installs what is missing, builds into build/ and runs.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build run test bench fuzz golden clean

all: build

deps:
	@./scripts/install_deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	./scripts/run_demo.sh

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

bench: build
	./scripts/run_bench.sh

fuzz:
	./scripts/run_fuzz.sh $(FUZZ_SECONDS)

golden:
	python3 scripts/make_golden.py

clean:
	rm -rf $(BUILD_DIR)
