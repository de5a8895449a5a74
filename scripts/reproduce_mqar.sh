#!/usr/bin/env bash
# reproduce_mqar.sh: Zoology's multi-query associative recall sweep (docs/mqar.md) on
# configs/mqar.json: every mixer at every width and learning rate, trained on mixed lengths
# and tested at each test length (gmaeval --data test --seq-len N); the best learning rate
# per (mixer, width) is the point reported, as Zoology reports the best of its sweep.
#   scripts/reproduce_mqar.sh [--profile small|paper] [--mixers LIST] [--widths LIST]
#                             [--lrs LIST] [--steps N] [--threads N] [--device D]
#                             [--out DIR] [--dry-run] [--help]
#   scripts/reproduce_mqar.sh --table RESULTS.json   (the table and plots again from it)
#   --profile P   small (default): a check of the whole pipeline on 2 cores, far too short
#                 for recall to be learnt; paper: Zoology's sizes, for a GPU (below)
#   --mixers LIST among sdpa gma16 gma64 gma256 linear performer mamba hybrid (default all;
#                 gmaK: gma with Kc = K; hybrid: layers sdpa then gma with Kc 64)
#   --widths LIST model.d_model values (paper 64 128 256; small 64)
#   --lrs LIST    train.lr values (paper 1e-4 4.6e-4 2.2e-3 1e-2, Zoology's logspace(-4, -2, 4);
#                 small 2.2e-3 1e-2)
#   --steps N     train.steps of every run (paper 12500; small 150)
#   --threads N   threads of every run (default 2)
#   --out DIR     where the runs and results go (default runs/mqar)
#   --dry-run     print the runs (one gmatrain line each) and exit
# Profiles (data.* keys of docs/mqar.md): paper trains on lengths 64, 128, 256 with 4, 8, 16
# pairs in batches of 256 and tests at 64, 128, 256, 512 with 4, 8, 16, 32 pairs; small
# trains on length 64 with 4 pairs in batches of 16 and tests at 64 and 128 (4 and 8 pairs).
# Writes DIR/<mixer>-d<width>-lr<lr>/ (the run, test_<N>.json), DIR/results.json (every run,
# and the best per point), DIR/results.md (the table of the best: accuracy per test length
# against width and against the mixer's recurrent state in bytes), DIR/mqar_width.dat,
# DIR/mqar_state.dat, DIR/mqar.gp and, with gnuplot, DIR/mqar_width.png, DIR/mqar_state.png.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
profile=small; mixers=""; widths=""; lrs=""; steps=""; threads=2; device=""; out=runs/mqar; dry=0; table=""
all="sdpa gma16 gma64 gma256 linear performer mamba hybrid"
usage="[--profile small|paper] [--mixers LIST] [--widths LIST] [--lrs LIST] [--steps N] [--threads N] [--device D] [--out DIR] [--dry-run] | --table RESULTS.json"
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) need_value "$@"; profile="$2"; shift 2;;
    --mixers) need_value "$@"; mixers="$2"; shift 2;;
    --widths) need_value "$@"; widths="$2"; shift 2;;
    --lrs) need_value "$@"; lrs="$2"; shift 2;;
    --steps) need_value "$@"; steps="$2"; shift 2;;
    --threads) need_value "$@"; threads="$2"; shift 2;;
    --device) need_value "$@"; device="--device $2"; shift 2;;
    --out) need_value "$@"; out="$2"; shift 2;;
    --table) need_value "$@"; table="$2"; shift 2;;
    --dry-run) dry=1; shift;;
    --help|-h) script_help; exit 0;;
    *) echo "usage: $0 $usage" >&2; exit 2;;
  esac
done

