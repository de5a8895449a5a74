# lib_reproduce.sh: what the reproduce_*.sh scripts share; sourced (from the repository
# root) after their defaults are set. The other scripts with options source it too, for
# need_value and script_help (lra_standin.sh and plot_runs.sh by their own path).

# from_start PATH: PATH, a relative one taken from the directory the script was started in
# (the scripts cd to the repository root before they source this file)
start_dir=${OLDPWD:-$PWD}
from_start() { case "$1" in /*|'') echo "$1";; *) echo "$start_dir/$1";; esac; }

# script_help: the script's usage, its header comment (every line after the first up to
# the first line that is not a comment), on stdout.
script_help() { sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; }

# progress K N WHAT OUT: one line on stderr as run K of N starts (the runs themselves are
# --quiet): what is trained and where its metrics go.
progress() { echo "[$1/$2] $3 -> $4 (metrics: $4/metrics.jsonl)" >&2; }

# get FILE KEY: the number after the first "KEY": in the JSON file FILE
get() { grep "\"$2\"" "$1" | head -1 | sed -E 's/.*:[[:space:]]*([0-9.eE+-]+).*/\1/'; }

# need_value "$@": in an option loop, before $2 is read: the option $1 has a value, else one
# line naming it and exit 2. The value is missing at the end of the arguments and where the
# next word is another option (starts with "--"). Every script with options uses it.
need_value() {
  [ $# -ge 2 ] && [ "${2#--}" = "$2" ] && return 0
  echo "$0: $1 needs a value (see --help)" >&2; exit 2
}

# unknown_option ARG USAGE: the one line for an argument the script does not take, exit 2:
# an option names itself and, when one of the options in USAGE (the script's usage text) is
# a near miss (at most 2 edits, transpositions counted as one, and at most one a three
# characters, as the C programs' src/core/strdist.c), that one; anything else is an
# unexpected argument. Every script with options ends its option loop with it.
unknown_option() {
  local near
  case "$1" in
    -?*) ;;
    *) echo "$0: unexpected argument \"$1\" (see --help)" >&2; exit 2;;
  esac
  near=$(printf '%s\n' "$2" | grep -o -- '--[A-Za-z0-9][A-Za-z0-9-]*' | awk -v t="$1" '
    function dist(a, b, max,   na, nb, i, j, d, cur, prev, pp) {
      na = length(a); nb = length(b)
      if (na - nb > max || nb - na > max) return max + 1
      for (j = 0; j <= nb; j++) prev[j] = j
      for (i = 1; i <= na; i++) {
        cur[0] = i
        for (j = 1; j <= nb; j++) {
          d = prev[j - 1] + (substr(a, i, 1) != substr(b, j, 1))
          if (prev[j] + 1 < d) d = prev[j] + 1
          if (cur[j - 1] + 1 < d) d = cur[j - 1] + 1
          if (i > 1 && j > 1 && substr(a, i, 1) == substr(b, j - 1, 1) && substr(a, i - 1, 1) == substr(b, j, 1) && pp[j - 2] + 1 < d) d = pp[j - 2] + 1
          cur[j] = d
        }
        for (j = 0; j <= nb; j++) { pp[j] = prev[j]; prev[j] = cur[j] }
      }
      return prev[nb]
    }
    BEGIN { max = int((length(t) + 1) / 3); if (max > 2) max = 2; best = max + 1 }
    !($0 in seen) { seen[$0] = 1; d = dist(t, $0, max); if (d < best) { best = d; name = $0 } }
    END { if (best <= max) print name }')
  echo "$0: unknown option \"$1\"${near:+ (did you mean $near?)} (see --help)" >&2
  exit 2
}

# parse_options USAGE "$@": --profile paper|small, --mixers LIST, --steps N, --device D,
# --stamp S and --force into profile, mixers, steps, device ("--device D"), stamp (checked,
# the time of the call when not given: valid_stamp) and force, and BIN, where the programs that
# train and evaluate are (bin, or bin/cuda for --device cuda: `make cuda` puts its
# programs there); any other option goes to the
# script's own extra_option "$@" (which sets its variable, or returns 1 for an unknown
# option: the usage line and exit 2). Every option takes a value (need_value: extra_option
# calls it too), except --force and --help / -h (script_help, exit 0).
BIN=bin
parse_options() {
  local usage="$1"
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --help|-h) script_help; exit 0;;
      --profile) need_value "$@"; profile="$2";;
      --mixers) need_value "$@"; mixers="$2";;
      --steps) need_value "$@"; steps="$2";;
      --device) need_value "$@"; device="--device $2"; if [ "$2" = cuda ]; then BIN=bin/cuda; else BIN=bin; fi;;
      --stamp) need_value "$@"; stamp="$2";;
      --force) force=1; shift; continue;;
      *) extra_option "$@" || unknown_option "$1" "$usage --stamp --force --help";;
    esac
    shift 2
  done
  valid_stamp "${stamp:-}"
  case "$profile" in paper|small) ;; *) echo "$0: --profile must be paper or small" >&2; exit 2;; esac
}

