#!/usr/bin/env bash
# reproduce_small.sh: the small CPU profile on real text. Prepares the State of the Union
# corpus (../shared/data/sotu, or SOTU=DIR) with a 4096-token byte-level BPE trained on its
# train split, trains configs/small_{gma,sdpa,hybrid}.json and prints one table of
# validation / test perplexity (token and word level) and training speed.
#   scripts/reproduce_small.sh [--steps N] [--mixers "gma sdpa hybrid"]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
SOTU=${SOTU:-../shared/data/sotu}
steps=""; mixers="gma sdpa hybrid"
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="--set train.steps=$2"; shift 2;;
    --mixers) mixers="$2"; shift 2;;
    *) echo "usage: $0 [--steps N] [--mixers LIST]"; exit 2;;
  esac
done
make -s
[ -f data/bpe4k-sotu/vocab.bpe ] || bin/gmadata train-tokenizer --vocab-size 4096 --out data/bpe4k-sotu "$SOTU/train.txt"
[ -f data/sotu-bpe4k/meta.json ] || bin/gmadata prepare "$SOTU" --tokenizer bpe:data/bpe4k-sotu --out data/sotu-bpe4k
stamp=$(date +%Y%m%d-%H%M%S)
printf "%-8s %10s %10s %10s %10s %12s\n" mixer valid_ppl test_ppl test_wppl params tokens/s > "runs/small-$stamp.txt"
for m in $mixers; do
  out="runs/small_${m}-$stamp"
  bin/gmatrain --config "configs/small_$m.json" --out "$out" $steps --quiet
  bin/gmaeval --checkpoint "$out" --data test --json "$out/test.json" > /dev/null
  bin/gmaeval --checkpoint "$out" --data valid --json "$out/valid.json" > /dev/null
  printf "%-8s %10.3f %10.3f %10.3f %10s %12.0f\n" "$m" "$(get $out/valid.json ppl)" "$(get $out/test.json ppl)" \
    "$(get $out/test.json word_ppl)" "$(get $out/summary.json parameters)" "$(get $out/summary.json tokens_per_s)" >> "runs/small-$stamp.txt"
done
cat "runs/small-$stamp.txt"
