#!/usr/bin/env bash
# reproduce_routing.sh: the routing remedies at Kc = 128 on the small profile of
# scripts/reproduce_small.sh (configs/small_gma.json, SOTU split data/sotu8, 4096-token BPE).
# One run per variant (seed 1337), each evaluated on the full test split with the routing
# analysis (gmaeval --analyze-json): used components, usage entropy, NMI (pooled over layers
# and heads), test perplexity, and the collapse alerts of its metrics.jsonl.
#   scripts/reproduce_routing.sh [--sotu DIR] [--steps N] [--threads N] [--variants LIST]
#                                [--monitor-every N] [--write-docs | --no-results] [--stamp S]
#                                [--force] [--help]
#   --sotu DIR       the State of the Union corpus, as scripts/reproduce_small.sh --sotu
#   --steps N        train.steps of every run (default 150)
#   --threads N      threads of every run (default 2)
#   --variants LIST  which of the variants below (default all, in this order)
#   --monitor-every N  gma.monitor_every of every run (default 25: with the default 100 and
#                    patience 3 a short run never raises a dead_components alert, and reinit
#                    never fires)
#   --write-docs     write the results page into docs/results/routing_remedies.md (figures
#                    docs/results/routing/); by default runs/results-routing-<stamp>.md
#                    (figures runs/results-<stamp>/routing/)
#   --no-results     write no results page (scripts/write_results.sh) at the end
#   --stamp S        the stamp of the names below (default the time of the call, printed as it
#                    starts): the stamp of an earlier call continues it (docs/reproducing.md, "Reruns")
#   --force          train again a run made with other options (or not by this script)
# Variants (config keys in docs/config.md's reference):
#   default              gaussian routing, default init
#   kmeans               gma.init kmeans
#   div_token_W          gma.div_mode token, gma.div_weight W   (default list: W = 0.01, 0.1; any W)
#   div_batch_W          gma.div_mode batch, gma.div_weight W   (default list: W = 0.01, 0.1; any W)
#   reinit               gma.on_collapse reinit
#   softmax_orthogonal   gma.routing softmax, gma.init orthogonal
#   ema                  gma.memory ema
# Writes runs/routing_<variant>-<stamp>/ (metrics, checkpoint, test.json, test.analysis.json,
# variant.json) and runs/routing-<stamp>.{json,txt,md} (scripts/write_results.sh: the distance
# to the paper's 104 / 0.933 / 0.244 and the closest variant's perplexity cost vs default).
# Environment: SOTU=DIR the corpus, as --sotu (no default).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
steps=150; threads=2; results=1; monitor=25; stamp=""
all="default kmeans div_token_0.01 div_token_0.1 div_batch_0.01 div_batch_0.1 reinit softmax_orthogonal ema"
variants=$all
usage="[--sotu DIR] [--steps N] [--threads N] [--variants LIST] [--monitor-every N] [--write-docs | --no-results] [--stamp S] [--force] [--help]"
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) need_value "$@"; steps="$2"; shift 2;;
    --threads) need_value "$@"; threads="$2"; shift 2;;
    --variants) need_value "$@"; variants="$2"; shift 2;;
    --monitor-every) need_value "$@"; monitor="$2"; shift 2;;
    --sotu) need_value "$@"; SOTU="$2"; shift 2;;
    --stamp) need_value "$@"; stamp="$2"; shift 2;;
    --force) force=1; shift;;
    --write-docs) results=docs; shift;;
    --no-results) results=0; shift;;
    --help|-h) script_help; exit 0;;
    *) unknown_option "$1" "$usage --help";;
  esac
done
positive_ints "steps:$steps" "threads:$threads" "monitor-every:$monitor"
# variant_sets NAME: the --set options of variant NAME (empty output and status 1 when unknown)
variant_sets() {
  case "$1" in
    default) echo " ";;
    kmeans) echo "--set gma.init=kmeans";;
    div_token_*|div_batch_*) local w=${1##*_} mode=${1#div_}; mode=${mode%%_*}
      case "$w" in ''|*[!0-9.]*) return 1;; esac
      echo "--set gma.div_mode=$mode --set gma.div_weight=$w";;
    reinit) echo "--set gma.on_collapse=reinit";;
    softmax_orthogonal) echo "--set gma.routing=softmax --set gma.init=orthogonal";;
    ema) echo "--set gma.memory=ema";;
    *) return 1;;
  esac
}
for v in $variants; do
  variant_sets "$v" > /dev/null || { echo "$0: --variants: unknown variant '$v' (known: $all)" >&2; exit 2; }
done
valid_stamp "$stamp"
runcmd() { # VARIANT OUT: the gmatrain command of a run
  echo "bin/gmatrain --config configs/small_gma.json --out $2 --set data.path=data/sotu8-bpe4k --set gma.n_components=128 --set gma.monitor_every=$monitor --set train.steps=$steps --set threads=$threads $(variant_sets "$1") --quiet"
}
# shellcheck disable=SC2046
for v in $variants; do run_state "runs/routing_$v-$stamp" $(runcmd "$v" "runs/routing_$v-$stamp") > /dev/null; done
prepare_sotu8
echo "stamp $stamp (a rerun with --stamp $stamp continues this call)" >&2
cmd="scripts/reproduce_routing.sh --steps $steps --threads $threads --monitor-every $monitor --variants \"$variants\""
k=0; n=$(echo $variants | wc -w); outs=()
for v in $variants; do
  out="runs/routing_$v-$stamp"
  k=$((k + 1)); progress $k $n "configs/small_gma.json Kc 128 variant $v" "$out"
  # shellcheck disable=SC2046
  if [ "$(run_state "$out" $(runcmd "$v" "$out"))" = done ]; then echo "$out: finished before, kept" >&2
  else # shellcheck disable=SC2046
    run_train "$out" $(runcmd "$v" "$out") > "$out.log" 2>&1 || { cat "$out.log" >&2; exit 1; }
    cat "$out.log" >> "$out/train.log"; rm -f "$out.log"
  fi
  [ -s "$out/test.json" ] && [ -s "$out/test.analysis.json" ] || bin/gmaeval --checkpoint "$out" --data test --threads "$threads" \
    --json "$out/test.json" --analyze-json "$out/test.analysis.json" > /dev/null
  alerts=$(grep -c '"event":"collapse_alert"' "$out/metrics.jsonl" || true)
  reseeded=$(grep '"event":"collapse_alert"' "$out/metrics.jsonl" | grep -c '"reseeded"' || true)
  printf '{"variant": "%s", "sets": "%s", "steps": %d, "run": "%s", "test_ppl": %s, "collapse_alerts": %d, "reseeded_alerts": %d, "analysis": "%s"}\n' \
    "$v" "$(variant_sets "$v" | sed 's/^ $//')" "$steps" "$out" "$(get $out/test.json ppl)" \
    "$alerts" "$reseeded" "$out/test.analysis.json" > "$out/variant.json"
  outs+=("$out/variant.json")
done
# the runs of an earlier call of the same stamp (other variants) stay in its results
for f in runs/routing_*-"$stamp"/variant.json; do [ -f "$f" ] && [[ " ${outs[*]} " != *" $f "* ]] && outs+=("$f"); done
scripts/write_results.sh combine-routing "runs/routing-$stamp" "$cmd" "${outs[@]}"
cat "runs/routing-$stamp.txt"
case $results in
  docs) scripts/write_results.sh --routing "runs/routing-$stamp.json";;
  1) scripts/write_results.sh --routing "runs/routing-$stamp.json" --routing-out "runs/results-routing-$stamp.md" \
       --figures "runs/results-$stamp";;
esac