# lra_header, lra_row TASK MIXER VALID TEST_BEST TEST_REPORTED REF: the LRA table of
# reproduce_lra.sh, one run a row: the best validation accuracy, the test accuracy at it and
# the reported one, given as fractions (or "-"), printed in percent beside REF, the LRA
# paper's test accuracy, already in percent ("-" when it has none). lra_acc SUMMARY: those
# three fractions from a run's summary.json ("-" for a missing one)
lra_header() { printf "%-10s %-10s %12s %12s %14s %12s\n" task mixer valid_best_% test_best_% test_reported_% "LRA paper %"; }
lra_row() {
  awk -v t="$1" -v m="$2" -v a="$3" -v b="$4" -v c="$5" -v r="$6" 'function pc(x) { return x ~ /^[0-9.]+([eE][-+]?[0-9]+)?$/ ? sprintf("%.2f", 100 * x) : "-" }
    BEGIN { printf "%-10s %-10s %12s %12s %14s %12s\n", t, m, pc(a), pc(b), pc(c), r }'
}
lra_acc() {
  local k v
  for k in best_valid_acc test_acc_at_best reported_test_acc; do
    v=$(grep -o "\"$k\":[[:space:]]*[0-9.eE+-]*" "$1" 2> /dev/null | head -n 1 | sed -E 's/.*:[[:space:]]*//')
    printf '%s ' "${v:--}"
  done
}

# md_table TXT MD: the whitespace table TXT (a header line, then one row a line) as a
# Markdown table in MD. The rows set the number of columns: a header with more words than
# that ("LRA paper") has its last words joined into the last column's name. Columns whose
# cells are all numbers (or "-", "--") are right-aligned.
md_table() {
  awk '{ nf[NR] = NF; for (i = 1; i <= NF; i++) c[NR, i] = $i; if (NR > 1 && NF > w) w = NF }
    END {
      if (NR == 0) exit
      if (w == 0) w = nf[1]
      for (i = 1; i <= w; i++) num[i] = (NR > 1)
      for (r = 2; r <= NR; r++) for (i = 1; i <= w; i++) {
        v = ((r, i) in c) ? c[r, i] : ""
        if (v !~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?%?$/ && v != "--" && v != "-") num[i] = 0
      }
      line = "|"
      for (i = 1; i <= w; i++) {
        h = ((1, i) in c) ? c[1, i] : ""
        if (i == w) for (j = w + 1; j <= nf[1]; j++) h = h " " c[1, j]
        line = line " " h " |"
      }
      print line
      line = "|"
      for (i = 1; i <= w; i++) line = line (num[i] ? "---:|" : "---|")
      print line
      for (r = 2; r <= NR; r++) {
        line = "|"
        for (i = 1; i <= w; i++) line = line " " (((r, i) in c) ? c[r, i] : "") " |"
        print line
      }
    }' "$1" > "$2"
}

# plot_all DIR RUN...: scripts/plot_runs.sh --out DIR on the runs (each RUN a run directory,
# or NAME=RUN for the legend label NAME), summed up in one line on stdout ("plots: DIR/
# and the PNG names", or the gnuplot-not-found line); a failure to plot is reported on
# stderr and does not stop the script (the table is already written). Nothing to do
# without runs.
plot_all() {
  local dir="$1" a args=() log
  shift
  [ $# -gt 0 ] || return 0
  for a in "$@"; do
    case "$a" in *=*) args+=(--label "$a" "${a#*=}");; *) args+=("$a");; esac
  done
  if log=$(scripts/plot_runs.sh --out "$dir" "${args[@]}"); then
    if echo "$log" | grep -q '^gnuplot not found'; then echo "$log" | grep '^gnuplot not found'
    else echo "plots: $dir/ $(echo "$log" | sed -n 's|.*/\([^/]*\.png\)$|\1|p' | paste -sd ' ' -)"; fi
  else
    echo "$0: the plots in $dir failed (scripts/plot_runs.sh)" >&2
  fi
}

# positive_ints NAME:VALUE...: each VALUE a positive integer, else the one line naming the
# option --NAME and exit 2
positive_ints() {
  local v
  for v in "$@"; do
    case "${v#*:}" in ''|*[!0-9]*|0) echo "$0: --${v%%:*} must be a positive integer, not '${v#*:}'" >&2; exit 2;; esac
  done
}

