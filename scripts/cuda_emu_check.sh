#!/usr/bin/env bash
# cuda_emu_check.sh: run the CUDA backend's kernels on the CPU under an emulation of the
# CUDA execution model (tests/cuda_emu/: each CUDA thread a fiber, barriers for
# __syncthreads, __syncwarp and warp shuffles; emu_cuda.h: the CUDA runtime and cuBLAS as
# CPU shims) and compare every op with the CPU backend. Needs g++ with C++20 and the CPU
# build (make); no GPU and no nvcc. This checks kernel logic (indexing, tiling,
# masking, reductions, saved layouts, GEMM operand order), not GPU behaviour:
# scripts/gpu_check.sh on a GPU is still the real check.
#
# Two drivers: emu_baselines (cuda_{baselines,mamba,sdpa}.cu against their twins, with a
# stand-in GEMM) and emu_core (every .cu file of src/ops/cuda, found by wildcard,
# cuda_core.cu included, the op table from cuda_ops_init, cuBLAS through the shims).
#
# emu_selftest checks the emulation itself: divergent barriers, launches outside the CUDA
# limits, host code touching device memory, host pointers given to kernels, kernels
# running past an allocation and mismatched copies must each stop it.
#
# model: the CLI binaries (gmacheck, gmatrain, gmaeval, gmasample, gmabench) linked with the
# emulated backend and run through scripts/gpu_check.sh --bin (every mixer and precision on
# whole models, CPU against "cuda", and a checkpoint trained on "cuda" evaluated and resumed
# on the CPU); extra arguments go to gpu_check.sh (e.g. --precisions fp32 --extra "--batch 1").
# Both `model` and `mpi` also run the CUDA build as on a machine without a GPU
# (cpu_table_checks).
#
#   scripts/cuda_emu_check.sh [all | self | elem|favor|conv|scan|attn | core|mem|matmul|nn|linmix|route|div|stem|delta]
#   scripts/cuda_emu_check.sh model [gpu_check.sh options]
#   scripts/cuda_emu_check.sh mpi [full]
#   scripts/cuda_emu_check.sh build     (only the emulated CLI binaries, in build/cuda_emu/model)
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build/libgma.a
O=build/cuda_emu; mkdir -p "$O"
CU=(); for f in src/ops/cuda/*.cu; do f=${f##*/}; CU+=("${f%.cu}"); done
gcc -O2 -std=c11 tests/cuda_emu/launch2call.c -o "$O/launch2call"
for f in "${CU[@]}"; do
  "$O/launch2call" src/ops/cuda/$f.cu "$O/$f.cpp"
