#!/usr/bin/env bash
# bench_all.sh: what `make bench` runs, then the one summary table it ends with
# (gmabench summary: date, CPU model, BLAS build and kernels; training tok/s against
# PyTorch eager when torch imports, layer time against sdpa and peak memory at
# 1K/4K/16K/64K, decode tok/s against the measured limit at M = 1, 8, 64, time to first
# token at 1K/4K (and 16K for gma)). Each benchmark writes its JSON into the output
# directory and the summary reads them back. Points past a time limit are skipped (a layer
# point, a prefill point, the model's rounds past --max-seconds keep one step, a decode row
# past it ends its mixer's larger M), so a loaded machine shortens the run instead of
# stretching it; the standard profile is sized to finish in under 15 minutes on a quiet
# 2-core machine (6 min 56 s end to end on a quiet one;
# stopped at 1,461 s on a loaded one before the limits were added); --quick runs tiny shapes in seconds (the format
# and plumbing, as tests/test_bench_summary.c checks).
#
#   scripts/bench_all.sh [--quick] [--out DIR] [--threads N]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
QUICK=0 OUT=runs/bench THREADS=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h) script_help; exit 0 ;;
    --quick) QUICK=1; shift; continue ;;
    --out|--threads) need_value "$@" ;;
  esac
  case "$1" in
    --out) OUT=$2 ;; --threads) THREADS=$2 ;;
    *) unknown_option "$1" "--quick --out --threads --help" ;;
  esac
  shift 2
done
[[ "$THREADS" =~ ^[1-9][0-9]*$ ]] || { echo "bench_all.sh: --threads \"$THREADS\" is not a positive integer" >&2; exit 2; }
[ -x bin/gmabench ] || { echo "bench_all.sh: bin/gmabench is missing (make binaries)" >&2; exit 2; }
mkdir -p "$OUT"
B="bin/gmabench --threads $THREADS"
MIX=gma,sdpa,linear,performer,mamba
if [ "$QUICK" = 1 ]; then
  SHAPE="--L 1 --D 16 --H 2 --V 64 --Kc 4"
  $B mixer --mixers gma,sdpa --seq 64,128 --D 16 --H 2 --Kc 4 --repeat 1 --json "$OUT/mixer.json"
  $B model --mixers gma,sdpa $SHAPE --T 32 --B 2 --steps 1 --json "$OUT/model.json"
  $B decode --mixers gma,sdpa $SHAPE --T 32 --samples 1,8 --repeat 1 --json "$OUT/decode.json"
  $B prefill --mixers gma,sdpa $SHAPE --seq 64,128 --repeat 1 --feed-max 64 --json "$OUT/prefill.json"
  TORCH=(--mixers gma --B 2 --T 32 --V 64 --steps 1 --repeat 1)
else
  $B mixer --mixers $MIX --seq 1K,4K,16K,64K --repeat 3 --max-seconds 20 --json "$OUT/mixer.json"
  $B model --mixers $MIX --steps 5 --json "$OUT/model.json"
  $B decode --mixers $MIX --T 256 --samples 1,8,64 --repeat 2 --json "$OUT/decode.json"
  $B prefill --mixers gma,sdpa,linear,mamba --seq 1K,4K --repeat 2 --feed-max 1024 --max-seconds 60 \
    --json "$OUT/prefill.json"
  $B prefill --mixers gma --seq 16K --repeat 1 --feed-max 0 --json "$OUT/prefill16k.json"
  TORCH=(--mixers gma,sdpa --steps 3 --repeat 3)
fi
bash scripts/bench_torch.sh "${TORCH[@]}" --threads "$THREADS" --out "$OUT/torch"
IN="$OUT/mixer.json,$OUT/model.json,$OUT/decode.json,$OUT/prefill.json"
[ "$QUICK" = 1 ] || IN="$IN,$OUT/prefill16k.json"
$B summary --in "$IN" --torch "$OUT/torch"
