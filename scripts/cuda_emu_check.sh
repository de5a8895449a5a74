#!/usr/bin/env bash
# cuda_emu_check.sh: run the CUDA backend's kernels on the CPU under an emulation of the
# CUDA execution model (tests/cuda_emu/: one thread per CUDA thread, barriers for
# __syncthreads, __syncwarp and warp shuffles; emu_cuda.h: the CUDA runtime and cuBLAS as
# CPU shims) and compare every op with the CPU backend. Needs g++ with C++20 (std::barrier)
# and the CPU build (make); no GPU and no nvcc. This checks kernel logic (indexing, tiling,
# masking, reductions, saved layouts, GEMM operand order), not GPU behaviour:
# scripts/gpu_check.sh on a GPU is still the real check.
#
# Two drivers: emu_baselines (cuda_{baselines,mamba,sdpa}.cu against their twins, with a
# stand-in GEMM) and emu_core (every .cu file of src/ops/cuda, cuda_core.cu included, the
# op table from cuda_ops_init, cuBLAS through the shims).
#
#   scripts/cuda_emu_check.sh [all | elem|favor|conv|scan|attn | core|mem|matmul|nn|linmix|route|div]
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build/libgma.a
O=build/cuda_emu; mkdir -p "$O"
CU=(cuda_core cuda_nn cuda_linmix cuda_gma_route cuda_gma_div cuda_cls cuda_baselines cuda_mamba cuda_sdpa)
for f in "${CU[@]}"; do
  python3 tests/cuda_emu/launch2call.py src/ops/cuda/$f.cu "$O/$f.cpp"
done
LIBS=$(make -s -f - print-ldlibs <<'MK' 2>/dev/null || true
include Makefile
print-ldlibs: ; @echo $(LDLIBS)
MK
)
LIBS=${LIBS:--fopenmp -lopenblas -lm -lpthread}
W=${1:-all}
case $W in all|elem|favor|conv|scan|attn) base=1 ;; *) base=0 ;; esac
case $W in all|core|mem|matmul|nn|linmix|route|div) core=1 ;; *) core=0 ;; esac
if [ $base = 0 ] && [ $core = 0 ]; then echo "cuda_emu_check.sh: unknown part '$W'" >&2; exit 2; fi
GXX="g++ -O1 -std=c++20 -w -Itests/cuda_emu -Isrc"
pids=()
if [ $base = 1 ]; then
  $GXX tests/cuda_emu/emu_baselines.cpp "$O"/cuda_baselines.cpp "$O"/cuda_mamba.cpp "$O"/cuda_sdpa.cpp \
    build/libgma.a $LIBS -lpthread -o "$O/emu_baselines" & pids+=($!)
fi
if [ $core = 1 ]; then
  objs=(); for f in "${CU[@]}"; do objs+=("$O/$f.cpp"); done
  $GXX tests/cuda_emu/emu_core.cpp "${objs[@]}" build/libgma.a $LIBS -lpthread -o "$O/emu_core" & pids+=($!)
fi
for p in "${pids[@]}"; do wait "$p"; done
rc=0
if [ $base = 1 ]; then echo "== emu_baselines"; "$O/emu_baselines" "$W" || rc=1; fi
if [ $core = 1 ]; then echo "== emu_core"; "$O/emu_core" "$( [ $W = all ] && echo all || echo $W )" || rc=1; fi
exit $rc
