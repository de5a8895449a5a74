#!/usr/bin/env bash
# reproduce_quickstart.sh: the table of docs/quickstart.md: configs/quickstart.json as it is and
# with one change each (no short convolution; Zoology's build; softmax attention with and
# without the short convolution), trained one at a time, each scored by gmaeval on the test
# split: accuracy over all queries and at the first query, beside the two key-blind rules.
#   scripts/reproduce_quickstart.sh [--out DIR] [--seeds LIST] [--threads N] [--steps N]
#                                   [--variants LIST] [--write-docs] [--force]
#   --out DIR        the runs, DIR/<variant>-s<seed>/ (default runs/quickstart_table)
#   --seeds LIST     seeds of every variant (default "1337", the config's); with more than one a
#                    cell is "mean (min-max)" over them
#   --threads N      threads of each run (default 1)
#   --steps N        train.steps of every run (default: the config's, 3000)
#   --variants LIST  which of the variants below (default all, in this order)
#   --write-docs     results.json into docs/results/quickstart/ (docs/quickstart.md's table is
#                    generated from it by scripts/gen_docs.py); else into DIR
#   --force          train again a run made with other options (or not by this script); a run
#                    finished with the same options is kept, one stopped part way resumed
#                    (docs/reproducing.md, "Reruns")
# Variants: gma (none), gma_noconv (model.short_conv 0), gma_zoology (model.mixer baseconv,gma
# and model.pos none), sdpa (model.mixer sdpa), sdpa_noconv (sdpa, model.short_conv 0).
# Writes DIR/results.json and prints the table (scripts/quickstart_table.py).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
out=runs/quickstart_table; seeds=1337; threads=1; steps=""; docs=0; force=0
all="gma gma_noconv gma_zoology sdpa sdpa_noconv"; variants=$all
usage="[--out DIR] [--seeds LIST] [--threads N] [--steps N] [--variants LIST] [--write-docs] [--force]"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) need_value "$@"; out="$2"; shift 2;;
    --seeds) need_value "$@"; seeds="$2"; shift 2;;
    --threads) need_value "$@"; threads="$2"; shift 2;;
    --steps) need_value "$@"; steps="$2"; shift 2;;
    --variants) need_value "$@"; variants="$2"; shift 2;;
    --write-docs) docs=1; shift;;
    --force) force=1; shift;;
    --help|-h) script_help; exit 0;;
    *) unknown_option "$1" "$usage --help";;
  esac
done
positive_ints "threads:$threads" ${steps:+"steps:$steps"}
for s in $seeds; do positive_ints "seeds:$s"; done
for v in $variants; do
  [[ " $all " == *" $v "* ]] || { echo "$0: unknown variant '$v' (one of: $all)" >&2; exit 2; }
done
[ -x bin/gmatrain ] && [ -x bin/gmaeval ] || { echo "$0: bin/gmatrain or bin/gmaeval missing: run make first" >&2; exit 2; }

sets() { # the changes of a variant to configs/quickstart.json
  case "$1" in
    gma) echo "";;
    gma_noconv) echo "model.short_conv=0";;
    gma_zoology) echo "model.mixer=baseconv,gma model.pos=none";;
    sdpa) echo "model.mixer=sdpa";;
    sdpa_noconv) echo "model.mixer=sdpa model.short_conv=0";;
  esac
}
n=$(( $(echo $variants | wc -w) * $(echo $seeds | wc -w) )); k=0
mkdir -p "$out"
rows=()
for v in $variants; do
  for seed in $seeds; do
    k=$((k + 1)); dir="$out/$v-s$seed"
    args=(); for s in $(sets $v); do args+=(--set "$s"); done
    [ -z "$steps" ] || args+=(--set "train.steps=$steps")
    progress $k $n "$v seed $seed" "$dir"
    run_train "$dir" bin/gmatrain --config configs/quickstart.json --out "$dir" --threads "$threads" --quiet \
      --set seed=$seed "${args[@]+"${args[@]}"}"
    if [ ! "$dir/test.json" -nt "$dir/summary.json" ]; then # a run (re)trained: scored again
      bin/gmaeval --checkpoint "$dir" --data test --threads "$threads" --json "$dir/test.json.tmp" > /dev/null
      mv "$dir/test.json.tmp" "$dir/test.json"
    fi
    rows+=("$v" "$seed" "$(sets $v)" "$dir/test.json")
  done
done
dest="$out"; [ $docs = 0 ] || dest=docs/results/quickstart
mkdir -p "$dest"
cmd="scripts/reproduce_quickstart.sh --seeds \"$seeds\" --threads $threads${steps:+ --steps $steps}"
python3 -B scripts/quickstart_table.py collect "$dest/results.json" "$cmd" "${rows[@]}"
python3 -B scripts/quickstart_table.py table "$dest/results.json"
