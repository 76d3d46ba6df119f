# Two entry points: `make demo` and `make test` (see README.md). Both install missing Debian
# packages (as root), configure, build and run.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
FUZZ_SECONDS ?= 90
# The CUDA toolkit lives outside Debian's paths; CMake finds nvcc through CUDACXX.
ifeq ($(origin CUDACXX),undefined)
  ifneq ($(wildcard /usr/local/cuda/bin/nvcc),)
    export CUDACXX := /usr/local/cuda/bin/nvcc
  endif
endif

.PHONY: all deps configure build demo test fuzz clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DHEIGHTGRID_WERROR=ON $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
	$(MAKE) --no-print-directory fuzz

fuzz: deps
	@if [ -x tests/fuzz/run_fuzz.sh ]; then tests/fuzz/run_fuzz.sh $(BUILD)-fuzz $(FUZZ_SECONDS); fi

clean:
	rm -rf $(BUILD) $(BUILD)-fuzz
