#!/usr/bin/env bash
# reproduce_mqar.sh: Zoology's multi-query associative recall sweep (docs/mqar.md) on
# configs/mqar.json: every mixer at every width and learning rate, trained on mixed lengths
# and tested at each test length (gmaeval --data test --seq-len N); the best learning rate
# per (mixer, width) is the point reported, as Zoology reports the best of its sweep.
#   scripts/reproduce_mqar.sh [--profile small|paper] [--mixers LIST] [--widths LIST]
#                             [--lrs LIST] [--steps N] [--threads N] [--jobs N] [--device D]
#                             [--set KEY=VALUE]... [--out DIR] [--dry-run] [--collect]
#   scripts/reproduce_mqar.sh --table RESULTS.json   (the table and plots again from it)
#   --profile P   small (default): a sweep sized for 2 CPU cores (below); paper: Zoology's
#                 sizes, for a GPU
#   --mixers LIST among sdpa gma16 gma64 gma256 linear performer mamba hybrid (default all;
#                 gmaK: gma with Kc = K; hybrid: layers sdpa then gma with Kc 64)
#   --widths LIST model.d_model values, run in this order (paper 64 128 256; small 64 32)
#   --lrs LIST    train.lr values (paper 1e-4 4.6e-4 2.2e-3 1e-2, Zoology's logspace(-4, -2, 4);
#                 small 2.2e-3 1e-2)
#   --steps N     train.steps of every run (paper 22500: 32 epochs of Zoology's 180,000
#                 training examples in batches of 256; small 1500 of 64)
#   --threads N   threads of every run (paper 2; small 1)
#   --jobs N      runs at once (paper 1; small 2: two runs of one thread use 2 cores better
#                 than one of two threads at these sizes)
#   --set K=V     a config key for every run, after the profile's (repeatable; e.g.
#                 data.mqar_test=64 for fewer test examples)
#   --out DIR     where the runs and results go (default runs/mqar)
#   --dry-run     print the runs (one gmatrain line each) and exit
#   --collect     train nothing: DIR/results.json and the table from the runs of the grid
#                 already done in DIR (the points not run are listed as such)
# Profiles (data.* keys of docs/mqar.md): paper: vocabulary 8192, Zoology's mixed lengths:
# trains on (length, pairs) (64, 4), (128, 8), (256, 16), (256, 32), (256, 64) in batches of
# 256 and tests on (64, 4), (64, 8), (64, 16), (128, 32), (256, 64), (512, 128), reported per
# length (64 the mean of its three); small: vocabulary 256 (8192 costs about 8 times as much
# a step here: the output head over every position), trains on length 64 with 4
# pairs in batches of 64 for 1500 steps (96,000 examples: the budget at which sdpa learns the
# lookup at width 64) and tests at 64 and 128 (4 and 8 pairs, 1000 examples each), widths 64
# and 32: 32 runs, two at a time (width 128 and up are the paper profile's: docs/mqar.md,
# "Profiles", gives the CPU time of a step of each run).
# The runs go width by width in the order given and, within a width, learning rate by
# learning rate (every mixer at the first lr before any at the second), so a sweep stopped
# part way has every mixer at the (width, lr) pairs it reached.
# A run already done in DIR (its row.json there) is not trained again; DIR/results.json is
# written after every run, so a sweep stopped part way still has its table.
# Writes DIR/<mixer>-d<width>-lr<lr>/ (the run, test_<N>.json, row.json), DIR/results.json
# (the grid, every run done, and the best per point), DIR/results.md (the table of the best:
# accuracy per test length against width and against the mixer's recurrent state in bytes),
# DIR/mqar_width.dat, DIR/mqar_state.dat, DIR/mqar.gp and, with gnuplot, DIR/mqar_width.png,
# DIR/mqar_state.png. State bytes (fp32, one sequence, both layers; docs/mqar.md): sdpa its
# key-value cache 2 N d a layer at the longest test length N; gma Kc (d + 1) a head (the
# sums S and z); linear d (d + 1); performer 2d (d + 1); mamba 2d (16 + 3); hybrid one
# sdpa layer and one gma Kc 64 layer.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
profile=small; mixers=""; widths=""; lrs=""; steps=""; threads=""; jobs=""; device=""; out=runs/mqar; dry=0; collect=0; table=""; user_sets=""
all="sdpa gma16 gma64 gma256 linear performer mamba hybrid"
usage="[--profile small|paper] [--mixers LIST] [--widths LIST] [--lrs LIST] [--steps N] [--threads N] [--jobs N] [--device D] [--set K=V]... [--out DIR] [--dry-run] [--collect] | --table RESULTS.json"
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) need_value "$@"; profile="$2"; shift 2;;
    --mixers) need_value "$@"; mixers="$2"; shift 2;;
    --widths) need_value "$@"; widths="$2"; shift 2;;
    --lrs) need_value "$@"; lrs="$2"; shift 2;;
    --steps) need_value "$@"; steps="$2"; shift 2;;
    --threads) need_value "$@"; threads="$2"; shift 2;;
    --jobs) need_value "$@"; jobs="$2"; shift 2;;
    --device) need_value "$@"; device="--device $2"; shift 2;;
    --out) need_value "$@"; out="$2"; shift 2;;
    --set) need_value "$@"
      case "$2" in *=*) ;; *) echo "$0: --set: '$2' is not KEY=VALUE" >&2; exit 2;; esac
      case "$2" in *[[:space:]]*) echo "$0: --set: '$2' holds a space" >&2; exit 2;; esac
      user_sets="$user_sets --set $2"; shift 2;;
    --table) need_value "$@"; table="$2"; shift 2;;
    --dry-run) dry=1; shift;;
    --collect) collect=1; shift;;
    --help|-h) script_help; exit 0;;
    *) echo "usage: $0 $usage" >&2; exit 2;;
  esac
