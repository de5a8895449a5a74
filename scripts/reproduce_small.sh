#!/usr/bin/env bash
# reproduce_small.sh: the small CPU profile on real text. Prepares the State of the Union
# corpus (../shared/data/sotu, or SOTU=DIR) with a 4096-token byte-level BPE trained on its
# train split, trains configs/small_{gma,sdpa,hybrid}.json and prints one table of
# validation / test perplexity (token and word level) and training speed.
#   scripts/reproduce_small.sh [--steps N] [--mixers "gma sdpa hybrid"] [--help]
#   --steps N      train.steps of every run (default: the configs')
#   --mixers LIST  which configs/small_<mixer>.json to train (default "gma sdpa hybrid")
# Environment: SOTU=DIR the corpus (train.txt, valid.txt, test.txt; default ../shared/data/sotu).
# Prints one line as each run starts; the table at the end (runs/small-<stamp>.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
SOTU=${SOTU:-../shared/data/sotu}
steps=""; mixers="gma sdpa hybrid"
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="--set train.steps=$2"; shift 2;;
    --mixers) mixers="$2"; shift 2;;
    --help|-h) script_help; exit 0;;
    *) echo "usage: $0 [--steps N] [--mixers LIST] [--help]" >&2; exit 2;;
  esac
done
make -s
[ -f data/bpe4k-sotu/vocab.bpe ] || bin/gmadata train-tokenizer --vocab-size 4096 --out data/bpe4k-sotu "$SOTU/train.txt"
[ -f data/sotu-bpe4k/meta.json ] || bin/gmadata prepare "$SOTU" --tokenizer bpe:data/bpe4k-sotu --out data/sotu-bpe4k
stamp=$(date +%Y%m%d-%H%M%S)
printf "%-8s %10s %10s %10s %10s %12s\n" mixer valid_ppl test_ppl test_wppl params tokens/s > "runs/small-$stamp.txt"
k=0; n=$(echo $mixers | wc -w)
for m in $mixers; do
  out="runs/small_${m}-$stamp"
  k=$((k + 1)); progress $k $n "configs/small_$m.json" "$out"
  bin/gmatrain --config "configs/small_$m.json" --out "$out" $steps --quiet
  bin/gmaeval --checkpoint "$out" --data test --json "$out/test.json" > /dev/null
  bin/gmaeval --checkpoint "$out" --data valid --json "$out/valid.json" > /dev/null
  printf "%-8s %10.3f %10.3f %10.3f %10s %12.0f\n" "$m" "$(get $out/valid.json ppl)" "$(get $out/test.json ppl)" \
    "$(get $out/test.json word_ppl)" "$(get $out/summary.json parameters)" "$(get $out/summary.json tokens_per_s)" >> "runs/small-$stamp.txt"
done
cat "runs/small-$stamp.txt"
