#!/usr/bin/env bash
# reproduce_cross.sh: the cross-attention measurements of docs/results/cross.md.
#   scripts/reproduce_cross.sh run [--out DIR] [--kinds LIST] [--steps N] [--threads N] [--seed S] [--configs PREFIX] [--set k=v]... [--force]
#       trains configs/xmqar_{gma,sdpa,none}.json (cross.mixer gma, sdpa, and a plain decoder
#       over the whole window; nice -n 10, all at once) on the cross-sequence MQAR task
#       (data.source xmqar, docs/cross.md), each --set applied to all, into DIR/KIND (DIR
#       default runs/cross), then `collect`. --kinds (default "gma sdpa none") among gma,
#       sdpa, none, gma_causal and sdpa_causal (cross.enc_causal true: a causal encoder),
#       gma_sdpaenc (gma cross layers reading a causal sdpa encoder: cross.enc_mixer sdpa)
#       and sdpa_gmaenc (sdpa cross layers, a causal gma encoder). --configs PREFIX (default
#       configs/xmqar_): the configs PREFIX{gma,sdpa,none}.json, e.g. configs/xmqar_long_ for
#       the models read at longer contexts (causal encoder, query_pos own; docs/cross.md).
#       A second call into DIR keeps the runs finished there and resumes those stopped part
#       way; a run of other options is refused unless --force (docs/reproducing.md, "Reruns").
#   scripts/reproduce_cross.sh bench [--out DIR] [--seq 1K,...,64K] [gmabench options]
#       bin/gmabench cross --threads 1 --repeat 1 --max-seconds 400 --json DIR/bench.json.
#   scripts/reproduce_cross.sh lengths DIR [--ctx LIST] [--batch B] [--batches LIST] [--threads N] [--max-seconds S]
#       each trained DIR/KIND (trained with cross.query_pos own) read at longer contexts:
#       bin/gmaeval --data test --ctx-len M --batch B --batches N --json DIR/KIND/ctx_M.json for
#       M in LIST (default 256,1K,4K,16K,64K), N the matching entry of --batches (default
#       32,32,8,2,1: fewer windows where a window costs more; one entry: every M); a kind's next
#       M is skipped once its last evaluation's seconds x 4.5 x (windows next / windows last)
#       passes --max-seconds (default 1800; the line and the table's cell say "skipped (time)"). Each line
#       printed (and kept in DIR/lengths.txt) starts "KIND ctx M:". A ctx_M.json newer than the checkpoint is kept (a
#       second call resumes). Then `collect` as run does.
#   scripts/reproduce_cross.sh collect DIR [--command TEXT]...
#       DIR/results.json from DIR/{gma,sdpa,none}/metrics.jsonl and config.json and
#       DIR/bench.json (when there): per run the validation accuracy by step and the test
#       loss and accuracy of the final evaluation (a run stopped before its end: those of
#       DIR/KIND/test_eval.json, bin/gmaeval --data test --json of its checkpoint, and the
#       step it stopped at); the layer's time and memory per M; the evaluations at other
#       context lengths (DIR/KIND/ctx_M.json of `lengths`).
#   scripts/reproduce_cross.sh write RESULTS.json... [--out FILE] [--note TEXT]...
#       the section "## Cross-attention" of docs/results/cross.md (or --out) from one or more
#       results.json (their runs one table each, the bench of the last that has one), in
#       place of that section when the page has it (up to the next "## " heading), else
#       before "## Notes on these runs", else at the end; the rest of the page is kept.
#       Each --note TEXT a paragraph after the tables.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in --help|-h|"") sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0;; esac
cmd=$1
shift
out=runs/cross
# an option's value: exit 2 with one line when it is missing
need() { [ "$#" -ge 2 ] || { echo "scripts/reproduce_cross.sh: $1 needs a value (see --help)" >&2; exit 2; }; }
. scripts/lib_reproduce.sh
if [ "$cmd" = run ]; then
  steps="" threads=1 seed="" sets=() kinds="gma sdpa none" prefix=configs/xmqar_
  while [ $# -gt 0 ]; do
    case "$1" in
      --out) need "$@"; out=$2; shift 2;;
      --kinds) need "$@"; kinds=$2; shift 2;;
      --steps) need "$@"; steps=$2; shift 2;;
      --threads) need "$@"; threads=$2; shift 2;;
      --seed) need "$@"; seed=$2; shift 2;;
      --configs) need "$@"; prefix=$2; shift 2;;
      --set) need "$@"; sets+=(--set "$2"); shift 2;;
      --force) force=1; shift;;
      *) unknown_option "$1" "--out --kinds --steps --threads --seed --configs --set --force";;
    esac
  done
  [ -n "$steps" ] && sets+=(--set "train.steps=$steps")
  [ -n "$seed" ] && sets+=(--set "seed=$seed")
  for k in $kinds; do
    case "$k" in gma|sdpa|none|gma_causal|sdpa_causal|gma_sdpaenc|sdpa_gmaenc) ;;
      *) echo "$0: run: --kinds: unknown kind '$k' (gma sdpa none gma_causal sdpa_causal gma_sdpaenc sdpa_gmaenc)" >&2; exit 2;; esac
    [ -f "${prefix}${k%%_*}.json" ] || { echo "$0: run: kind $k: no config ${prefix}${k%%_*}.json (--configs)" >&2; exit 2; }
  done
  runcmd() { # KIND: the gmatrain command of its run
    local extra=()
    case "$1" in
      *_causal) extra=(--set cross.enc_causal=true);;
      gma_sdpaenc) extra=(--set cross.enc_causal=true --set cross.enc_mixer=sdpa);;
      sdpa_gmaenc) extra=(--set cross.enc_causal=true --set cross.enc_mixer=gma);;
    esac
    echo bin/gmatrain --config "${prefix}${1%%_*}.json" "${sets[@]}" "${extra[@]}" --out "$out/$1" --threads "$threads" --quiet
  }
  # shellcheck disable=SC2046
  for k in $kinds; do run_state "$out/$k" $(runcmd "$k") > /dev/null || exit 2; done # every run there checked first
  mkdir -p "$out"
  for k in $kinds; do
    # shellcheck disable=SC2046
    if [ "$(run_state "$out/$k" $(runcmd "$k"))" = done ]; then echo "$out/$k: finished before, kept"; continue; fi
    # shellcheck disable=SC2046
    run_train "$out/$k" nice -n 10 $(runcmd "$k") >> "$out/$k.log" 2>&1 &
  done
  wait
  cf=""
  [ "$prefix" = configs/xmqar_ ] || cf=" --configs $prefix"
  exec "$0" collect "$out" --command "scripts/reproduce_cross.sh run --out $out --kinds '$kinds'$cf --threads $threads ${sets[*]}"
