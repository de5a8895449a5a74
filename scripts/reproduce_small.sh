#!/usr/bin/env bash
# reproduce_small.sh: the small CPU profile on real text, over several seeds. Splits the State
# of the Union corpus (scripts/sotu_split.sh: the last 8 speeches test, the 8 before valid, the
# rest train) into data/sotu8, trains a 4096-token byte-level BPE on its train split, writes the
# shards data/sotu8-bpe4k, trains configs/small_<mixer>.json for every mixer and seed
# (seed 1337+i, i = 0..N-1) and evaluates each on the full valid and test splits.
#   scripts/reproduce_small.sh [--sotu DIR] [--seeds N] [--steps N] [--mixers LIST] [--threads N]
#                              [--remedies] [--gmaeval] [--write-docs | --no-results]
#                              [--stamp S] [--force] [--help]
#   --sotu DIR     the State of the Union corpus: DIR/train.txt, valid.txt, test.txt, one speech
#                  a line (also SOTU=DIR; needed until data/sotu8 is made; scripts/sotu_split.sh)
#   --seeds N      seeds per mixer (default 1)
#   --steps N      train.steps of every run (default 150; the configs say 1000: see docs/results/small.md)
#   --mixers LIST  which configs/small_<mixer>.json (default "gma sdpa hybrid linear performer mamba")
#   --threads N    threads of every run (default 2)
#   --remedies     afterwards run scripts/reproduce_routing.sh with the same --steps, --threads
#                  and stamp
#   --gmaeval      evaluate with gmaeval --data valid/test --json (default: the closing
#                  evaluation rows of gmatrain's metrics.jsonl, the same full splits and numbers)
#   --write-docs   write the results page into docs/results/small.md (and its figures into
#                  docs/results/), the tracked page, with --remedies also
#                  docs/results/routing_remedies.md; by default they go to runs/results-<stamp>.md
#                  and runs/results-routing-<stamp>.md (figures runs/results-<stamp>/) and docs/
#                  is untouched
#   --no-results   write no results page (scripts/write_results.sh) at the end
#   --stamp S      the stamp of the names below (default the time of the call, YYYYmmdd-HHMMSS,
#                  printed as the call starts): the stamp of an earlier call continues it
#                  (docs/reproducing.md, "Reruns"); runs/small-S.json then holds the runs of both
#   --force        train again a run made with other options (or not by this script)
# Environment: SOTU=DIR the corpus, as --sotu (no default).
# Writes per run runs/small_<mixer>_s<seed>-<stamp>/ (metrics, checkpoint, valid.json,
# test.json, run.json) and runs/small-<stamp>.{json,txt,md}: per mixer the per-seed values and
# mean, sample std ("n/a" for one seed), min and max of valid ppl, test ppl, test word ppl,
# tokens/s, params, and against gma the verdicts of scripts/write_results.sh (ranges of the
# seeds disjoint, Welch t).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
seeds=1; steps=150; mixers="gma sdpa hybrid linear performer mamba"; threads=2
remedies=0; results=1; gmaeval=0; stamp=""
usage="[--sotu DIR] [--seeds N] [--steps N] [--mixers LIST] [--threads N] [--remedies] [--gmaeval] [--write-docs | --no-results] [--stamp S] [--force] [--help]"
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) need_value "$@"; seeds="$2"; shift 2;;
    --steps) need_value "$@"; steps="$2"; shift 2;;
    --mixers) need_value "$@"; mixers="$2"; shift 2;;
    --threads) need_value "$@"; threads="$2"; shift 2;;
    --sotu) need_value "$@"; SOTU="$2"; shift 2;;
    --stamp) need_value "$@"; stamp="$2"; shift 2;;
    --force) force=1; shift;;
    --remedies) remedies=1; shift;;
    --write-docs) results=docs; shift;;
    --no-results) results=0; shift;;
    --gmaeval) gmaeval=1; shift;;
    --help|-h) script_help; exit 0;;
    *) unknown_option "$1" "$usage --help";;
  esac