done

# state_bytes MIXER WIDTH: the fp32 recurrent state of one sequence over the two layers of
# configs/mqar.json (one head: d = WIDTH): sdpa its key-value cache 2 N d a layer at the
# longest test length N; gma Kc (d + 1) a head (the core's S [Kc,d] and z [Kc]); linear
# d (d + 1); performer m (d + 1), m = 2 d features; mamba expand d (d_state + d_conv - 1)
# (scan and convolution); hybrid one sdpa layer and one gma Kc 64 layer
state_bytes() {
  local m=$1 d=$2 n=$test_max
  case "$m" in
    sdpa) echo $((2 * 4 * 2 * n * d));;
    gma*) echo $((2 * 4 * ${m#gma} * (d + 1)));;
    linear) echo $((2 * 4 * d * (d + 1)));;
    performer) echo $((2 * 4 * 2 * d * (d + 1)));;
    mamba) echo $((2 * 4 * 2 * d * (16 + 3)));;
    hybrid) echo $((4 * 2 * n * d + 4 * 64 * (d + 1)));;
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
  paper) : "${widths:=64 128 256}" "${lrs:=1e-4 4.6e-4 2.2e-3 1e-2}" "${steps:=22500}" "${threads:=2}" "${jobs:=1}"
    data="--set train.batch_size=256 --set train.seq_len=256 --set model.max_seq_len=512"
    data="$data --set data.mqar_lengths=64,128,256,256,256 --set data.mqar_pairs=4,8,16,32,64"
    data="$data --set data.mqar_test_lengths=64,64,64,128,256,512 --set data.mqar_test_pairs=4,8,16,32,64,128"
    tests="64 128 256 512"; test_max=512; vocab=8192;;
  small) : "${widths:=64 32}" "${lrs:=2.2e-3 1e-2}" "${steps:=1500}" "${threads:=1}" "${jobs:=2}"
    data="--set data.mqar_vocab=256 --set train.batch_size=64 --set train.seq_len=64 --set model.max_seq_len=128"
    data="$data --set train.eval_every=500 --set data.mqar_valid=128 --set data.mqar_test=1000"
    data="$data --set data.mqar_lengths=64 --set data.mqar_pairs=4"
    data="$data --set data.mqar_test_lengths=64,128 --set data.mqar_test_pairs=4,8"
    tests="64 128"; test_max=128; vocab=256;;
  *) echo "$0: --profile must be paper or small" >&2; exit 2;;
esac
: "${mixers:=$all}"
positive_ints "steps:$steps" "threads:$threads" "jobs:$jobs"
for m in $mixers; do mixer_sets "$m" > /dev/null || { echo "$0: --mixers: unknown mixer '$m' (known: $all)" >&2; exit 2; }; done
for w in $widths; do positive_ints "widths:$w"; done
for lr in $lrs; do
  case "$lr" in ''|*[!0-9.eE+-]*) echo "$0: --lrs: '$lr' is not a number" >&2; exit 2;; esac
done
case "$user_sets" in *data.mqar_vocab=*) vocab=$(echo "$user_sets" | sed 's/.*data.mqar_vocab=\([0-9]*\).*/\1/');; esac

n=$(( $(echo $mixers | wc -w) * $(echo $widths | wc -w) * $(echo $lrs | wc -w) ))
runline() { # MIXER WIDTH LR RUN: the gmatrain command of one run
  # shellcheck disable=SC2046
  echo "$BIN/gmatrain --config configs/mqar.json --out $4 $(mixer_sets "$1") --set model.d_model=$2 --set train.lr=$3" \
    "--set train.steps=$steps --set threads=$threads $data$user_sets $device --quiet"
}
BIN=bin; case "$device" in *cuda*) BIN=bin/cuda;; esac
if [ $dry = 1 ]; then
  echo "# $n runs, profile $profile, vocabulary $vocab, tests at lengths $tests (gmaeval --data test --seq-len N each)"
  for w in $widths; do for lr in $lrs; do for m in $mixers; do runline "$m" "$w" "$lr" "$out/$m-d$w-lr$lr"; done; done; done
  exit 0