fi
if [ "$cmd" = lengths ]; then
  [ $# -ge 1 ] || { echo "$0: lengths: DIR missing (see --help)" >&2; exit 2; }
  out=$1
  shift
  ctx=256,1K,4K,16K,64K batch=8 batches=32,32,8,2,1 threads=1 maxs=1800
  while [ $# -gt 0 ]; do
    case "$1" in
      --ctx) need "$@"; ctx=$2; shift 2;;
      --batch) need "$@"; batch=$2; shift 2;;
      --batches) need "$@"; batches=$2; shift 2;;
      --threads) need "$@"; threads=$2; shift 2;;
      --max-seconds) need "$@"; maxs=$2; shift 2;;
      *) unknown_option "$1" "--ctx --batch --batches --threads --max-seconds";;
    esac
  done
  IFS=, read -r -a ms <<< "$ctx"
  IFS=, read -r -a ns <<< "$batches"
  [ "${#ns[@]}" -eq 1 ] || [ "${#ns[@]}" -eq "${#ms[@]}" ] ||
    { echo "$0: lengths: --batches has ${#ns[@]} entries for the ${#ms[@]} of --ctx" >&2; exit 2; }
  for i in "${!ms[@]}"; do # 1K = 1024
    m=${ms[$i]}
    case "$m" in *K) m=$(( ${m%K} * 1024 ));; esac
    [[ "$m" =~ ^[0-9]+$ ]] || { echo "$0: lengths: --ctx: '${ms[$i]}' is not a length" >&2; exit 2; }
    ms[$i]=$m
  done
  found=0
  for k in gma sdpa gma_causal sdpa_causal gma_sdpaenc sdpa_gmaenc; do
    [ -e "$out/$k/latest" ] || continue
    found=1
    last_s="" last_w=""
    for i in "${!ms[@]}"; do
      m=${ms[$i]} n=${ns[$i]:-${ns[0]}}
      if [ -n "$last_s" ] && python3 -B scripts/cross_lengths.py over "$last_s" "$n" "$last_w" "$maxs"; then
        printf '{"skipped": "time: %s s at the last length x 4.5 passes --max-seconds %s", "ctx_len": %d}\n' "$last_s" "$maxs" "$m" \
          > "$out/$k/ctx_$m.json"
        echo "$k ctx $m: skipped (time: $last_s s at the last length x 4.5 passes --max-seconds $maxs)" | tee -a "$out/lengths.txt"
        continue
      fi
      j=$out/$k/ctx_$m.json
      if [ -f "$j" ] && [ "$j" -nt "$out/$k/latest/model.safetensors" ] && ! grep -q '"skipped"' "$j"; then
        echo "$k ctx $m: $j kept (newer than the checkpoint; delete it to measure again)" # a second call resumes
        last_s=$(python3 -B scripts/cross_lengths.py seconds "$j") last_w=$n
        continue
      fi
      nice -n 10 bin/gmaeval --checkpoint "$out/$k" --data test --ctx-len "$m" --batch "$batch" --batches "$n" \
        --threads "$threads" --json "$out/$k/ctx_$m.json" | sed "s/^/$k ctx $m: /" | tee -a "$out/lengths.txt"
      last_s=$(python3 -B scripts/cross_lengths.py seconds "$out/$k/ctx_$m.json") last_w=$n
    done
  done
  [ "$found" = 1 ] || { echo "$0: lengths: no trained run under $out (DIR/KIND/latest)" >&2; exit 1; }
  exec "$0" collect "$out" --command "scripts/reproduce_cross.sh lengths $out --ctx $ctx --batch $batch --batches $batches --threads $threads --max-seconds $maxs"
fi
if [ "$cmd" = bench ]; then
  args=()
  while [ $# -gt 0 ]; do
    case "$1" in --out) need "$@"; out=$2; shift 2;; *) args+=("$1"); shift;; esac
  done
  mkdir -p "$out"
  nice -n 10 bin/gmabench cross --seq 1K,2K,4K,8K,16K,32K,64K --threads 1 --repeat 1 --max-seconds 400 "${args[@]}" \
    --json "$out/bench.json" | tee "$out/bench.txt"
  exit 0
fi
command -v python3 > /dev/null || { echo "$0: python3 not found" >&2; exit 1; }
case "$cmd" in
  collect) exec python3 -B scripts/cross_collect.py "$@";;
  write) exec python3 -B scripts/cross_section.py "$@";;
  *) echo "scripts/reproduce_cross.sh: unknown command $cmd (run, bench, lengths, collect, write)" >&2; exit 1;;
esac