# prepare_sotu8: the programs, the SOTU split of scripts/sotu_split.sh in data/sotu8 (from
# the corpus SOTU=DIR, or --sotu DIR), its 4096-token BPE (data/bpe4k-sotu8) and the shards
# data/sotu8-bpe4k (each step skipped when its output is there): the data of
# reproduce_small.sh and reproduce_routing.sh. The corpus is needed only while data/sotu8 is
# not there; without it: one line, exit 2, before anything is built.
prepare_sotu8() {
  SOTU=$(from_start "${SOTU:-}"); [ -z "$SOTU" ] || export SOTU
  [ -f data/sotu8/test.txt ] || [ -n "$SOTU" ] || { echo "$0: no State of the Union corpus: --sotu DIR or SOTU=DIR, the folder of its train.txt, valid.txt, test.txt (one speech a line; scripts/sotu_split.sh)" >&2; exit 2; }
  make -s binaries
  scripts/sotu_split.sh data/sotu8
  [ -f data/bpe4k-sotu8/vocab.bpe ] || bin/gmadata train-tokenizer --vocab-size 4096 --out data/bpe4k-sotu8 data/sotu8/train.txt
  [ -f data/sotu8-bpe4k/meta.json ] || bin/gmadata prepare data/sotu8 --tokenizer bpe:data/bpe4k-sotu8 --out data/sotu8-bpe4k
}

# The run folders of the scripts: one rule for all (docs/reproducing.md, "Reruns"). A rerun
# with the same output continues: a run already finished (RUN/summary.json) is kept and
# not trained again, a run stopped part way (RUN/latest, a checkpoint) is continued with
# gmatrain --resume, and a start stopped before its first checkpoint is started again.
# What a script trains is recorded in RUN/plan.txt (its gmatrain command without
# --threads, --quiet and a nice before it); a folder the script did not make with the same plan (another
# plan.txt, or none: made by hand, by another script, or before plans were kept) is
# refused in one line, unless --force (force=1): then it is removed and trained again.
# Nothing else is ever removed.
force=0
# run_plan_text CMD...: the plan of a training command, one line (what comes before
# gmatrain, nice -n 10, left out too)
run_plan_text() {
  local a=("$@")
  while [ ${#a[@]} -gt 1 ]; do case "${a[0]}" in *gmatrain) break;; esac; a=("${a[@]:1}"); done
  printf '%s ' "${a[@]}" | sed -E 's/ --set threads=[0-9]+//g; s/ --threads [0-9]+//g; s/ --quiet//g; s/ $//'
}
# run_state RUN CMD...: what run_train will do with RUN: "fresh" (train it), "resume"
# (continue it), "done" (keep it); one line and exit 2 (from the caller's command
# substitution: st=$(run_state ...) || exit 2) when RUN is not this script's run of CMD
run_state() {
  local run="$1" plan
  shift
  plan=$(run_plan_text "$@")
  [ -e "$run" ] || { echo fresh; return 0; }
  if [ -f "$run/plan.txt" ] && [ "$(cat "$run/plan.txt")" = "$plan" ]; then
    if [ -s "$run/summary.json" ]; then echo done
    elif [ -e "$run/latest" ]; then echo resume
    else echo fresh; fi
    return 0
  fi
  [ "$force" = 1 ] && { echo fresh; return 0; }
  if [ -f "$run/plan.txt" ]; then
    echo "$0: $run was trained with other options (its plan.txt): rerun with those, give another --out, or --force to train it again" >&2
  else
    echo "$0: $run is there and was not made by this script (no plan.txt): give another --out, or --force to replace it" >&2
  fi
  exit 2
}
# run_train RUN CMD...: RUN as run_state says: trained with CMD (a gmatrain command whose
# --out is RUN; an earlier folder there removed: see above), continued with CMD's gmatrain
# --resume RUN, or kept ("done before" on stderr). Returns the training's status.
run_train() {
  local run="$1" st
  shift
  st=$(run_state "$run" "$@") || exit 2
  case "$st" in
    done) echo "$run: finished before, kept" >&2; return 0;;
    resume) echo "$run: stopped part way, resumed" >&2
      local pre=() # what comes before gmatrain (nice -n 10)
      while [ $# -gt 1 ]; do case "$1" in *gmatrain) break;; esac; pre+=("$1"); shift; done
      "${pre[@]+"${pre[@]}"}" "$1" --resume "$run" --quiet;;
    fresh)
      [ ! -e "$run" ] || rm -rf "$run"
      mkdir -p "$run"
      run_plan_text "$@" > "$run/plan.txt"
      "$@";;
  esac
}

# valid_stamp S: the stamp of a script's names (--stamp S: letters, digits, '.', '_', '-');
# empty: stamp set to the time of the call
valid_stamp() {
  case "$1" in
    '') stamp=$(date +%Y%m%d-%H%M%S);;
    *[!A-Za-z0-9._-]*) echo "$0: --stamp: '$1' holds a character other than letters, digits, '.', '_', '-'" >&2; exit 2;;
  esac
}
