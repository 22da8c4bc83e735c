# devicearray — the two quick-start commands:
#   make demo   installs what is missing, builds, and runs the demo on the default device
#   make test   installs what is missing, builds, and runs the whole test suite
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
FUZZ_SECONDS ?= 60

.PHONY: all deps configure build demo test sanitize fuzz docs clean

all: build

deps:
	@./scripts/install-deps.sh

# Everything: both backends where their toolkits are (CUDA is reset to that default,
# in case `make demo` left it out), tests, benchmarks, examples.
configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -UDEVICEARRAY_WITH_CUDA \
	    -DDEVICEARRAY_BUILD_TESTS=ON -DDEVICEARRAY_BUILD_BENCHMARKS=ON -DDEVICEARRAY_BUILD_EXAMPLES=ON \
	    $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

# The first run builds only what the demo needs: the library and the command, and the
# CUDA backend only when an NVIDIA GPU is there to run it (without one the demo runs
# on OpenCL, and compiling the CUDA kernels would be most of the wait).
DEMO_CUDA ?= $(shell nvidia-smi -L >/dev/null 2>&1 && echo ON || echo OFF)
demo:
	@./scripts/install-deps.sh demo
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DDEVICEARRAY_WITH_CUDA=$(DEMO_CUDA) \
	    -DDEVICEARRAY_BUILD_TESTS=OFF -DDEVICEARRAY_BUILD_BENCHMARKS=OFF -DDEVICEARRAY_BUILD_EXAMPLES=OFF \
	    $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) --target devicearray_cli
	@./scripts/demo.sh $(BUILD)

# The include layering (scripts/check-layering.py), the C++ suite (ctest: every
# backend present, CUDA tests skip without a GPU),
# then the Python package built into a venv under the build tree and its pytest suite,
# then a program built against the installed tree with find_package (tests/consumer).
test: build
	@python3 scripts/check-layering.py
	@ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)
	@./scripts/python-test.sh $(BUILD)
	@./scripts/consumer-test.sh $(BUILD)

# ASan+UBSan over the whole suite and TSan over the stress test (docs/RELIABILITY.md).
sanitize: deps
	@./scripts/sanitize.sh all

# Each libFuzzer target for a bounded time over its seed corpus.
fuzz: deps
	@./scripts/fuzz.sh $(FUZZ_SECONDS)

# The API reference (HTML in $(BUILD)/docs/api/html); any Doxygen warning, such as
# an undocumented public symbol, fails it (ctest's docs_test runs it too).
docs: deps
	@./scripts/doxygen.sh $(BUILD)/docs/api

clean:
	rm -rf $(BUILD)
