# Two entry points: `make demo` and `make test` (see README.md). Both install missing Debian
# packages (as root), configure, build and run.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
# The sanitizer tree: clang, CPU only, AddressSanitizer + UndefinedBehaviorSanitizer on every
# target, and the fuzz targets (their coverage instrumentation rides along on the libraries).
ASAN_BUILD ?= $(BUILD)-asan
ASAN_CMAKE_ARGS ?= -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEIGHTGRID_CUDA=OFF \
  -DHEIGHTGRID_WERROR=ON -DHEIGHTGRID_SANITIZE=address,undefined -DHEIGHTGRID_FUZZ=ON
# Seconds per fuzz target in `make test` (six targets, two at a time); fuzz longer with
# `make fuzz FUZZ_SECONDS=3600`.
FUZZ_SECONDS ?= 20
# The CUDA toolkit lives outside Debian's paths; CMake finds nvcc through CUDACXX.
ifeq ($(origin CUDACXX),undefined)
  ifneq ($(wildcard /usr/local/cuda/bin/nvcc),)
    export CUDACXX := /usr/local/cuda/bin/nvcc
  endif
endif

# `make install PREFIX=/opt/heightgrid`: the CLI, the Python module and the man page (cmake --install).
PREFIX ?= /usr/local

.PHONY: all deps configure build demo test install deb sanitize-configure sanitize fuzz clean

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
	$(MAKE) --no-print-directory sanitize
	$(MAKE) --no-print-directory fuzz

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# A Debian package of the build tree (depends on Debian's runtime packages): $(BUILD)/heightgrid_*.deb
deb: build
	cd $(BUILD) && cpack -G DEB

sanitize-configure: deps
	cmake -S . -B $(ASAN_BUILD) $(ASAN_CMAKE_ARGS)

# The CPU tests under ASan + UBSan: any report fails its test (no recovery, leaks included; the
# options are set per test by tests/CMakeLists.txt).
sanitize: sanitize-configure
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j$(JOBS)

fuzz: sanitize-configure
	tests/fuzz/run_fuzz.sh $(ASAN_BUILD) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
