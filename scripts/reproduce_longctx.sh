#!/usr/bin/env bash
# reproduce_longctx.sh: long context past the training length (docs/longctx.md): every mixer
# trained at one length on (a) passkey retrieval (configs/passkey.json) and (b) the State of
# the Union language model (configs/small_<mixer>.json on data/sotu8-bpe4k), then evaluated
# at 1x, 2x, 4x, 8x and 16x that length with gmaeval --seq-len N (positions "none" or
# "sinusoidal": nothing in the model is sized by the length).
#   scripts/reproduce_longctx.sh [--profile small|paper] [--mixers LIST] [--tasks LIST]
#                                [--pos none|sinusoidal] [--steps N] [--seeds N] [--threads N]
#                                [--device D] [--sotu DIR] [--out DIR] [--force] [--dry-run] [--write-docs]
#   scripts/reproduce_longctx.sh --table RESULTS.json [--write-docs]  (table and plots again)
#   --profile P   small (default): passkey trained at 64 tokens for 1000 steps and tested at
#                 64..1024, lm trained at 128 for 150 steps and tested at 128..2048, one seed:
#                 minutes per run on 2 cores; paper: both trained at 1024, tested at
#                 1024..16384 (passkey at 1K-16K tokens), 2000 steps, for a GPU
#   --mixers LIST among sdpa gma linear performer mamba (default all)
#   --tasks LIST  among passkey lm (default both)
#   --pos P       model.pos of every run: none (default) or sinusoidal (with model.embed_std
#                 0.5, below the warning's ratio; docs/longctx.md)
#   --steps N     train.steps of every run (both tasks); --seeds N: seeds 1..N of every run (default 1)
#   --threads N   threads of every run (default 2)
#   --sotu DIR    the corpus for the lm task while data/sotu8 is not there (scripts/sotu_split.sh)
#   --out DIR     where the runs and results go (default runs/longctx); a rerun continues
#                 there: runs finished before are kept, rows of other runs stay in the results
#                 (the rule for every script: docs/reproducing.md, "Reruns")
#   --force       train again a run folder made with other options (or not by this script)
#   --dry-run     print the runs (one gmatrain line each) and exit
#   --write-docs  also put the section "## Long context" into docs/results/longctx.md (replacing it)
# Writes DIR/<task>-<mixer>-s<seed>/ (the run, test_<N>.json of gmaeval --data test --seq-len N
# --bucket-size <train length> --json), DIR/results.json (every run's figures by length; the
# rows of DIR's other runs in an earlier results.json kept, a run's own row replaced),
# DIR/results.md (the section: passkey exact/per-digit accuracy and test perplexity against
# length, mean and sample standard deviation over the seeds), DIR/*.dat, DIR/longctx.gp and,
# with gnuplot, DIR/ppl_position.png (perplexity against position bucket at the longest
# length), DIR/passkey_length.png (exact match against length), DIR/passkey_depth.png (exact
# match against the key's depth at twice the training length).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
profile=small; mixers=""; tasks="passkey lm"; pos=none; steps=""; seeds=1; threads=2; device=""
out=runs/longctx; dry=0; table=""; docs=0
all="sdpa gma linear performer mamba"
usage="[--profile small|paper] [--mixers LIST] [--tasks LIST] [--pos none|sinusoidal] [--steps N] [--seeds N] [--threads N] [--device D] [--sotu DIR] [--out DIR] [--force] [--dry-run] [--write-docs] | --table RESULTS.json [--write-docs]"
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) need_value "$@"; profile="$2"; shift 2;;
    --mixers) need_value "$@"; mixers="$2"; shift 2;;
    --tasks) need_value "$@"; tasks="$2"; shift 2;;
    --pos) need_value "$@"; pos="$2"; shift 2;;
    --steps) need_value "$@"; steps="$2"; shift 2;;
    --seeds) need_value "$@"; seeds="$2"; shift 2;;
    --threads) need_value "$@"; threads="$2"; shift 2;;
    --device) need_value "$@"; device="--device $2"; shift 2;;
    --sotu) need_value "$@"; SOTU="$2"; shift 2;;
    --out) need_value "$@"; out="$2"; shift 2;;
    --table) need_value "$@"; table="$2"; shift 2;;
    --dry-run) dry=1; shift;;
    --force) force=1; shift;;
    --write-docs) docs=1; shift;;
    --help|-h) script_help; exit 0;;
    *) unknown_option "$1" "$usage --help";;
  esac
