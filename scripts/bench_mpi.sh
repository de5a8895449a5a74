#!/usr/bin/env bash
# bench_mpi.sh: what data-parallel training costs on this machine. R ranks with batch b each
# (one thread per rank) against one process with b (one thread) and one process with the
# same global batch R*b (1 and R threads): milliseconds per optimiser step and tokens/s from
# each run's summary.json, the median of --repeat runs with the min-max spread. On one
# small machine this is not a scaling test; it shows what running and synchronising R
# ranks costs. Needs the MPI build (`make mpi`, built here when missing).
#
# --device cuda: the same on GPUs, with bin/cuda-mpi/gmatrain (make cuda-mpi) against the
# one-process bin/cuda/gmatrain (make cuda), without the OpenMP-thread row; the ranks take
# GPU (local rank mod GPU count), so R ranks on R GPUs measure NCCL data parallelism.
# --mpi-bin / --one-bin point at other builds.
#
#   scripts/bench_mpi.sh [--np R] [--batch b] [--steps S] [--repeat N] [--device cpu|cuda]
#                        [--mpi-bin P] [--one-bin P] [--set key=value]...
#   e.g. scripts/bench_mpi.sh --set model.d_model=256 --set model.n_layers=4 --set model.n_heads=4 --steps 40
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
np=2; b=16; steps=300; rep=3; sets=(); dev=cpu; mpibin=""; onebin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h) script_help; exit 0 ;;
    --np) need_value "$@"; np="$2"; shift 2 ;;
    --batch) need_value "$@"; b="$2"; shift 2 ;;
    --steps) need_value "$@"; steps="$2"; shift 2 ;;
    --repeat) need_value "$@"; rep="$2"; shift 2 ;;
    --set) need_value "$@"; sets+=(--set "$2"); shift 2 ;;
    --device) need_value "$@"; dev="$2"; shift 2 ;;
    --mpi-bin) need_value "$@"; mpibin="$2"; shift 2 ;;
    --one-bin) need_value "$@"; onebin="$2"; shift 2 ;;
    *) unknown_option "$1" "[--np R] [--batch b] [--steps S] [--repeat N] [--device cpu|cuda] [--mpi-bin P] [--one-bin P] [--set key=value]... --help" ;;
  esac
done
command -v mpirun > /dev/null || { echo "$0: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 2; }
case "$dev" in
  cpu) [ -n "$mpibin" ] || { mpibin=bin/mpi/gmatrain; [ -x $mpibin ] || make -s mpi; }
       [ -n "$onebin" ] || { onebin=bin/gmatrain; [ -x $onebin ] || make -s binaries; } ;;
  cuda) [ -n "$mpibin" ] || { mpibin=bin/cuda-mpi/gmatrain; [ -x $mpibin ] || make -s cuda-mpi; }
        [ -n "$onebin" ] || { onebin=bin/cuda/gmatrain; [ -x $onebin ] || make -s cuda; } ;;
  *) echo "$0: --device must be cpu or cuda" >&2; exit 2 ;;
esac
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--config configs/quickstart.json --set train.steps="$steps" --set train.eval_every=0
        --set train.checkpoint_every=1000000 --set train.log_every=1000000 "${sets[@]}" --device "$dev" --quiet)
field() { grep -o "\"$1\":[[:space:]]*[-0-9.eE+]*" "$2" | head -1 | grep -o '[-0-9.eE+]*$'; }
stats() { sort -g | awk -v f="$1" '{ v[NR] = $1 } END { printf f " (" f "-" f ")", v[int((NR + 1) / 2)], v[1], v[NR] }'; }

printf "%-34s %12s %22s %26s\n" "run" "global batch" "ms/step median (range)" "tokens/s median (range)"
row() { # label global-batch command...
  local label=$1 gb=$2 ms=() tps=() r; shift 2
  for r in $(seq "$rep"); do
    rm -rf "$tmp/run"
    OMP_NUM_THREADS=${OMPT:-1} "$@" "${common[@]}" --out "$tmp/run" > "$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
    local s="$tmp/run/summary.json"
    ms+=("$(awk -v t="$(field train_seconds "$s")" -v n="$(field steps "$s")" 'BEGIN { print 1000 * t / n }')")
    tps+=("$(field tokens_per_s "$s")")
  done
  printf "%-34s %12s %22s %26s\n" "$label" "$gb" "$(printf '%s\n' "${ms[@]}" | stats %.1f)" "$(printf '%s\n' "${tps[@]}" | stats %.0f)"
}
mpi=(mpirun "${root[@]}" --oversubscribe -x OMP_NUM_THREADS=1)
row "mpirun -np 1, b $b" "$b" "${mpi[@]}" -np 1 "$mpibin" --threads 1 --set train.batch_size="$b"
row "mpirun -np $np, b $b per rank" "$((np * b))" "${mpi[@]}" -np "$np" "$mpibin" --threads 1 --set train.batch_size="$b"
row "one process, b $((np * b)), 1 thread" "$((np * b))" "$onebin" --threads 1 --set train.batch_size="$((np * b))"
[ "$dev" = cuda ] ||
  OMPT=$np row "one process, b $((np * b)), $np threads" "$((np * b))" "$onebin" --threads "$np" --set train.batch_size="$((np * b))"
