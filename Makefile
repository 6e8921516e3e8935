# The README's entry points. Each installs what is missing, builds into build/ and runs.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build run test python-test cuda-test bench finetune fuzz golden format format-check clean

all: build

deps:
	@./scripts/install_deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The demo needs the lazyattn binary alone: the tests build under `make test`.
run: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target lazyattn
	./scripts/run_demo.sh

test: build format-check
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory python-test
	@if command -v nvcc >/dev/null 2>&1; then $(MAKE) --no-print-directory cuda-test; \
	else echo "[test] nvcc not found: the CUDA backend is not built here"; fi

# The Python package (docs/python.md): wheel, auditwheel repair, a fresh virtual environment, the
# console command and tests/python. The engine's objects come from ccache after `make build`.
python-test: deps
	@BUILD_DIR=$(BUILD_DIR) JOBS=$(JOBS) ./scripts/test_python_package.sh

# Where nvcc exists (no GPU needed): builds the CUDA backend, its tests and benchmark, and runs the
# kernels in the CPU emulator; the GPU tests skip with a message when no device is present.
cuda-test:
	cmake -S . -B build-cuda -G Ninja -DLAZYATTN_CUDA=ON -DLAZYATTN_TEST_DIRS=kernels $(CMAKE_FLAGS) >/dev/null
	cmake --build build-cuda -j $(JOBS) --target test_cuda test_cuda_emulated test_cuda_engine_emulated test_scheduler_cuda_emulated bench_cuda_attention
	cd build-cuda && ctest --output-on-failure -j $(JOBS) -R "emulated|Cuda"

bench: build
	./scripts/run_bench.sh

# Block fine-tuning (docs/finetune.md): the embedded model by default, a CPU-sized run; the last
# line printed is the produced GGUF. FINETUNE_ARGS replaces the arguments (scripts/finetune/finetune.py --help).
# --objective mix: the objective closest to issue 50's targets at equal minutes (docs/finetune.md).
FINETUNE_ARGS ?= --objective mix --minutes 60 --threads 1 --lr 1e-3 --warmup-steps 4 --batch 4 --doc-counts 2 3 4 \
                 --max-prompt-words 200 --checkpoint-minutes 15
finetune:
	@BUILD_DIR=$(BUILD_DIR) JOBS=$(JOBS) ./scripts/finetune/run.sh $(FINETUNE_ARGS)

fuzz:
	./scripts/run_fuzz.sh $${FUZZ_SECONDS:-600} $${FUZZ_TARGET:-gguf}

golden:
	python3 scripts/make_golden.py

# The style of .clang-format over every C++ and CUDA source (the tree is kept formatted).
format:
	git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs clang-format -i

# make test runs it: a formatting diff fails CI as a warning would.
format-check:
	@./scripts/check_format.sh

clean:
	rm -rf $(BUILD_DIR)
