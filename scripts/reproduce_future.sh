#!/usr/bin/env bash
# reproduce_future.sh: the small profile (configs/small_gma.json, configs/small_sdpa.json on
# the State of the Union split of scripts/reproduce_small.sh) with K per layer, the Dirichlet
# prior, the gated layer and auto with both paths trained (docs/model.md §3.6, §3.7, §4.1),
# one seed, a short budget:
#   gma K 32 (the config), gma K 64, gma K [64, 32] (one per layer), gma from K 64 with the
#   Dirichlet prior, gated (K 32), sdpa; on request (--variants) also gma K 256 and adaptive
#   K from 256: structural (kad256: merge, prune, split every 20 steps, docs/model.md §4.2)
#   and structural with the Dirichlet prior (kdir256); and, without positions (model.pos
#   none, so that a window longer than the training one can be evaluated), gma_np, sdpa_np,
#   auto_np (auto with model.auto_threshold 2048: at the training length only its sdpa path
#   runs), auto_distill (the same with auto.distill_weight 1: its GMA path distilled from
#   sdpa) and auto_distill001 (auto.distill_weight 0.01).
#   scripts/reproduce_future.sh [--sotu DIR] [--data DIR] [--steps N] [--warmup N] [--threads N]
#                               [--variants LIST] [--set KEY=VALUE]... [--long-len N]
#                               [--stamp S] [--force] [--write-docs] [--help]
#   --data DIR       shards to train on instead of data/sotu8-bpe4k (then not prepared)
#   --steps N        train.steps of every run (default 150)
#   --warmup N       train.warmup of every run (default: the config's, 100)
#   --threads N      threads of every run (default 2)
#   --set KEY=VALUE  a config override for every run, after the variant's (repeatable)
#   --variants LIST  a subset of "gma32 gma64 gma64_32 dir64 gated sdpa gma256 kad256
#                    kdir256 gma_np sdpa_np auto_np auto_distill auto_distill001"
#                    (default the first six)
#   --long-len N     the *_np and auto variants are also evaluated at windows of N tokens
#                    (gmaeval --seq-len N on the valid and test splits; default 2048, at
#                    auto's threshold: its GMA path), and the auto variants analysed there
#                    and at the training length (gmaeval --analyze: the gap between the paths)
#   --stamp S        the stamp of the names below (default the time of the call, printed as it
#                    starts): the stamp of an earlier call continues it, its runs/future-S.json
#                    keeping the rows of the variants not run again (docs/reproducing.md, "Reruns")
#   --force          train again a run made with other options (or not by this script)
#   --write-docs     afterwards write the section of docs/results/future.md
#                    (scripts/write_future_results.sh) from the JSON
# Environment: SOTU=DIR the corpus, as --sotu (needed until data/sotu8 is made).
# Writes runs/future_<variant>-<stamp>/ per run and runs/future-<stamp>.json: per variant
# the command, valid and test ppl (gmatrain's closing evaluation on the whole splits),
# tokens/s, parameters, K per GMA layer at the end (the structural adaptation's last
# "adapt" rows, else the Dirichlet prior's last "components" rows, else the configured K),
# for gated the gates per layer (gmaeval --analyze on the valid split), for the long-window
# variants the ppl at --long-len and for auto the paths' gap (gmaeval --analyze) at both
# lengths. Then runs/future-<stamp>.md, the section of scripts/write_future_results.sh from
# that JSON (every run of the stamp), and its tables printed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
steps=150; warmup=; threads=2; data=; extra=""; variants="gma32 gma64 gma64_32 dir64 gated sdpa"; docs=0; long=2048; stamp=""
usage="[--sotu DIR] [--data DIR] [--steps N] [--warmup N] [--threads N] [--variants LIST] [--set KEY=VALUE]... [--long-len N] [--stamp S] [--force] [--write-docs] [--help]"
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) need_value "$@"; steps="$2"; shift 2;;
    --threads) need_value "$@"; threads="$2"; shift 2;;
    --warmup) need_value "$@"; warmup="$2"; shift 2;;
    --data) need_value "$@"; data="$2"; shift 2;;
    --set) need_value "$@"; extra+=" --set $2"; shift 2;;
    --variants) need_value "$@"; variants="$2"; shift 2;;
    --long-len) need_value "$@"; long="$2"; shift 2;;
    --sotu) need_value "$@"; SOTU="$2"; shift 2;;
    --stamp) need_value "$@"; stamp="$2"; shift 2;;
    --force) force=1; shift;;
    --write-docs) docs=1; shift;;
    --help|-h) script_help; exit 0;;
    *) unknown_option "$1" "$usage --help";;
  esac