done
# The CLI binaries linked with the emulated backend, device memory kept apart from the host
# (EMU_DEVICE_MEMORY in emu_cuda.h), into $1: build/libgma.a with ops.o rebuilt with
# GMA_CUDA (as `make cuda` does). With $2 = mpi: the `make cuda-mpi` build (dist.c with
# GMA_MPI and GMA_NCCL, cuda_nccl.cu over the MPI-backed nccl.h of tests/cuda_emu), only
# gmatrain, gmasample and gmabench.
build_model() {
  local M=$1 mpi=${2:-}; mkdir -p "$M"
  local CFL; CFL="$(mkvar CFLAGS)"
  local MPIC="" MPIL="" DEFS="" bins="gmacheck gmatrain gmaeval gmasample gmabench"
  if [ "$mpi" = mpi ]; then
    MPIC="$(mpicc --showme:compile)"; MPIL="$(mpicc --showme:link)"; DEFS="-DGMA_MPI -DGMA_NCCL"; bins="gmatrain gmasample gmabench"
  fi
  gcc $CFL -DGMA_CUDA -c src/ops/ops.c -o "$M/ops.o"
  cp build/libgma.a "$M/libgma-emu.a"; ar r "$M/libgma-emu.a" "$M/ops.o" 2>/dev/null
  if [ "$mpi" = mpi ]; then
    gcc $CFL $MPIC $DEFS -c src/train/dist.c -o "$M/dist.o"; ar r "$M/libgma-emu.a" "$M/dist.o" 2>/dev/null
  fi
  local pids=() f b
  for f in "${CU[@]}"; do
    g++ -O2 -g -std=c++20 -w -DEMU_DEVICE_MEMORY $DEFS $MPIC -Itests/cuda_emu -Isrc -c "$O/$f.cpp" -o "$M/$f.o" & pids+=($!)
    [ ${#pids[@]} -ge "$(nproc)" ] && { wait "${pids[0]}"; pids=("${pids[@]:1}"); }
  done
  for p in "${pids[@]}"; do wait "$p"; done
  for b in $bins; do
    gcc $CFL -c src/cli/$b.c -o "$M/$b.o"
    g++ -rdynamic "$M/$b.o" build/libgmacli.a "$M"/cuda_*.o "$M/libgma-emu.a" $LIBS $MPIL -lpthread -o "$M/$b"
  done
  echo "emulated binaries: $M/{${bins// /,}}"
}
model_checks() {
  local M=$O/model
  build_model "$M"
  local rc=0 m c a b ra
  bash scripts/gpu_check.sh --bin "$M" --no-build --no-bench --out runs/cuda_emu_model "$@" || rc=1
  cpu_table_checks "$M" || rc=1
  # the device's bits must not depend on the order of blocks and threads (no atomics)
  echo "== block and thread order (EMU_REVERSE=1 against the normal order, fp32)"
  for m in $("$M/gmacheck" --list-mixers | tr '|' ' '); do
    for c in 1 0 classify; do
      local args=(--device cuda --set model.mixer="$m" --steps 2 --batch 2 --seq 100 --quiet --digest)
      if [ $c = classify ]; then args+=(--set model.task=classify --set model.n_classes=3); else args+=(--set model.causal=$c); fi
      ra=0; a=$("$M/gmacheck" "${args[@]}" 2>&1) || ra=$?
      [ $ra = 3 ] && continue
      local lbl=causal; [ $c = 0 ] && lbl=bidirectional; [ $c = classify ] && lbl=classifier
      # a mixer refused in this direction (linformer causal, mamba and baseconv bidirectional)
      if [ $ra = 2 ] && echo "$a" | grep -q "cannot run \(causally\|bidirectionally\)"; then
        echo "order $m $lbl: not applicable"; continue
      fi
      b=$(EMU_REVERSE=1 "$M/gmacheck" "${args[@]}" 2>&1) || true
      if [ $ra = 0 ] && [ "$(echo "$a" | grep digest)" = "$(echo "$b" | grep digest)" ]; then
        echo "order $m $lbl: same bits"
      else echo "order $m $lbl: DIFFERS (or failed, rc $ra)"; echo "$a"; echo "$b"; rc=1; fi
    done
  done
  return $rc
}
# mpi: data-parallel training on the emulated `make cuda-mpi` gmatrain (--device cuda),
# once per way the gradients can travel: NCCL (EMU_DEVICES=2: a GPU per rank), MPI through
# host memory because both ranks share one GPU (EMU_DEVICES=1), and, in full mode, because
# GMA_NCCL=0. Quick mode (`make test`): scripts/check_data_parallel.sh, 2 ranks x batch 2
# against one process x batch 4 for 3 steps, per-step losses and gradient norms to 1e-5
# relative, and the transport named in summary.json. Full mode (`mpi full`): tests/test_mpi.c on those binaries (10 steps,
# exact resume, bad input, a signal to one rank), about 8 minutes.
mpi_checks() {
  command -v mpicc >/dev/null && command -v mpirun >/dev/null || { echo "cuda_emu_check.sh mpi: needs mpicc and mpirun" >&2; return 2; }
  local M=$O/cuda-mpi rc=0 w
  build_model "$M" mpi
  if [ "${1:-quick}" = full ]; then
    make -s build/tests/test_mpi
    for w in "EMU_DEVICES=2|NCCL" "EMU_DEVICES=2 GMA_NCCL=0|MPI through host memory" "EMU_DEVICES=1|MPI through host memory"; do
      echo "== test_mpi on the emulated CUDA backend: ${w%%|*} (all-reduce by ${w#*|})"
      env ${w%%|*} GMA_TEST_MPI_BIN="$M/gmatrain" GMA_TEST_BIN="$M/gmatrain" GMA_TEST_ARGS="--device cuda" \
        GMA_TEST_ALLREDUCE="${w#*|}" CK_TIMEOUT_MULTIPLIER=5 build/tests/test_mpi || rc=1
    done
    return $rc
  fi
  bash scripts/check_data_parallel.sh --bin "$M/gmatrain" --device cuda --out "$O/mpi-runs" \
    --way "EMU_DEVICES=2|NCCL" --way "EMU_DEVICES=1|MPI through host memory" || rc=1
  decode_checks "$M" || rc=1
  cpu_table_checks "$M" || rc=1
  return $rc
}
# a CUDA build on a machine without a GPU (EMU_DEVICES=0: no driver) runs --device cpu:
# gmabench model swaps g_ops for a profiling copy of the cpu table, whose ops_sync must
# reach the cpu backend, not the GPU; and --device cuda is refused with the driver's error
cpu_table_checks() {
  local M=$1 rc=0 out r=0
  out=$(EMU_DEVICES=0 "$M/gmabench" model --device cpu --mixers gma --L 1 --D 32 --H 2 --V 64 --T 32 --B 2 \
    --steps 1 --Kc 4 --threads 1 2>&1) || r=$?
  if [ $r = 0 ] && echo "$out" | grep -q "^gma "; then
    echo "no GPU: gmabench model --device cpu runs on the profiling table (backend cpu)"
  else echo "no GPU: gmabench model --device cpu FAILED (rc $r)"; echo "$out"; rc=1; fi
  r=0; out=$(EMU_DEVICES=0 "$M/gmabench" model --device cuda --steps 1 2>&1) || r=$?
  if [ $r = 2 ] && echo "$out" | grep -q "no usable GPU (cudaErrorInsufficientDriver"; then
    echo "no GPU: gmabench model --device cuda refused: $out"
  else echo "no GPU: gmabench model --device cuda: rc $r, expected 2 and the driver's error"; echo "$out"; rc=1; fi
  return $rc
}
# generation on the emulated device: 20 tokens sampled (temperature 1, one seed) after a
# 40-token prompt (more than two chunks of gma.chunk 16) with incremental decoding, the
# prompt prefilled (model_prefill), against bin/gmasample on the CPU with a full forward
# per token, from small checkpoints of five mixers trained on the CPU
decode_checks() {
  local M=$1 rc=0 mx d a b G sc
  make -s bin/gmatrain bin/gmasample
  for mx in gma sdpa linear gated gdn; do
    d=$O/decode-$mx; rm -rf "$d"
    # configs/quickstart.json's model.short_conv is for the mixers that take it (gated does
    # not; gdn keeps its own convolution)
    sc=(); case "$mx" in gated|gdn) sc=(--set model.short_conv=0);; esac
    bin/gmatrain --config configs/quickstart.json --out "$d" --set model.mixer=$mx "${sc[@]}" --set train.steps=20 \
      --set train.eval_every=0 --set data.recall_valid=4 --set data.recall_test=4 --threads 1 --quiet || { rc=1; continue; }
    G=(--checkpoint "$d" --prompt-ids "$(seq -s ' ' 1 8) $(seq -s ' ' 8 -1 1) $(seq -s ' ' 1 8) $(seq -s ' ' 8 -1 1) $(seq -s ' ' 1 8)" --tokens 20 --temperature 1 --seed 5)
    a=$("$M/gmasample" "${G[@]}" --device cuda 2> "$d.err") || true
    b=$(bin/gmasample "${G[@]}" --no-cache 2>/dev/null) || true
    if [ -n "$b" ] && [ "$a" = "$b" ] && grep -q "incremental decoding" "$d.err"; then
      echo "decode $mx: prefill + incremental on the emulated GPU = full forward on the CPU, 20 sampled tokens"
    else echo "decode $mx: DIFFERS"; echo "$a"; echo "$b"; cat "$d.err"; rc=1; fi
  done
  return $rc
}
mkvar() { make -s -f - print-var V="$1" <<'MK' 2>/dev/null || true
include Makefile
print-var: ; @echo $($(V))
MK
}
LIBS=$(mkvar LDLIBS)
LIBS=${LIBS:--fopenmp -lopenblas -lm -lpthread}
# a sanitizer build of the library (make asan) needs its runtime at link time
LIBS="$LIBS $(mkvar OPT | grep -o -- '-fsanitize=[^ ]*' || true)"
W=${1:-all}
if [ "$W" = model ]; then model_checks "${@:2}"; exit $?; fi
if [ "$W" = mpi ]; then mpi_checks "${@:2}"; exit $?; fi
if [ "$W" = build ]; then build_model "$O/model"; exit $?; fi
case $W in all|elem|favor|conv|scan|attn) base=1 ;; *) base=0 ;; esac
case $W in all|core|mem|matmul|nn|linmix|route|div|stem|delta) core=1 ;; *) core=0 ;; esac
case $W in all|self) self=1 ;; *) self=0 ;; esac
if [ $base = 0 ] && [ $core = 0 ] && [ $self = 0 ]; then echo "cuda_emu_check.sh: unknown part '$W'" >&2; exit 2; fi
GXX="g++ -O1 -std=c++20 -w -Itests/cuda_emu -Isrc"
pids=()
if [ $self = 1 ]; then
  "$O/launch2call" tests/cuda_emu/emu_selftest.cpp "$O/emu_selftest.cpp"
  $GXX -g -rdynamic -DEMU_DEVICE_MEMORY "$O/emu_selftest.cpp" -o "$O/emu_selftest" & pids+=($!)