done

# table RESULTS [DOCS]: DIR/results.md, the .dat files, longctx.gp (and the PNGs with
# gnuplot) beside RESULTS; with DOCS 1 the section replaces "## Long context" in
# docs/results/longctx.md (appended when there is none; the page made when missing)
write_table() {
  local res="$1" dir
  dir=$(dirname "$res")
  [ -f "$res" ] || { echo "$0: $res: no such file" >&2; exit 2; }
  command -v python3 > /dev/null || { echo "$0: python3 not found (apt-get install python3)" >&2; exit 1; }
  python3 -B scripts/longctx_table.py "$res" "$dir" "${2:-0}" || exit 1
  local pngs gnuplot="${GNUPLOT:-gnuplot}"
  pngs=$(cat "$dir/pngs"); rm -f "$dir/pngs"
  if ! command -v "$gnuplot" > /dev/null 2>&1; then
    echo "gnuplot not found: plots skipped (apt-get install gnuplot-nox)"
  elif (cd "$dir" && "$gnuplot" longctx.gp) 2> "$dir/gnuplot.err"; then
    rm -f "$dir/gnuplot.err"; echo "plots: $(for p in $pngs; do printf '%s ' "$dir/$p"; done)"
  else
    echo "$0: gnuplot failed on $dir/longctx.gp (see $dir/gnuplot.err)" >&2
  fi
  [ "${2:-0}" = 1 ] || return 0
  # the section into docs/results/longctx.md, its figures into docs/results/longctx/
  local page=docs/results/longctx.md
  mkdir -p docs/results/longctx
  [ -f "$page" ] || printf '# Long context\n' > "$page"
  local figs="" p
  for p in $pngs; do
    [ -f "$dir/$p" ] || continue
    cp "$dir/$p" docs/results/longctx/
    case "$p" in
      ppl_position.png) cap="test perplexity against position in the longest window, per mixer";;
      passkey_length.png) cap="passkey exact match against evaluation length, per mixer";;
      *) cap="passkey exact match against the depth of the key at twice the training length, per mixer";;
    esac
    figs="$figs![$cap](longctx/$p)"$'\n\n'
  done
  { cat "$dir/results.md"; echo; [ -n "$figs" ] && printf '%s' "$figs"; [ -f "$dir/notes.md" ] && cat "$dir/notes.md"; } > "$dir/section.md"
  awk -v sec="$dir/section.md" 'function put() { while ((getline l < sec) > 0) print l; print ""; done = 1 }
    /^## Long context$/ { put(); skip = 1; next }
    skip && /^## / { skip = 0 }
    !skip && /^## Notes on these runs$/ && !done { put() }
    !skip { print }
    END { if (!done) { print ""; put() } }' "$page" > "$page.tmp.$$"
  mv "$page.tmp.$$" "$page"
  echo "docs: $page (## Long context)"
}
if [ -n "$table" ]; then write_table "$(from_start "$table")" "$docs"; exit 0; fi

case "$profile" in
  paper) pk_steps=${steps:-2000}; lm_steps=${steps:-2000}; T=1024; tests="1024 2048 4096 8192 16384"; pktest=500
    pkT=$T; pktests=$tests;;
  # the passkey at 64 tokens: at 128 one run of 1000 steps takes about 5 minutes here, and
  # at 400 steps (4 digits, 128 tokens) no mixer learnt it (docs/longctx.md, the trials)
  small) pk_steps=${steps:-1000}; lm_steps=${steps:-150}; T=128; tests="128 256 512 1024 2048"; pktest=100
    pkT=64; pktests="64 128 256 512 1024";;
  *) echo "$0: --profile must be paper or small" >&2; exit 2;;
esac
: "${mixers:=$all}"
positive_ints "steps:$pk_steps" "steps:$lm_steps" "seeds:$seeds" "threads:$threads"
for m in $mixers; do case " $all " in *" $m "*) ;; *) echo "$0: --mixers: unknown mixer '$m' (known: $all)" >&2; exit 2;; esac; done
for t in $tasks; do case "$t" in passkey|lm) ;; *) echo "$0: --tasks: unknown task '$t' (known: passkey lm)" >&2; exit 2;; esac; done
case "$pos" in none) posset="--set model.pos=none";; sinusoidal) posset="--set model.pos=sinusoidal --set model.embed_std=0.5";;
  *) echo "$0: --pos must be none or sinusoidal" >&2; exit 2;; esac
