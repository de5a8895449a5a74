# gma: build, test, benchmark.
#
#   make            CPU build: bin/gmatrain bin/gmaeval bin/gmasample bin/gmadata bin/gmabench bin/gmacheck
#                   + build/libgma.a
#   make test       set-up if needed, build, run every Check suite under tests/ and every script check
#                   (CI's gate; tens of minutes on 2 cores)
#   make check      build and run the C Check suites only (no script checks, no fuzz-smoke): a quicker
#                   check that the build works here
#   make quickstart set-up if needed, build, train and evaluate configs/quickstart.json
#   make bench      build and run bin/gmabench for every causal mixer (scripts/bench_all.sh: layer, model,
#                   generation at M = 1, 8, 64, prefill, the PyTorch peer when torch imports; JSON in
#                   runs/bench/), ending with one summary table; sized for under 15 minutes on 2 cores.
#                   BENCH_ARGS=--quick: tiny shapes in seconds
#   make cuda       the same binaries with the CUDA backend (nvcc + cuBLAS), in bin/cuda/
#   make mpi        the same binaries with MPI data-parallel training (mpicc), in bin/mpi/
#   make cuda-mpi   CUDA backend + MPI (+ NCCL when found) in bin/cuda-mpi/: data-parallel on GPUs
#   make deps       install the Debian packages (scripts/setup.sh)
#   make help       this list of targets
#   make install    copy bin/* to $(PREFIX)/bin and configs/*.json to $(PREFIX)/share/gma/configs
#                   (PREFIX=/usr/local, DESTDIR honoured), where gmatrain --config NAME finds them
#   make fuzz       libFuzzer targets fuzz/fuzz_*.c (clang, ASan + UBSan) in build/fuzz/
#   make fuzz-smoke each target a few seconds over its seed corpus (part of make test; skipped without clang)
#   make asan       clean, then build and test with AddressSanitizer + UBSan (-O1); leak checks
#                   off (libgomp's are not ours); run `make clean` before the next normal build
#
# Sources are found by wildcard: every src/**/*.c except src/cli/ and src/ops/cuda/
# goes into the library (compiled twice: float32 build/f32, float64 build/f64 for
# gradient checks); every src/cli/X.c becomes bin/X; src/cli/args/*.c (command-line
# parsing the programs share, not programs themselves) goes into build/libgmacli.a,
# linked into every program before the library; every tests/test_X.c becomes a Check
# suite linked against libgmacli.a and the float32 library, every tests/test64_X.c
# against the float64 one.

CC      ?= cc
ifeq ($(CC),cc)
CC      := gcc
endif
OPT     ?= -O3 -march=native
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-format-truncation -fopenmp -MMD -MP -Isrc
PKGS    := libcjson libcurl zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(or $(shell pkg-config --libs $(PKGS) 2>/dev/null),-lcjson -lcurl -lz)
# OpenBLAS: prefer Debian's OpenMP build (it runs single-threaded when called inside our
# own OpenMP regions instead of oversubscribing the cores), else whatever pkg-config finds.
MULTIARCH   := $(shell $(CC) -print-multiarch 2>/dev/null)
OPENBLAS_OMP := /usr/lib/$(MULTIARCH)/openblas-openmp
ifneq ($(wildcard $(OPENBLAS_OMP)/libopenblas.so),)
BLAS_CFLAGS := -I/usr/include/$(MULTIARCH)/openblas-openmp
BLAS_LIBS   := -L$(OPENBLAS_OMP) -Wl,-rpath,$(OPENBLAS_OMP) -lopenblas
else
BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
endif
CHECK_LIBS  := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)
CFLAGS  += $(PKG_CFLAGS) $(BLAS_CFLAGS)
LDLIBS  := $(PKG_LIBS) $(BLAS_LIBS) -fopenmp -lm -lpthread

