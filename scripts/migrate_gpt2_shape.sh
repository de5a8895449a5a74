#!/usr/bin/env bash
# migrate_gpt2_shape.sh: the whole conversion pipeline at GPT-2 small's shape (124M
# parameters: 12 layers, width 768, 12 heads, vocabulary 50,257, 1,024 positions), with its
# time and peak memory. Weights are random (a run of that shape trained one step), so the
# figures say what the pipeline costs, not what a migrated GPT-2 scores: the run is exported
# as a Hugging Face GPT-2 folder (gmadata export gpt2), imported back (gmadata import gpt2)
# and migrated by scripts/migrate.sh --all-at-once (attention transfer, the local window,
# distillation) on the State of the Union split tokenized with GPT-2's tokenizer.
#   scripts/migrate_gpt2_shape.sh --vocab DIR [--steps N] [--transfer-steps N] [--seq N]
#                                 [--threads N] [--out DIR] [--sotu DIR] [--help]
#   --vocab DIR          GPT-2's encoder.json and vocab.bpe (gmadata fetch gpt2 puts them in data/gpt2)
#   --steps N            migrate.sh --total-steps (default 4)
#   --transfer-steps N   migrate.sh --transfer-steps (default 2)
#   --seq N              training and evaluation window (default 128; GPT-2's own is 1024)
#   --threads N          threads (default 2)
#   --out DIR            where everything goes (default runs/gpt2-shape)
#   --sotu DIR           the State of the Union corpus (also SOTU=DIR; until data/sotu8 is made)
# Writes OUT/run (the random GPT-2-shaped run), OUT/hf (its export), OUT/teacher (the
# import), OUT/migrate (migrate.sh's folder) and OUT/cost.json, OUT/cost.md: each stage's wall
# seconds and peak resident memory (GNU time, OUT/STAGE.time), the parameters, the commands.
# A rerun into the same OUT keeps the stages done (their .time files) and runs the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
vocab=""; steps=4; xsteps=2; seq=128; threads=2; out=runs/gpt2-shape
usage="--vocab DIR [--steps N] [--transfer-steps N] [--seq N] [--threads N] [--out DIR] [--sotu DIR] [--help]"
while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h) script_help; exit 0;;
    --vocab|--steps|--transfer-steps|--seq|--threads|--out|--sotu) ;;
    *) unknown_option "$1" "$usage";;
  esac
  need_value "$@"
  case "$1" in
    --vocab) vocab=$(from_start "$2");;
    --steps) steps="$2";;
    --transfer-steps) xsteps="$2";;
    --seq) seq="$2";;
    --threads) threads="$2";;
    --out) out=$(from_start "$2");;
    --sotu) SOTU="$2";;
  esac
  shift 2
done
positive_ints "steps:$steps" "transfer-steps:$xsteps" "seq:$seq" "threads:$threads"
[ -n "$vocab" ] && [ -f "$vocab/encoder.json" ] && [ -f "$vocab/vocab.bpe" ] ||
  { echo "$0: --vocab DIR: want GPT-2's encoder.json and vocab.bpe there (gmadata fetch gpt2)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "$0: /usr/bin/time (GNU time) not found: apt-get install time" >&2; exit 1; }
prepare_sotu8
data=data/sotu8-gpt2
[ -f "$data/meta.json" ] || bin/gmadata prepare data/sotu8 --tokenizer gpt2 --vocab "$vocab" --out "$data" --quiet
mkdir -p "$out"
rows=()
stage() { # NAME CMD...: the command under GNU time; its wall seconds and peak RSS into rows
  # (migrate.sh's exit 3, a failed gate, is its answer for random weights, not a failure); a
  # stage whose OUT/NAME.time holds its figures is done: a rerun keeps it
  local name=$1 t="$out/$1.time" rc=0
  shift
  if [ -s "$t" ] && tail -n 1 "$t" | grep -Eq '^[0-9.]+ [0-9]+$'; then
    echo "$name: done before, kept" >&2
  else
    echo "$name: $*" >&2
    /usr/bin/time -f '%e %M' -o "$t" "$@" > "$out/$name.log" 2>&1 || rc=$?
    if [ $rc -ne 0 ] && ! { [ "$name" = migrate ] && [ $rc = 3 ]; }; then
      rm -f "$t"; echo "$0: $name failed (see $out/$name.log)" >&2; tail -n 5 "$out/$name.log" >&2; exit 1
    fi
  fi
  read -r sec kb < <(tail -n 1 "$t") # GNU time puts "Command exited with non-zero status N" first
  rows+=("{\"stage\": \"$name\", \"seconds\": $sec, \"peak_rss_mb\": $((kb / 1024)), \"command\": \"$(echo "$*" | sed 's/"/\\"/g')\"}")
}
gpt2=(--set model.mixer=sdpa --set model.n_layers=12 --set model.d_model=768 --set model.n_heads=12
  --set model.vocab_size=50257 --set model.max_seq_len=1024 --set model.d_ff=3072 --set model.dropout=0)
stage train bin/gmatrain --config configs/small_sdpa.json --out "$out/run" --quiet --threads "$threads" "${gpt2[@]}" \
  --set data.path="$data" --set train.steps=1 --set train.batch_size=1 --set train.seq_len="$seq" \
  --set train.eval_every=0 --set train.final_eval_batches=2 --set train.warmup=0
stage export bin/gmadata export gpt2 --from "$out/run" --out "$out/hf"
stage import bin/gmadata import gpt2 --from "$out/hf" --out "$out/teacher"
stage migrate scripts/migrate.sh --teacher "$out/teacher" --data "$data" --all-at-once --total-steps "$steps" \
  --transfer-steps "$xsteps" --eval-batches 2 --no-bench --threads "$threads" --out "$out/migrate" \
  --set train.batch_size=1 --set train.seq_len="$seq" --keep-going
params=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["parameters"])' "$out/run/summary.json")
{
  printf '{"parameters": %s, "seq": %d, "steps": %d, "transfer_steps": %d, "threads": %d,\n "stages": [\n' "$params" "$seq" "$steps" "$xsteps" "$threads"
  for ((i = 0; i < ${#rows[@]}; i++)); do printf '  %s%s\n' "${rows[$i]}" "$([ $i -lt $((${#rows[@]} - 1)) ] && echo ,)"; done
  printf ' ]}\n'
} > "$out/cost.json"
{
  echo "GPT-2 small's shape, random weights: $(printf "%'d" "$params") parameters; context $seq tokens, $threads threads."
  echo "migrate.sh's result: $(sed -n 's/.*"result": "\([^"]*\)".*/\1/p' "$out/migrate/migration.json") (random weights: the gates measure nothing here)."
  echo
  echo "| stage | wall s | peak resident MB |"
  echo "|---|---:|---:|"
  python3 -c 'import json, sys
for r in json.load(open(sys.argv[1]))["stages"]:
    print("| %s | %.1f | %d |" % (r["stage"], r["seconds"], r["peak_rss_mb"]))' "$out/cost.json"
} > "$out/cost.md"
cat "$out/cost.md"
