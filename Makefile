# The README's entry points. Each installs what is missing, builds into build/ and runs.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build run test cuda-test bench fuzz golden format clean

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
	@if command -v nvcc >/dev/null 2>&1; then $(MAKE) --no-print-directory cuda-test; \
	else echo "[test] nvcc not found: the CUDA backend is not built here"; fi

# Where nvcc exists (no GPU needed): builds the CUDA backend, its tests and benchmark, and runs the
# kernels in the CPU emulator; the GPU tests skip with a message when no device is present.
cuda-test:
	cmake -S . -B build-cuda -G Ninja -DLAZYATTN_CUDA=ON -DLAZYATTN_TEST_DIRS=kernels $(CMAKE_FLAGS) >/dev/null
	cmake --build build-cuda -j $(JOBS) --target test_cuda test_cuda_emulated test_cuda_engine_emulated test_scheduler_cuda_emulated bench_cuda_attention
	cd build-cuda && ctest --output-on-failure -j $(JOBS) -R "emulated|Cuda"

bench: build
	./scripts/run_bench.sh

fuzz:
	./scripts/run_fuzz.sh $${FUZZ_SECONDS:-600} $${FUZZ_TARGET:-gguf}

golden:
	python3 scripts/make_golden.py

# The style of .clang-format over every C++ and CUDA source (the tree is kept formatted).
format:
	git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