# state_bytes MIXER WIDTH: the fp32 recurrent state of one sequence over the two layers of
# configs/mqar.json (one head: d = WIDTH): sdpa its key-value cache at the longest training
# length; gma Kc x d per head; linear d x (d + 1) (sum of k v^T and of k); performer
# m x (d + 1), m = 2 d features; mamba expand d x (d_state + d_conv - 1) (scan and conv)
state_bytes() {
  local m=$1 d=$2 n=$train_max
  case "$m" in
    sdpa) echo $((2 * 4 * 2 * n * d));;
    gma*) echo $((2 * 4 * ${m#gma} * d));;
    linear) echo $((2 * 4 * d * (d + 1)));;
    performer) echo $((2 * 4 * 2 * d * (d + 1)));;
    mamba) echo $((2 * 4 * 2 * d * (16 + 3)));;
    hybrid) echo $((4 * 2 * n * d + 4 * 64 * d));;
  esac
}
mixer_sets() {
  case "$1" in
    sdpa) echo "--set model.mixer=sdpa --set model.attn_dropout=0.1";; # Zoology's MHA dropout
    linear|performer|mamba) echo "--set model.mixer=$1";;
    gma16|gma64|gma256) echo "--set model.mixer=gma --set gma.n_components=${1#gma}";;
    hybrid) echo "--set model.mixer=sdpa,gma --set gma.n_components=64";;
    *) return 1;;
  esac
}

# pick_best: of the run rows on stdin (one JSON object a line, as results.json's "runs"),
# the best learning rate of each (mixer, width): the highest mean accuracy over the test
# lengths (the first on a tie), in the order the points first appear
pick_best() {
  awk '{ m = $0; sub(/.*"mixer": "/, "", m); sub(/".*/, "", m); w = $0; sub(/.*"width": /, "", w); sub(/,.*/, "", w)
    a = $0; sub(/.*"mean_acc": /, "", a); sub(/,.*/, "", a); key = m " " w; sub(/,$/, "")
    if (!(key in b) || a + 0 > b[key] + 0) { b[key] = a; row[key] = $0 } if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
    END { for (i = 1; i <= n; i++) print row[order[i]] }'
}

