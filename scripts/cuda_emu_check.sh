#!/usr/bin/env bash
# cuda_emu_check.sh: run the baseline ops' CUDA kernels on the CPU under an emulation of
# the CUDA execution model (tests/cuda_emu/: one thread per CUDA thread, barriers for
# __syncthreads and warp shuffles) and compare them with the CPU backend. Needs g++ with
# C++20 (std::barrier) and the CPU build (make); no GPU and no nvcc. This checks kernel
# logic (indexing, tiling, masking, reductions, saved layouts), not GPU behaviour:
# scripts/gpu_check.sh on a GPU is still the real check.
#
#   scripts/cuda_emu_check.sh [elem|favor|conv|scan|attn|all]
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build/libgma.a
O=build/cuda_emu; mkdir -p "$O"
for f in cuda_baselines cuda_mamba cuda_sdpa; do
  python3 tests/cuda_emu/launch2call.py src/ops/cuda/$f.cu "$O/$f.cpp"
done
LIBS=$(make -s -f - print-ldlibs <<'MK' 2>/dev/null || true
include Makefile
print-ldlibs: ; @echo $(LDLIBS)
MK
)
g++ -O1 -std=c++20 -w -Itests/cuda_emu -Isrc tests/cuda_emu/emu_baselines.cpp "$O"/cuda_baselines.cpp \
  "$O"/cuda_mamba.cpp "$O"/cuda_sdpa.cpp build/libgma.a ${LIBS:--fopenmp -lopenblas -lm -lpthread} -lpthread \
  -o "$O/emu_baselines"
"$O/emu_baselines" "${1:-all}"