fi
if [ $collect = 1 ]; then
  [ -d "$out" ] || { echo "$0: --collect: $out: no such directory" >&2; exit 2; }
elif [ "$BIN" = bin ]; then make -s binaries; fi
mkdir -p "$out"
words() { echo "$1" | awk '{ for (i = 1; i <= NF; i++) printf "%s\"%s\"", (i > 1 ? ", " : ""), $i }'; }
command_line="scripts/reproduce_mqar.sh --profile $profile --mixers '$mixers' --widths '$widths' --lrs '$lrs' --steps $steps --threads $threads --jobs $jobs${user_sets:+$user_sets}${device:+ $device}"
# write_results: DIR/results.json from the row.json of every run of the grid done so far
write_results() {
  local rows="$out/.rows.$BASHPID" m w lr
  : > "$rows"
  for m in $mixers; do for w in $widths; do for lr in $lrs; do
    [ -f "$out/$m-d$w-lr$lr/row.json" ] && cat "$out/$m-d$w-lr$lr/row.json" >> "$rows"
  done; done; done
  {
    echo "{"
    echo "  \"profile\": \"$profile\", \"steps\": $steps, \"vocab\": $vocab, \"test_lengths\": [$(echo $tests | sed 's/ /, /g')],"
    echo "  \"command\": \"$command_line\", \"date\": \"$(date -u '+%Y-%m-%d %H:%M') UTC\", \"machine\": \"$(nproc) cores, $(uname -m)\","
    echo "  \"grid\": {\"mixers\": [$(words "$mixers")], \"widths\": [$(echo $widths | sed 's/ /, /g')], \"lrs\": [$(echo $lrs | sed 's/ /, /g')]},"
    echo "  \"runs\": ["; sed '$!s/$/,/' "$rows"; echo "  ],"
    echo "  \"best\": ["; pick_best < "$rows" | sed '$!s/$/,/'; echo "  ]"
    echo "}"
  } > "$out/results.json.tmp.$BASHPID"
  mv "$out/results.json.tmp.$BASHPID" "$out/results.json"
  rm -f "$rows"
}
# one_run K MIXER WIDTH LR: train, test at every test length, DIR/<run>/row.json, results.json
one_run() {
  local k=$1 m=$2 w=$3 lr=$4 run="$out/$2-d$3-lr$4" t0 accs="" sum=0 a L mean mins
  progress "$k" "$n" "mqar $m width $w lr $lr" "$run"
  t0=$(date +%s)
  rm -rf "$run"
  # shellcheck disable=SC2046
  $(runline "$m" "$w" "$lr" "$run") > "$run.log" 2>&1 || { cat "$run.log" >&2; return 1; }
  mv "$run.log" "$run/train.log"
  for L in $tests; do
    "$BIN"/gmaeval --checkpoint "$run" --data test --seq-len "$L" --threads "$threads" $device --json "$run/test_$L.json" > /dev/null || return 1
    a=$(get "$run/test_$L.json" acc); accs="$accs${accs:+, }\"$L\": $a"; sum=$(awk -v s="$sum" -v a="$a" 'BEGIN { print s + a }')
  done
  mean=$(awk -v s="$sum" -v c="$(echo $tests | wc -w)" 'BEGIN { printf "%.6f", s / c }')
  mins=$(awk -v t=$(( $(date +%s) - t0 )) 'BEGIN { printf "%.2f", t / 60 }')
  printf '    {"mixer": "%s", "width": %d, "lr": %s, "state_bytes": %d, "steps": %d, "minutes": %s, "acc": {%s}, "mean_acc": %s, "run": "%s"}\n' \
    "$m" "$w" "$lr" "$(state_bytes "$m" "$w")" "$steps" "$mins" "$accs" "$mean" "$run" > "$run/row.json"
  write_results
}
k=0; failed=0
[ $collect = 1 ] || for w in $widths; do for lr in $lrs; do for m in $mixers; do
  run="$out/$m-d$w-lr$lr"; k=$((k + 1))
  if [ -f "$run/row.json" ]; then echo "[$k/$n] mqar $m width $w lr $lr: done before ($run/row.json)" >&2; continue; fi
  if [ "$jobs" = 1 ]; then one_run $k "$m" "$w" "$lr" || exit 1; continue; fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || failed=1; done
  [ $failed = 0 ] || break
  one_run $k "$m" "$w" "$lr" &
done; done; done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
[ $failed = 0 ] || { echo "$0: a run failed (its log above)" >&2; exit 1; }
write_results
echo "results: $out/results.json"
write_table "$out/results.json"