done
positive_ints "seeds:$seeds" "steps:$steps" "threads:$threads"
for m in $mixers; do
  [ -f "configs/small_$m.json" ] || { echo "$0: configs/small_$m.json: no such config (--mixers)" >&2; exit 2; }
done
# jget FILE KEY: the number after the first "KEY": in FILE (one-line JSON rows too)
jget() { grep -o "\"$2\":[[:space:]]*[0-9.eE+-]*" "$1" | head -n 1 | sed -E 's/.*:[[:space:]]*//'; }
valid_stamp "$stamp"
# the command of a run: every run folder checked before anything is made (run_state)
runcmd() { echo "bin/gmatrain --config configs/small_$1.json --out $3 --set data.path=data/sotu8-bpe4k --set seed=$2 --set train.steps=$steps --set threads=$threads --quiet"; }
# shellcheck disable=SC2046
for m in $mixers; do for ((i = 0; i < seeds; i++)); do
  run_state "runs/small_${m}_s$((1337 + i))-$stamp" $(runcmd "$m" $((1337 + i)) "runs/small_${m}_s$((1337 + i))-$stamp") > /dev/null
done; done
prepare_sotu8
echo "stamp $stamp (a rerun with --stamp $stamp continues this call)" >&2
cmd="scripts/reproduce_small.sh --seeds $seeds --steps $steps --threads $threads --mixers \"$mixers\""
k=0; n=$(( $(echo $mixers | wc -w) * seeds )); runs=()
for m in $mixers; do
  for ((i = 0; i < seeds; i++)); do
    seed=$((1337 + i)); out="runs/small_${m}_s$seed-$stamp"
    k=$((k + 1)); progress $k $n "configs/small_$m.json seed $seed" "$out"
    # shellcheck disable=SC2046
    run_train "$out" $(runcmd "$m" "$seed" "$out")
    if [ $gmaeval = 1 ]; then # an evaluation already there kept
      [ -s "$out/valid.json" ] || bin/gmaeval --checkpoint "$out" --data valid --threads "$threads" --json "$out/valid.json" > /dev/null
      [ -s "$out/test.json" ] || bin/gmaeval --checkpoint "$out" --data test --threads "$threads" --json "$out/test.json" > /dev/null
    else # gmatrain's closing evaluation: the same full splits, the same numbers as gmaeval's
      for sp in valid test; do grep "\"split\":\"$sp\"" "$out/metrics.jsonl" | tail -n 1 > "$out/$sp.json"; done
    fi
    printf '{"mixer": "%s", "seed": %d, "steps": %d, "run": "%s", "valid_ppl": %s, "test_ppl": %s, "test_word_ppl": %s, "tokens_per_s": %s, "params": %s}\n' \
      "$m" "$seed" "$steps" "$out" "$(jget $out/valid.json ppl)" "$(jget $out/test.json ppl)" \
      "$(jget $out/test.json word_ppl)" "$(get $out/summary.json tokens_per_s)" \
      "$(get $out/summary.json parameters)" > "$out/run.json"
    runs+=("$out/run.json")
  done
done
# the runs of an earlier call of the same stamp (other mixers or seeds) stay in its results
for f in runs/small_*_s*-"$stamp"/run.json; do [ -f "$f" ] && [[ " ${runs[*]} " != *" $f "* ]] && runs+=("$f"); done
scripts/write_results.sh combine-small "runs/small-$stamp" "$cmd" "${runs[@]}"
cat "runs/small-$stamp.txt"
if [ $remedies = 1 ]; then
  scripts/reproduce_routing.sh --steps "$steps" --threads "$threads" --no-results --stamp "$stamp" $([ "$force" = 1 ] && echo --force)
fi
pages=(--small "runs/small-$stamp.json") # and the routing page of --remedies
[ $remedies = 1 ] && pages+=(--routing "runs/routing-$stamp.json")
case $results in
  docs) scripts/write_results.sh "${pages[@]}";;
  1) scripts/write_results.sh "${pages[@]}" --out "runs/results-$stamp.md" \
       --routing-out "runs/results-routing-$stamp.md" --figures "runs/results-$stamp";;
esac