done
positive_ints "steps:$steps" "threads:$threads" "long-len:$long"
[ -z "$warmup" ] || [[ "$warmup" =~ ^[0-9]+$ ]] || { echo "$0: --warmup: '$warmup' is not a whole number" >&2; exit 2; }
# the structural adaptation of kad256 and kdir256: every 20 steps, prune below half the
# uniform share, merge below 0.001, split above 4 times it, K in [16, 256]
kad="--set gma.adapt_every=20 --set gma.prune_below=0.5 --set gma.merge_dist=0.001 --set gma.split_above=4 --set gma.k_min=16 --set gma.k_max=256"
# the config and the --set options of a variant
sets_of() {
  case "$1" in
    gma32) echo "configs/small_gma.json";;
    gma64) echo "configs/small_gma.json --set gma.n_components=64";;
    gma64_32) echo "configs/small_gma.json --set gma.n_components=64,32";;
    dir64) echo "configs/small_gma.json --set gma.n_components=64 --set gma.dirichlet_weight=1 --set gma.dirichlet_alpha=0.5 --set gma.dirichlet_every=25 --set gma.dirichlet_drop=0.012";;
    gated) echo "configs/small_gma.json --set model.mixer=gated";;
    sdpa) echo "configs/small_sdpa.json";;
    gma256) echo "configs/small_gma.json --set gma.n_components=256";;
    kad256) echo "configs/small_gma.json --set gma.n_components=256 $kad";;
    kdir256) echo "configs/small_gma.json --set gma.n_components=256 $kad --set gma.dirichlet_weight=1 --set gma.dirichlet_alpha=0.5 --set gma.dirichlet_every=20 --set gma.dirichlet_drop=0.003";;
    gma_np) echo "configs/small_gma.json --set model.pos=none";;
    sdpa_np) echo "configs/small_sdpa.json --set model.pos=none";;
    auto_np) echo "configs/small_gma.json --set model.pos=none --set model.mixer=auto --set model.auto_threshold=2048";;
    auto_distill) echo "configs/small_gma.json --set model.pos=none --set model.mixer=auto --set model.auto_threshold=2048 --set auto.distill_weight=1";;
    auto_distill001) echo "configs/small_gma.json --set model.pos=none --set model.mixer=auto --set model.auto_threshold=2048 --set auto.distill_weight=0.01";;
    *) echo "$0: unknown variant '$1' (--variants: gma32 gma64 gma64_32 dir64 gated sdpa gma256 kad256 kdir256 gma_np sdpa_np auto_np auto_distill auto_distill001)" >&2; exit 2;;
  esac
}
for v in $variants; do sets_of "$v" > /dev/null; done
valid_stamp "$stamp"
# shellcheck disable=SC2046
traincmd() { set -- $(sets_of "$1"); local c="$1"; shift; echo "bin/gmatrain --config $c $*$extra --set data.path=${data:-data/sotu8-bpe4k} --set train.steps=$steps${warmup:+ --set train.warmup=$warmup} --set threads=$threads"; }
# shellcheck disable=SC2046
for v in $variants; do run_state "runs/future_$v-$stamp" $(traincmd "$v") --out "runs/future_$v-$stamp" > /dev/null; done
if [ -z "$data" ]; then prepare_sotu8; data=data/sotu8-bpe4k
else [ -f "$data/meta.json" ] || { echo "$0: --data $data: no meta.json there (bin/gmadata prepare makes one)" >&2; exit 2; }; make -s binaries; fi
echo "stamp $stamp (a rerun with --stamp $stamp continues this call)" >&2
k=0; n=$(echo $variants | wc -w); rows=()
for v in $variants; do
  out="runs/future_$v-$stamp"; set -- $(sets_of "$v"); cfg="$1"; shift
  k=$((k + 1)); progress $k $n "$cfg $*" "$out"
  cmd=$(traincmd "$v")
  # shellcheck disable=SC2086
  run_train "$out" $cmd --out "$out" --quiet
  gates=null
  if [ "$v" = gated ]; then # an evaluation already there kept (also below)
    [ -s "$out/analysis.json" ] || bin/gmaeval --checkpoint "$out" --data valid --threads "$threads" --analyze-json "$out/analysis.json" > /dev/null
    gates="$out/analysis.json"
  fi
  longs=null
  case "$v" in *_np|auto_distill*)
    longs="$out/long"; mkdir -p "$longs"
    for split in valid test; do
      [ -s "$longs/$split.json" ] || bin/gmaeval --checkpoint "$out" --data $split --seq-len "$long" --batch 1 --threads "$threads" --json "$longs/$split.json" > /dev/null
    done
    case "$v" in auto*)
      [ -s "$longs/analysis_train_len.json" ] || bin/gmaeval --checkpoint "$out" --data valid --threads "$threads" --analyze-json "$longs/analysis_train_len.json" > /dev/null
      [ -s "$longs/analysis_long.json" ] || bin/gmaeval --checkpoint "$out" --data valid --seq-len "$long" --batch 1 --threads "$threads" --analyze-json "$longs/analysis_long.json" > /dev/null;;
    esac;;
  esac
  rows+=("$v|$cmd|$out|$gates|$longs")
done
python3 -B scripts/future_collect.py "runs/future-$stamp.json" "$steps" "$threads" "${warmup:-100}" "$long" "${rows[@]}"
scripts/write_future_results.sh "runs/future-$stamp.json" --out "runs/future-$stamp.md" > /dev/null
grep '^|' "runs/future-$stamp.md" || true # the tables
echo "runs/future-$stamp.md"
[ $docs = 1 ] && scripts/write_future_results.sh "runs/future-$stamp.json"
exit 0