LIB_SRC := $(shell find src -name '*.c' -not -path 'src/cli/*' -not -path 'src/ops/cuda/*' | sort)
CLI_SRC := $(sort $(wildcard src/cli/*.c))
CLI_ARGS_SRC := $(sort $(wildcard src/cli/args/*.c))
BINS    := $(patsubst src/cli/%.c,bin/%,$(CLI_SRC))
OBJ32   := $(patsubst src/%.c,build/f32/%.o,$(LIB_SRC))
OBJ64   := $(patsubst src/%.c,build/f64/%.o,$(LIB_SRC))
TEST_SRC   := $(sort $(wildcard tests/test_*.c))
TEST64_SRC := $(sort $(wildcard tests/test64_*.c))
TESTUTIL   := tests/testutil.c
TESTS      := $(patsubst tests/%.c,build/tests/%,$(TEST_SRC) $(TEST64_SRC))

# CUDA (make cuda): nvcc from CUDA_HOME, else nvcc on PATH, else /usr/local/cuda. The GPU
# code is sm_90 (H100/H200) plus compute_90 PTX that the driver compiles for newer GPUs;
# other GPUs: make cuda CUDA_ARCH="-gencode arch=compute_80,code=sm_80". NO_CUDA=1 turns
# `make cuda` off. No GPU is needed to build.
NVCC_PATH := $(shell command -v nvcc 2>/dev/null)
CUDA_HOME ?= $(or $(patsubst %/bin/nvcc,%,$(NVCC_PATH)),/usr/local/cuda)
NVCC      ?= $(CUDA_HOME)/bin/nvcc
CUDA_SRC  := $(sort $(wildcard src/ops/cuda/*.cu))
CUDA_OBJ  := $(patsubst src/%.cu,build/cuda/%.o,$(CUDA_SRC))
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVCCFLAGS ?= -O3 -lineinfo -std=c++17 -Xcompiler -fPIC,-Wall,-Wextra,-Wno-unused-parameter
NVCCFLAGS += $(CUDA_ARCH) -Isrc -MMD -MP
CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib $(CUDA_HOME)/targets/x86_64-linux/lib))

.PHONY: all binaries test check check-suites run-tests quickstart bench deps cuda cuda-mpi mpi mpi-if-available clean probe check-deps install asan help
# The entry targets first make sure the Debian packages are there, then build in a second
# make, so that the pkg-config / BLAS probes above see what setup.sh just installed.
all: check-deps
	@$(MAKE) --no-print-directory binaries
binaries: $(BINS) build/libgma.a

check-deps:
	@scripts/setup.sh --check >/dev/null 2>&1 || { echo "missing dependencies: running scripts/setup.sh"; scripts/setup.sh; }

deps:
	scripts/setup.sh

probe:
	@echo "CC: $$($(CC) --version | head -1)"
	@echo "BLAS: $(BLAS_LIBS)"
	@echo "OpenMP: -fopenmp"
	@if [ -x "$(NVCC)" ]; then echo "nvcc: $(NVCC) (make cuda available, arch $(CUDA_ARCH))"; else echo "nvcc: not found (make cuda unavailable)"; fi
	@if command -v mpicc >/dev/null 2>&1; then echo "MPI: $$(command -v mpicc)"; else echo "MPI: not found"; fi

build/libgma.a: $(OBJ32)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

build/libgma64.a: $(OBJ64)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

build/libgmacli.a: $(patsubst src/%.c,build/f32/%.o,$(CLI_ARGS_SRC))
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

build/f32/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

build/f64/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DGMA_DOUBLE -c $< -o $@

bin/%: src/cli/%.c build/libgmacli.a build/libgma.a
	@mkdir -p $(@D) build/cli
	$(CC) $(CFLAGS) -MF build/cli/$*.d $< build/libgmacli.a build/libgma.a $(LDLIBS) -o $@

build/tests/testutil32.o: tests/testutil.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests -c $< -o $@

build/tests/testutil64.o: tests/testutil.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DGMA_DOUBLE -Itests -c $< -o $@

build/tests/test_%: tests/test_%.c build/tests/testutil32.o build/libgmacli.a build/libgma.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests $< build/tests/testutil32.o build/libgmacli.a build/libgma.a $(LDLIBS) $(CHECK_LIBS) -o $@

build/tests/test64_%: tests/test64_%.c build/tests/testutil64.o build/libgma64.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DGMA_DOUBLE -Itests $< build/tests/testutil64.o build/libgma64.a $(LDLIBS) $(CHECK_LIBS) -o $@

test: check-deps
	@$(MAKE) --no-print-directory mpi-if-available
	@$(MAKE) --no-print-directory run-tests
# every Check suite, then the layer order of src/, the plots of scripts/plot_runs.sh, the LRA
# stand-ins, the results writer, the scripts' command lines and make install, the migration
# script end to end, the generated documentation sections (scripts/gen_docs.py --check) and
# fuzz-smoke, counted in one closing line
run-tests: $(BINS) $(TESTS)
	@scripts/run_tests.sh $(TESTS) -- "layers=scripts/check_layers.sh src" "docs=scripts/gen_docs.py --check" \
	  "plot-runs=scripts/check_plot_runs.sh" "lra-standin=scripts/check_lra_standin.sh" \
	  "results=tests/test_results.sh" "scripts=tests/test_scripts.sh" "migrate=tests/test_migrate.sh" \
	  "fuzz-smoke=$(MAKE) --no-print-directory fuzz-smoke"

# the layer order of src/ from its #include lines (scripts/check_layers.sh): prints the
# include graph between rooms and fails on an upward include or an include cycle
.PHONY: layers
layers:
	@scripts/check_layers.sh src

# the targets, from the comment at the top of this file
help:
	@sed -n '1,/^$$/s/^#   //p' Makefile

# the C Check suites alone, counted in one closing line: a quick check for users
check: check-deps
	@$(MAKE) --no-print-directory check-suites
check-suites: $(BINS) $(TESTS)
	@scripts/run_tests.sh $(TESTS)

quickstart: check-deps
	@$(MAKE) --no-print-directory binaries
	scripts/quickstart.sh

asan:
	$(MAKE) clean
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(MAKE) OPT="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer" test

bench: check-deps
	@$(MAKE) --no-print-directory bin/gmabench
	bash scripts/bench_all.sh $(BENCH_ARGS)

# ---- CUDA build: the same programs with the CUDA backend linked in, in bin/cuda/ ----
# Only src/ops/ops.c knows the CUDA backend (GMA_CUDA: ops_select reaches cuda_ops_init),
# so the CUDA library is the float32 objects with ops.o rebuilt into build/cuda-host, plus
# the .cu files compiled by nvcc into build/cuda. The programs go to bin/cuda/ and bin/
# keeps the CPU ones, so `make cuda && make` leaves both.
build/cuda/%.o: src/%.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

cuda:
ifeq ($(NO_CUDA),1)
	@echo "make cuda: NO_CUDA=1 given"; exit 1
else
	@[ -x "$(NVCC)" ] || { echo "make cuda: nvcc not found (set CUDA_HOME or put nvcc on PATH)"; exit 1; }
	@echo "nvcc: $(NVCC) ($$($(NVCC) --version | tail -1)); arch: $(CUDA_ARCH)"
	$(MAKE) --no-print-directory BUILD_CUDA=1 cuda-bins
endif

ifeq ($(BUILD_CUDA),1)
CUDA_LDLIBS := -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcublas -lcudart -lstdc++
OBJCUDAHOST := $(filter-out build/f32/ops/ops.o,$(OBJ32)) build/cuda-host/ops/ops.o
build/cuda-host/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DGMA_CUDA -c $< -o $@
build/libgma-cuda.a: $(OBJCUDAHOST) $(CUDA_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^
bin/cuda/%: src/cli/%.c build/libgmacli.a build/libgma-cuda.a
	@mkdir -p $(@D) build/cuda-cli
	$(CC) $(CFLAGS) -MF build/cuda-cli/$*.d $< build/libgmacli.a build/libgma-cuda.a $(LDLIBS) $(CUDA_LDLIBS) -o $@
cuda-bins: $(patsubst src/cli/%.c,bin/cuda/%,$(CLI_SRC)) build/libgma-cuda.a
	@echo "CUDA binaries in bin/cuda/ (bin/ keeps the CPU ones); see docs/cuda.md"

# CUDA + MPI: the CUDA objects, with dist.c rebuilt by mpicc (-DGMA_MPI) and, when NCCL is
# found (nccl.h and libnccl under NCCL_HOME, default CUDA_HOME, or the system dirs; NO_NCCL=1
# turns it off), -DGMA_NCCL with src/ops/cuda/cuda_nccl.cu recompiled to carry the NCCL calls.
NCCL_HOME ?= $(CUDA_HOME)
NCCL_H    := $(firstword $(wildcard $(NCCL_HOME)/include/nccl.h /usr/include/nccl.h))
NCCL_SO   := $(firstword $(wildcard $(NCCL_HOME)/lib64/libnccl.so $(NCCL_HOME)/lib/libnccl.so \
               $(NCCL_HOME)/targets/x86_64-linux/lib/libnccl.so /usr/lib/$(MULTIARCH)/libnccl.so))
ifneq ($(NO_NCCL),1)
ifneq ($(and $(NCCL_H),$(NCCL_SO)),)
WITH_NCCL := 1
endif
endif
ifeq ($(WITH_NCCL),1)
CMPI_NOTE  := NCCL $(NCCL_SO), or by MPI through host memory where ranks share a GPU
else
CMPI_NOTE  := MPI through host memory: NCCL not found or NO_NCCL=1
endif
CMPI_DEFS  := -DGMA_MPI $(if $(WITH_NCCL),-DGMA_NCCL -I$(dir $(NCCL_H)))
ifeq ($(WITH_NCCL),1)
CMPI_LIBS  := -L$(dir $(NCCL_SO)) -Wl,-rpath,$(dir $(NCCL_SO)) -lnccl
endif
CMPI_OBJ   := $(filter-out build/f32/train/dist.o build/cuda/ops/cuda/cuda_nccl.o,$(OBJCUDAHOST) $(CUDA_OBJ)) \
              build/cuda-mpi/train/dist.o build/cuda-mpi/ops/cuda/cuda_nccl.o
build/cuda-mpi/train/dist.o: src/train/dist.c
	@mkdir -p $(@D)
	$(MPICC) $(CFLAGS) $(CMPI_DEFS) -c $< -o $@
build/cuda-mpi/ops/cuda/cuda_nccl.o: src/ops/cuda/cuda_nccl.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) $(CMPI_DEFS) -c $< -o $@
build/libgma-cuda-mpi.a: $(CMPI_OBJ)
	rm -f $@
	ar rcs $@ $^
bin/cuda-mpi/%: src/cli/%.c build/libgmacli.a build/libgma-cuda-mpi.a
	@mkdir -p $(@D) build/cuda-mpi/cli
	$(MPICC) $(CFLAGS) -DGMA_MPI -MF build/cuda-mpi/cli/$*.d $< build/libgmacli.a build/libgma-cuda-mpi.a $(LDLIBS) $(CUDA_LDLIBS) $(CMPI_LIBS) -o $@
cuda-mpi-bins: $(patsubst src/cli/%.c,bin/cuda-mpi/%,$(CLI_SRC))
	@echo "CUDA + MPI binaries in bin/cuda-mpi/ (device buffers all-reduced by $(CMPI_NOTE)); see docs/distributed.md"
endif

cuda-mpi:
ifeq ($(NO_CUDA),1)
	@echo "make cuda-mpi: NO_CUDA=1 given"; exit 1
else
	@[ -x "$(NVCC)" ] || { echo "make cuda-mpi: nvcc not found (set CUDA_HOME or put nvcc on PATH)"; exit 1; }
	@command -v $(MPICC) >/dev/null 2>&1 || { echo "make cuda-mpi: $(MPICC) not found on PATH (Debian: apt-get install openmpi-bin libopenmpi-dev, or set MPICC)"; exit 1; }
	$(MAKE) --no-print-directory BUILD_CUDA=1 cuda-mpi-bins
endif

# ---- MPI build: same binaries, data-parallel training over MPI (GMA_MPI) ----
# Only src/train/dist.c depends on GMA_MPI (dist.h says so), so the MPI library is the
# float32 objects with dist.o rebuilt by mpicc into build/mpi-f32; the programs are
# compiled and linked by mpicc into bin/mpi/ (bin/ keeps the plain ones). `make test`
# builds them when mpicc is on PATH, so tests/test_mpi.c runs; otherwise it is skipped.
MPICC     ?= mpicc
MPI_SRC   := src/train/dist.c
OBJMPI    := $(filter-out $(patsubst src/%.c,build/f32/%.o,$(MPI_SRC)),$(OBJ32)) \
             $(patsubst src/%.c,build/mpi-f32/%.o,$(MPI_SRC))
MPI_BINS  := $(patsubst src/cli/%.c,bin/mpi/%,$(CLI_SRC))

mpi:
	@command -v $(MPICC) >/dev/null 2>&1 || { echo "make mpi: $(MPICC) not found on PATH (Debian: apt-get install openmpi-bin libopenmpi-dev, or set MPICC)"; exit 1; }
	@echo "mpicc: $$(command -v $(MPICC)) ($$($(MPICC) --showme:version 2>/dev/null || $(MPICC) --version | head -1))"
	@$(MAKE) --no-print-directory mpi-bins
	@echo "MPI binaries in bin/mpi/ (run: mpirun -np R bin/mpi/gmatrain ..., see docs/distributed.md)"

mpi-if-available:
	@if command -v $(MPICC) >/dev/null 2>&1; then $(MAKE) --no-print-directory mpi-bins; \
	 else echo "make test: $(MPICC) not found, so bin/mpi/ is not built and the MPI test will be skipped"; fi

mpi-bins: $(MPI_BINS) build/libgma-mpi.a

build/mpi-f32/%.o: src/%.c
	@mkdir -p $(@D)
	$(MPICC) $(CFLAGS) -DGMA_MPI -c $< -o $@

build/libgma-mpi.a: $(OBJMPI)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

bin/mpi/%: src/cli/%.c build/libgmacli.a build/libgma-mpi.a
	@mkdir -p $(@D) build/mpi-cli
	$(MPICC) $(CFLAGS) -DGMA_MPI -MF build/mpi-cli/$*.d $< build/libgmacli.a build/libgma-mpi.a $(LDLIBS) -o $@

# ---- fuzzing (make fuzz, make fuzz-smoke): libFuzzer targets fuzz/fuzz_*.c ----
# The library is compiled again by clang with ASan + UBSan and fuzzer coverage into
# build/fuzz/obj (OpenMP through clang's libomp: -fopenmp as in the normal build); each
# fuzz/fuzz_X.c links against it into build/fuzz/fuzz_X. Seed corpora are written by
# build/fuzz/fuzz_seeds (the normal library) into build/fuzz/corpus/X/. fuzz-smoke runs
# every target FUZZ_SECONDS over its corpus and closes with "fuzz-smoke: N targets, N
# crashes" (non-zero exit on a crash); without a clang that links a libFuzzer program it
# prints "SKIP: fuzz-smoke: ..." and succeeds (counted as skipped by run_tests.sh).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 3
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS  := -O1 -g $(FUZZ_SAN) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-psabi -Wno-pass-failed -fopenmp -Isrc \
                $(PKG_CFLAGS) $(BLAS_CFLAGS)
FUZZ_SRC     := $(filter-out fuzz/fuzz_util.c fuzz/fuzz_seeds.c,$(sort $(wildcard fuzz/fuzz_*.c)))
FUZZ_NAMES   := $(patsubst fuzz/fuzz_%.c,%,$(FUZZ_SRC))
FUZZ_BINS    := $(patsubst %,build/fuzz/fuzz_%,$(FUZZ_NAMES))
FUZZ_OBJ     := $(patsubst src/%.c,build/fuzz/obj/%.o,$(LIB_SRC))
FUZZ_OK      := $(shell printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' | \
                  $(FUZZ_CC) -x c -fsanitize=fuzzer,address,undefined -fopenmp - -o /dev/null >/dev/null 2>&1 && echo 1)
.PHONY: fuzz fuzz-seeds fuzz-smoke
build/fuzz/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
build/fuzz/libgma-fuzz.a: $(FUZZ_OBJ)
	rm -f $@
	ar rcs $@ $^
build/fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_util.c fuzz/fuzz_util.h build/fuzz/libgma-fuzz.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Ifuzz $< fuzz/fuzz_util.c build/fuzz/libgma-fuzz.a $(LDLIBS) -o $@
build/fuzz/fuzz_seeds: fuzz/fuzz_seeds.c tests/archive_build.h build/libgma.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests $< build/libgma.a $(LDLIBS) -o $@
fuzz-seeds: build/fuzz/fuzz_seeds
	@rm -rf build/fuzz/corpus && build/fuzz/fuzz_seeds build/fuzz/corpus && mkdir -p build/fuzz/corpus/config && \
	 cp configs/*.json build/fuzz/corpus/config/
ifeq ($(FUZZ_OK),1)
fuzz: $(FUZZ_BINS) build/fuzz/fuzz_seeds
	@echo "fuzz targets: $(FUZZ_BINS)"
fuzz-smoke: fuzz
	@$(MAKE) --no-print-directory fuzz-seeds >/dev/null
	@scripts/fuzz_smoke.sh $(FUZZ_SECONDS) $(FUZZ_NAMES)
else
fuzz:
	@echo "make fuzz: $(FUZZ_CC) cannot link a libFuzzer program (Debian: apt-get install clang libomp-dev)"; exit 1
fuzz-smoke:
	@echo "SKIP: fuzz-smoke: $(FUZZ_CC) cannot link a libFuzzer program (Debian: apt-get install clang libomp-dev)"
endif

PREFIX ?= /usr/local
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/gma/configs
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 configs/*.json $(DESTDIR)$(PREFIX)/share/gma/configs/

clean:
	rm -rf build bin

-include $(shell find build -name '*.d' 2>/dev/null)
