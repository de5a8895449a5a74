#!/usr/bin/env bash
# reproduce_diagnosis.sh: the recall diagnosis of docs/routing.md ("Why GMA's routing stalls
# on recall"): six training runs with gma.diag_every on (routing_diag rows in
# metrics.jsonl), one at a time, then scripts/routing_diag.py for the plots and tables.
#   scripts/reproduce_diagnosis.sh [--out DIR] [--every N] [--threads N] [--only self|cross|reinit|reseedk]
#                                  [--write-docs] [--force]
#   self   MQAR, reproduce_mqar.sh's small profile, bc-gma64+sc at width 64 and lr 2.2e-3
#          (layer 0 baseconv, layer 1 GMA with Kc 64, short convolutions on q, k, v, no
#          positions; 1500 steps of 64 examples of length 64 with 4 pairs), seeds 1 and 2:
#          docs/results/mqar/results.json has seed 1 off the plateau (test 0.507 at length
#          64) and seed 2 on it (0.223); validated every 100 steps
#   cross  configs/xmqar_long_gma.json (cross-sequence MQAR, causal GMA encoder, GMA cross
#          layers with Kc 64, 3000 steps), seeds 1 and 2: docs/results/cross.md has seed 1
#          off the plateau and seed 2 on it
#   reinit the self run of seed 2 again with gma.on_collapse "reinit" (dead components
#          re-seeded from query rows, docs/routing.md "Monitoring and repair"), checked every
#          100 steps: does re-seeding alone move a seed off the plateau
#   reseedk the same with gma.reseed_rows "keys" (re-seeded from the key rows)
#   --out DIR     the runs, DIR/<kind>-s<seed>/ (default runs/routing_diag)
#   --every N     gma.diag_every of the runs (default 25)
#   --threads N   threads of each run (default 1)
#   --only KIND   the self, cross, reinit or reseedk runs only
#   --write-docs  the plots and tables into docs/results/routing_diag/ (else into DIR)
#   --force       train again a run made with other options (or not by this script); a run
#                 finished with the same options is kept, one stopped part way resumed
#                 (docs/reproducing.md, "Reruns")
# The training itself is the same with the diagnosis off (it only reads the last
# micro-batch's rows and the step's gradients), so the runs reproduce the accuracies above.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
out=runs/routing_diag; every=25; threads=1; only=""; docs=0; force=0
usage="[--out DIR] [--every N] [--threads N] [--only self|cross|reinit|reseedk] [--write-docs] [--force]"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) need_value "$@"; out="$2"; shift 2;;
    --every) need_value "$@"; every="$2"; shift 2;;
    --threads) need_value "$@"; threads="$2"; shift 2;;
    --only) need_value "$@"; only="$2"; shift 2;;
    --write-docs) docs=1; shift;;
    --force) force=1; shift;;
    --help|-h) script_help; exit 0;;
    *) unknown_option "$1" "$usage --help";;
  esac
done
positive_ints "every:$every" "threads:$threads"
case "$only" in ""|self|cross|reinit|reseedk) ;; *) echo "$0: --only must be self, cross, reinit or reseedk, not '$only'" >&2; exit 2;; esac
[ -x bin/gmatrain ] || { echo "$0: bin/gmatrain missing: run make first" >&2; exit 2; }

# the small profile of reproduce_mqar.sh with its bc-gma64+sc token at width 64, lr 2.2e-3
self_sets="--set model.mixer=baseconv,gma --set gma.n_components=64 --set model.pos=none --set model.short_conv=4"
self_sets="$self_sets --set model.d_model=64 --set train.lr=2.2e-3 --set train.steps=1500"
self_sets="$self_sets --set data.mqar_vocab=256 --set train.batch_size=64 --set train.seq_len=64 --set model.max_seq_len=128"
self_sets="$self_sets --set train.eval_every=100 --set data.mqar_valid=128 --set data.mqar_test=1000"
self_sets="$self_sets --set data.mqar_lengths=64 --set data.mqar_pairs=4 --set data.mqar_test_lengths=64,128 --set data.mqar_test_pairs=4,8"
runs=""
case "$only" in ""|self) runs="$runs self:1 self:2";; esac
case "$only" in ""|cross) runs="$runs cross:1 cross:2";; esac
case "$only" in ""|reinit) runs="$runs reinit:2";; esac
case "$only" in ""|reseedk) runs="$runs reseedk:2";; esac
n=$(echo $runs | wc -w); k=0
mkdir -p "$out"
for r in $runs; do
  kind=${r%%:*}; seed=${r#*:}; k=$((k + 1)); dir="$out/$kind-s$seed"
  progress $k $n "$kind seed $seed" "$dir"
  if [ $kind != cross ]; then
    extra=""; [ $kind = self ] || extra="--set gma.on_collapse=reinit"
    [ $kind != reseedk ] || extra="$extra --set gma.reseed_rows=keys"
    # shellcheck disable=SC2086
    run_train "$dir" bin/gmatrain --config configs/mqar.json --out "$dir" $self_sets --set seed=$seed \
      --set threads=$threads --set gma.diag_every=$every $extra --quiet
  else
    run_train "$dir" bin/gmatrain --config configs/xmqar_long_gma.json --out "$dir" --set seed=$seed \
      --set threads=$threads --set gma.diag_every=$every --quiet
  fi
done
dest="$out"; [ $docs = 0 ] || dest=docs/results/routing_diag
python3 scripts/routing_diag.py "$out" --out "$dest" --command "scripts/reproduce_diagnosis.sh --every $every --threads $threads"