fi
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
if [ $self = 1 ]; then # the emulation itself: correct code passes, each planted fault stops it
  echo "== emu_selftest"; bad=0
  for i in $(seq 0 11); do
    r=0; "$O/emu_selftest" $i > "$O/selftest.out" 2>&1 || r=$?
    want=98; [ $i = 0 ] && want=0
    [ $r = $want ] || { bad=$((bad + 1)); echo "selftest $i: exit $r, expected $want"; cat "$O/selftest.out"; }
    [ $i = 0 ] || echo "selftest $i: $(grep -m1 '^emu:' "$O/selftest.out")"
  done
  # thread and block order: correct code prints the same either way, the planted race not
  a=$("$O/emu_selftest" 0); b=$(EMU_REVERSE=1 "$O/emu_selftest" 0)
  [ "$a" = "$b" ] || { bad=$((bad + 1)); echo "selftest 0: differs in reverse order"; }
  a=$("$O/emu_selftest" 12); b=$(EMU_REVERSE=1 "$O/emu_selftest" 12)
  if [ "$a" != "$b" ]; then echo "selftest 12 (planted race): forward and reverse orders differ, as they must"
  else bad=$((bad + 1)); echo "selftest 12: the planted race gave the same result in both orders"; fi
  a=$("$O/emu_selftest" 13)
  if echo "$a" | grep -q nan; then echo "selftest 13 (stale shared memory from another block): read as NaN"
  else bad=$((bad + 1)); echo "selftest 13: shared memory written by another block was readable: $a"; fi
  echo "$bad of 15 selftest cases wrong"; [ $bad = 0 ] || rc=1
fi
# each driver twice: blocks and threads in order, then in reverse order (EMU_REVERSE)
for r in 0 1; do
  if [ $base = 1 ]; then echo "== emu_baselines (reverse order $r)"; EMU_REVERSE=$r "$O/emu_baselines" "$W" || rc=1; fi
  if [ $core = 1 ]; then echo "== emu_core (reverse order $r)"; EMU_REVERSE=$r "$O/emu_core" "$( [ $W = all ] && echo all || echo $W )" || rc=1; fi
done
exit $rc
