#!/usr/bin/env bash
# check_data_parallel.sh: data-parallel training against one process with the whole batch.
#
#   scripts/check_data_parallel.sh --bin GMATRAIN [--device cpu|cuda] [--out DIR]
#                                  [--way "ENV|TRANSPORT"]... [--steps N]
#
# GMATRAIN is an MPI build of gmatrain (bin/mpi, bin/cuda-mpi, or the emulated cuda-mpi
# build of scripts/cuda_emu_check.sh). configs/quickstart.json trains N steps (default 3)
# in one process with batch 4 (GMATRAIN started without mpirun: an MPI singleton), then,
# for each --way, on 2 ranks x batch 2 under mpirun with the environment ENV (e.g.
# "GMA_NCCL=0"; may be empty). Per-step losses and gradient norms must agree to 1e-5
# relative, and when TRANSPORT is given summary.json's "allreduce" must name it ("NCCL",
# "MPI through host memory", "MPI"). One line a way; exit 0 all agree, 1 one does not or a
# run failed, 2 bad usage or no mpirun. Logs under DIR (default runs/check_data_parallel).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
BIN=""; DEV=cpu; OUT=runs/check_data_parallel; STEPS=3; WAYS=()
usage() { echo "usage: $0 --bin GMATRAIN [--device D] [--out DIR] [--way \"ENV|TRANSPORT\"]... [--steps N]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in --bin|--device|--out|--steps) need_value "$@";; --way) [ $# -ge 2 ] || need_value "$1";; esac
  case "$1" in
    --help|-h) script_help; exit 0 ;;
    --bin) BIN="$2"; shift ;;
    --device) DEV="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    --way) WAYS+=("$2"); shift ;;
    --steps) STEPS="$2"; shift ;;
    *) unknown_option "$1" "--bin --device --out --way --steps --help" ;;
  esac
  shift
done
[ -n "$BIN" ] || usage
[ -x "$BIN" ] || { echo "$0: $BIN: not an executable" >&2; exit 2; }
command -v mpirun > /dev/null || { echo "$0: mpirun not found (apt-get install openmpi-bin)" >&2; exit 2; }
[ ${#WAYS[@]} -gt 0 ] || WAYS=("|")
rm -rf "$OUT"; mkdir -p "$OUT"
args=(--config configs/quickstart.json --device "$DEV" --threads 1 --quiet --set train.steps="$STEPS" --set train.log_every=1
      --set train.eval_every=0 --set train.checkpoint_every=0 --set data.recall_valid=4 --set data.recall_test=4)
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
OMP_NUM_THREADS=1 "$BIN" "${args[@]}" --set train.batch_size=4 --out "$OUT/one" > "$OUT/one.log" 2>&1 \
  || { echo "one process: failed"; cat "$OUT/one.log"; exit 1; }
rc=0; i=0
for w in "${WAYS[@]}"; do
  env="${w%%|*}"; want="${w#*|}"; i=$((i + 1)); run="$OUT/two-$i"
  if ! env $env OMP_NUM_THREADS=1 timeout 600 mpirun "${root[@]}" --oversubscribe -np 2 "$BIN" "${args[@]}" \
      --set train.batch_size=2 --out "$run" > "$run.log" 2>&1; then
    echo "2 ranks ${env:+($env) }: failed"; cat "$run.log"; rc=1; continue
  fi
  awk -v want="$want" -v way="${env:+$env: }" -v steps="$STEPS" '
    FNR == 1 { f++ }
    f < 3 && /"step":/ && !/"split"/ {
      match($0, /"loss":[^,]*/); l = substr($0, RSTART + 7, RLENGTH - 7)
      match($0, /"grad_norm":[^,]*/); g = substr($0, RSTART + 12, RLENGTH - 12)
      n[f]++; L[f, n[f]] = l; G[f, n[f]] = g }
    /"allreduce"/ { a = $0; sub(/.*"allreduce":[ \t]*"/, "", a); sub(/".*/, "", a) }
    END { bad = n[1] != steps || n[2] != steps || (want != "" && a != want); worst = 0
          for (i = 1; i <= n[1]; i++) for (k = 0; k < 2; k++) {
            x = k ? G[1, i] : L[1, i]; y = k ? G[2, i] : L[2, i]; e = (x - y) / x; e = e < 0 ? -e : e
            if (e > worst) worst = e; if (!(e < 1e-5)) bad = 1 }
          printf "%sall-reduce by %s: 2 ranks x batch 2 vs 1 process x batch 4, worst relative difference %.2e over %d steps: %s\n",
                 way, a == "" ? "?" : a, worst, n[2], bad ? "FAILED" : "ok"
          exit bad }' "$OUT/one/metrics.jsonl" "$run/metrics.jsonl" "$run/summary.json" || { rc=1; cat "$run.log"; }
done
exit $rc
