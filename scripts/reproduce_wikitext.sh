#!/usr/bin/env bash
# reproduce_wikitext.sh: the language-model table. Trains configs/wikitext103_<mixer>.json for
# each mixer, evaluates the final checkpoint on the test split (token- and word-level
# perplexity) and prints one table (also written to runs/wikitext-<profile>-<stamp>.txt).
#
#   scripts/reproduce_wikitext.sh [--profile paper|small] [--data DIR] [--mixers "gma_k256 sdpa ..."]
#                                 [--steps N] [--device cpu|cuda] [--stamp S] [--force] [--help]
#   --profile paper  the configurations as they are (GPU-scale: 8 layers, d_model 512, N 512)
#   --profile small  the same configurations shrunk for a CPU (2 layers, d_model 128, N 128,
#                    300 steps, Kc 32, 64 Performer features): a smoke run of the pipeline
#   --data DIR       token shards to use (default data/wikitext-103-gpt2; fetched with
#                    `gmadata fetch wikitext-103 && gmadata fetch gpt2` and prepared when missing)
#   --mixers LIST    which configs/wikitext103_<mixer>.json to train
#                    (default "gma_k256 sdpa linear performer mamba hybrid")
#   --steps N        train.steps of every run; --device cpu|cuda (cuda: the programs of bin/cuda)
#   --stamp S        the stamp of the names below (default the time of the call, printed as it
#                    starts): the stamp of an earlier call continues it, its table keeping the
#                    rows of the mixers not run again (docs/reproducing.md, "Reruns")
#   --force          train again a run made with other options (or not by this script)
# Environment: none read. Prints one line as each run starts; the table at the end, also
# as Markdown (runs/wikitext-<profile>-<stamp>.md), and the loss and perplexity curves of
# the runs (scripts/plot_runs.sh) in runs/wikitext-<profile>-<stamp>_plots/.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=paper; data=data/wikitext-103-gpt2; device=""; steps=""
mixers="gma_k256 sdpa linear performer mamba hybrid"
. scripts/lib_reproduce.sh
extra_option() { case "$1" in --data) need_value "$@"; data="$2";; *) return 1;; esac; }
parse_options "[--profile paper|small] [--data DIR] [--mixers LIST] [--steps N] [--device D] [--stamp S] [--force]" "$@"
make -s binaries
if [ ! -f "$data/meta.json" ]; then
  if [ "$data" != data/wikitext-103-gpt2 ]; then echo "$0: $data/meta.json missing" >&2; exit 2; fi
  bin/gmadata fetch wikitext-103
  bin/gmadata fetch gpt2
  bin/gmadata prepare wikitext-103 --tokenizer gpt2 --out "$data"
fi
echo "stamp $stamp (a rerun with --stamp $stamp continues this call)" >&2
table="runs/wikitext-$profile-$stamp.txt"
mkdir -p runs
wrow() { # MIXER RUN: its row of the table
  printf "%-10s %12s %10.3f %10.3f %12.3f %12.0f\n" "$1" "$(get "$2/summary.json" parameters)" \
    "$(get "$2/summary.json" ppl)" "$(get "$2/test.json" ppl)" "$(get "$2/test.json" word_ppl)" \
    "$(get "$2/summary.json" tokens_per_s)" >> "$table"
}
printf "%-10s %12s %10s %10s %12s %12s\n" mixer params valid_ppl test_ppl test_wppl tokens/s > "$table"
k=0; n=$(echo $mixers | wc -w)
for m in $mixers; do
  cfg="configs/wikitext103_$m.json"
  [ -f "$cfg" ] || { echo "$0: no $cfg" >&2; exit 2; }
  sets=(--set "data.path=$data" --set model.vocab_size=0)
  if [ "$profile" = small ]; then
    sets+=(--set model.d_model=128 --set model.n_layers=2 --set model.n_heads=4 --set model.max_seq_len=128
           --set train.seq_len=128 --set train.batch_size=8 --set train.grad_accum=1 --set train.steps=300
           --set train.warmup=30 --set train.eval_every=0 --set train.eval_batches=20 --set train.checkpoint_every=0
           --set gma.n_components=32 --set performer.features=64 --set data.eval_stride=64)
    [ "$m" = hybrid ] && sets+=(--set model.mixer=sdpa,gma)
  fi
  [ -n "$steps" ] && sets+=(--set "train.steps=$steps")
  out="runs/wikitext_${m}-$profile-$stamp"
  k=$((k + 1)); progress $k $n "$cfg" "$out"
  # shellcheck disable=SC2086
  run_train "$out" $BIN/gmatrain --config "$cfg" --out "$out" "${sets[@]}" $device --quiet
  [ -s "$out/test.json" ] || $BIN/gmaeval --checkpoint "$out" --data test --json "$out/test.json" $device > /dev/null
  wrow "$m" "$out"
done
# the runs of an earlier call of the same stamp (other mixers) stay in the table
for out in runs/wikitext_*-"$profile-$stamp"; do
  m=${out#runs/wikitext_}; m=${m%-"$profile-$stamp"}
  [[ " $mixers " == *" $m "* ]] || [ ! -s "$out/test.json" ] || { wrow "$m" "$out"; mixers="$mixers $m"; }
done
cat "$table"
# the table as Markdown and the curves of this invocation's runs (scripts/plot_runs.sh)
stem=${table%.txt}
md_table "$table" "$stem.md" && echo "Markdown: $stem.md"
plot_runs=()
for m in $mixers; do plot_runs+=("$m=runs/wikitext_${m}-$profile-$stamp"); done
plot_all "${stem}_plots" "${plot_runs[@]}"