# write_table RESULTS: DIR/results.md, the .dat files and mqar.gp beside RESULTS (and the
# PNGs with gnuplot) from the best of its "runs" rows (pick_best), one a line as this script
# writes them
write_table() {
  local res="$1" dir
  dir=$(dirname "$res")
  [ -f "$res" ] || { echo "$0: $res: no such file" >&2; exit 2; }
  grep -q '"runs": \[' "$res" || { echo "$0: $res: no \"runs\" list (not written by reproduce_mqar.sh)" >&2; exit 2; }
  awk -v md="$dir/results.md" -v wd="$dir/mqar_width.dat" -v sd="$dir/mqar_state.dat" '
    function num(k,   s) { if (!match($0, "\"" k "\": [-0-9.eE+]+")) return ""; s = substr($0, RSTART, RLENGTH); sub(/.*: /, "", s); return s }
    function str(k,   s) { if (!match($0, "\"" k "\": \"[^\"]*\"")) return ""; s = substr($0, RSTART, RLENGTH); sub(/.*: "/, "", s); sub(/"$/, "", s); return s }
    /"mixer"/ {
      n++; mix[n] = str("mixer"); w[n] = num("width"); lr[n] = num("lr"); sb[n] = num("state_bytes"); mean[n] = num("mean_acc")
      a = $0; sub(/.*"acc": \{/, "", a); sub(/\}.*/, "", a)
      k = split(a, parts, ", ")
      for (i = 1; i <= k; i++) { split(parts[i], kv, ": "); L = kv[1]; gsub(/"/, "", L); acc[n, L] = kv[2]; if (!(L in seen)) { seen[L] = 1; lens[++nl] = L } }
    }
    END {
      if (n == 0) { print "no best rows" > "/dev/stderr"; exit 1 }
      for (i = 1; i < nl; i++) for (j = i + 1; j <= nl; j++) if (lens[j] + 0 < lens[i] + 0) { t = lens[i]; lens[i] = lens[j]; lens[j] = t }
      h = "| mixer | width | best lr | state bytes |"; s = "|---|---:|---:|---:|"
      for (i = 1; i <= nl; i++) { h = h " acc@" lens[i] " |"; s = s "---:|" }
      print h " mean |" > md; print s "---:|" > md
      for (r = 1; r <= n; r++) {
        line = "| " mix[r] " | " w[r] " | " lr[r] " | " sb[r] " |"
        for (i = 1; i <= nl; i++) line = line " " (((r, lens[i]) in acc) ? sprintf("%.3f", acc[r, lens[i]]) : "-") " |"
        print line " " sprintf("%.3f", mean[r]) " |" > md
      }
      # one gnuplot data block per mixer (two blank lines between blocks), rows by width
      nm = 0
      for (r = 1; r <= n; r++) if (!(mix[r] in mseen)) { mseen[mix[r]] = 1; ms[++nm] = mix[r] }
      for (q = 1; q <= nm; q++) {
        printf "# %s\n", ms[q] > wd; printf "# %s\n", ms[q] > sd
        for (r = 1; r <= n; r++) if (mix[r] == ms[q]) { printf "%s %s\n", w[r], mean[r] > wd; printf "%s %s\n", sb[r], mean[r] > sd }
        printf "\n\n" > wd; printf "\n\n" > sd
      }
      print nm
    }' <(sed -n '/"runs": \[/,/^ *\]/p' "$res" | grep '"mixer"' | pick_best) > "$dir/.mixers" || exit 1
  local nm
  nm=$(cat "$dir/.mixers"); rm -f "$dir/.mixers"
  local names
  names=$(sed -n 's/^# //p' "$dir/mqar_width.dat" | paste -sd ' ' -)
  {
    echo "# written by scripts/reproduce_mqar.sh; cd to this directory and run: gnuplot mqar.gp"
    echo "set terminal pngcairo size 800,500; set key outside right; set yrange [0:1.05]; set ylabel 'mean test accuracy'"
    echo "names = \"$names\""
    echo "set output 'mqar_width.png'; set xlabel 'model width'; set logscale x 2"
    echo "plot for [i=0:$((nm - 1))] 'mqar_width.dat' index i with linespoints title word(names, i + 1)"
    echo "set output 'mqar_state.png'; set xlabel 'recurrent state (bytes)'; set logscale x 10"
    echo "plot for [i=0:$((nm - 1))] 'mqar_state.dat' index i with linespoints title word(names, i + 1)"
  } > "$dir/mqar.gp"
  echo "table: $dir/results.md"
  if ! command -v "${GNUPLOT:-gnuplot}" > /dev/null 2>&1; then
    echo "gnuplot not found: plots skipped (apt-get install gnuplot-nox)"
  elif (cd "$dir" && "${GNUPLOT:-gnuplot}" mqar.gp) 2> "$dir/gnuplot.err"; then
    rm -f "$dir/gnuplot.err"; echo "plots: $dir/mqar_width.png $dir/mqar_state.png"
  else
    echo "$0: gnuplot failed on $dir/mqar.gp (see $dir/gnuplot.err)" >&2
  fi
}
if [ -n "$table" ]; then write_table "$(from_start "$table")"; exit 0; fi

case "$profile" in
  paper) : "${widths:=64 128 256}" "${lrs:=1e-4 4.6e-4 2.2e-3 1e-2}" "${steps:=12500}"
    data="--set train.batch_size=256 --set train.seq_len=256 --set model.max_seq_len=512"
    data="$data --set data.mqar_lengths=64,128,256 --set data.mqar_pairs=4,8,16"
    data="$data --set data.mqar_test_lengths=64,128,256,512 --set data.mqar_test_pairs=4,8,16,32"
    tests="64 128 256 512"; train_max=256;;
  small) : "${widths:=64}" "${lrs:=2.2e-3 1e-2}" "${steps:=150}"
    data="--set train.batch_size=16 --set train.seq_len=64 --set model.max_seq_len=128 --set train.eval_every=0"
    data="$data --set data.mqar_lengths=64 --set data.mqar_pairs=4"
    data="$data --set data.mqar_test_lengths=64,128 --set data.mqar_test_pairs=4,8 --set data.mqar_test=256"
    tests="64 128"; train_max=64;;
  *) echo "$0: --profile must be paper or small" >&2; exit 2;;