BIN=bin; case "$device" in *cuda*) BIN=bin/cuda;; esac
common="--set train.eval_every=0 --set train.checkpoint_every=0 --set threads=$threads $posset $device --quiet"
runline() { # TASK MIXER SEED RUN: the gmatrain command of one run
  case "$1" in
    passkey) echo "$BIN/gmatrain --config configs/passkey.json --out $4 --set model.mixer=$2 --set seed=$3 --set data.passkey_test=$pktest --set train.steps=$pk_steps --set train.seq_len=$pkT --set model.max_seq_len=$pkT $common";;
    lm) echo "$BIN/gmatrain --config configs/small_$2.json --out $4 --set data.path=data/sotu8-bpe4k --set seed=$3 --set train.steps=$lm_steps --set train.seq_len=$T --set model.max_seq_len=$T $common";;
  esac
}
n=$(( $(echo $tasks | wc -w) * $(echo $mixers | wc -w) * seeds ))
if [ $dry = 1 ]; then
  echo "# $n runs, profile $profile, passkey trained at $pkT and tested at lengths $pktests, lm trained at $T and tested at lengths $tests (gmaeval --data test --seq-len N --bucket-size <train length> each)"
  for t in $tasks; do for m in $mixers; do for ((s = 1; s <= seeds; s++)); do runline "$t" "$m" "$s" "$out/$t-$m-s$s"; done; done; done
  exit 0
fi
# every run folder checked before anything is trained (run_state: exit 2 naming it)
for t in $tasks; do for m in $mixers; do for ((s = 1; s <= seeds; s++)); do
  # shellcheck disable=SC2046
  run_state "$out/$t-$m-s$s" $(runline "$t" "$m" "$s" "$out/$t-$m-s$s") > /dev/null || exit 2
done; done; done
case " $tasks " in *" lm "*) prepare_sotu8;; *) if [ "$BIN" = bin ]; then make -s binaries; fi;; esac
mkdir -p "$out"
rows="$out/.rows"; : > "$rows"
k=0; t_start=$(date +%s)
for t in $tasks; do for m in $mixers; do for ((s = 1; s <= seeds; s++)); do
  run="$out/$t-$m-s$s"; k=$((k + 1))
  progress $k $n "$t $m seed $s" "$run"
  t0=$(date +%s)
  # shellcheck disable=SC2046
  if [ "$(run_state "$run" $(runline "$t" "$m" "$s" "$run"))" = done ]; then echo "$run: finished before, kept" >&2
  else # shellcheck disable=SC2046
    run_train "$run" $(runline "$t" "$m" "$s" "$run") > "$run.log" 2>&1 || { cat "$run.log" >&2; exit 1; }
    cat "$run.log" >> "$run/train.log"; rm -f "$run.log"
  fi
  if [ "$t" = passkey ]; then tl=$pkT; lens=$pktests; else tl=$T; lens=$tests; fi
  for L in $lens; do # an evaluation already made is kept
    [ -s "$run/test_$L.json" ] || "$BIN"/gmaeval --checkpoint "$run" --data test --seq-len "$L" --bucket-size "$tl" --threads "$threads" $device \
      --json "$run/test_$L.json" > "$run/test_$L.txt"
  done
  [ -s "$run/minutes" ] || awk -v t=$(( $(date +%s) - t0 )) 'BEGIN { printf "%.2f\n", t / 60 }' > "$run/minutes"
  mins=$(cat "$run/minutes")
  printf '%s %s %s %s %s\n' "$t" "$m" "$s" "$run" "$mins" >> "$rows"
done; done; done
machine="$(nproc)-core $(lscpu 2> /dev/null | sed -n 's/^Model name: *//p' | head -1), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
cmd="scripts/reproduce_longctx.sh --profile $profile --mixers \"$mixers\" --tasks \"$tasks\" --pos $pos${steps:+ --steps $steps} --seeds $seeds --threads $threads"
python3 -B scripts/longctx_collect.py "$rows" "$out/results.json" "$tests" "$T" "$pktests" "$pkT" "$profile" "$pos" "$pk_steps $lm_steps" "$cmd" "$machine" "$(( ($(date +%s) - t_start + 30) / 60 ))"
rm -f "$rows"
write_table "$out/results.json" "$docs"