esac
: "${mixers:=$all}"
positive_ints "steps:$steps" "threads:$threads"
for m in $mixers; do mixer_sets "$m" > /dev/null || { echo "$0: --mixers: unknown mixer '$m' (known: $all)" >&2; exit 2; }; done
for w in $widths; do positive_ints "widths:$w"; done
for lr in $lrs; do
  case "$lr" in ''|*[!0-9.eE+-]*) echo "$0: --lrs: '$lr' is not a number" >&2; exit 2;; esac
done

n=$(( $(echo $mixers | wc -w) * $(echo $widths | wc -w) * $(echo $lrs | wc -w) ))
runline() { # MIXER WIDTH LR RUN: the gmatrain command of one run
  # shellcheck disable=SC2046
  echo "$BIN/gmatrain --config configs/mqar.json --out $4 $(mixer_sets "$1") --set model.d_model=$2 --set train.lr=$3" \
    "--set train.steps=$steps --set threads=$threads $data $device --quiet"
}
BIN=bin; case "$device" in *cuda*) BIN=bin/cuda;; esac
if [ $dry = 1 ]; then
  echo "# $n runs, profile $profile, tests at lengths $tests (gmaeval --data test --seq-len N each)"
  for m in $mixers; do for w in $widths; do for lr in $lrs; do runline "$m" "$w" "$lr" "$out/$m-d$w-lr$lr"; done; done; done
  exit 0
fi
if [ "$BIN" = bin ]; then make -s binaries; fi
mkdir -p "$out"
rows="$out/.rows"; : > "$rows"
k=0
for m in $mixers; do for w in $widths; do for lr in $lrs; do
  run="$out/$m-d$w-lr$lr"; k=$((k + 1))
  progress $k $n "mqar $m width $w lr $lr" "$run"
  t0=$(date +%s)
  # shellcheck disable=SC2046
  $(runline "$m" "$w" "$lr" "$run") > "$run.log" 2>&1 || { cat "$run.log" >&2; exit 1; }
  mv "$run.log" "$run/train.log"
  accs=""; sum=0
  for L in $tests; do
    "$BIN"/gmaeval --checkpoint "$run" --data test --seq-len "$L" --threads "$threads" $device --json "$run/test_$L.json" > /dev/null
    a=$(get "$run/test_$L.json" acc); accs="$accs${accs:+, }\"$L\": $a"; sum=$(awk -v s="$sum" -v a="$a" 'BEGIN { print s + a }')
  done
  mean=$(awk -v s="$sum" -v c="$(echo $tests | wc -w)" 'BEGIN { printf "%.6f", s / c }')
  mins=$(awk -v t=$(( $(date +%s) - t0 )) 'BEGIN { printf "%.2f", t / 60 }')
  printf '    {"mixer": "%s", "width": %d, "lr": %s, "state_bytes": %d, "steps": %d, "minutes": %s, "acc": {%s}, "mean_acc": %s, "run": "%s"}\n' \
    "$m" "$w" "$lr" "$(state_bytes "$m" "$w")" "$steps" "$mins" "$accs" "$mean" "$run" >> "$rows"
done; done; done
best=$(pick_best < "$rows")
{
  echo "{"
  echo "  \"profile\": \"$profile\", \"steps\": $steps, \"test_lengths\": [$(echo $tests | sed 's/ /, /g')],"
  echo "  \"runs\": ["; sed '$!s/$/,/' "$rows"; echo "  ],"
  echo "  \"best\": ["; echo "$best" | sed '$!s/$/,/'; echo "  ]"
  echo "}"
} > "$out/results.json"
rm -f "$rows"
echo "results: $out/results.json"
write_table "$out/results.json"
