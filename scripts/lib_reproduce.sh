# lib_reproduce.sh: what the reproduce_*.sh scripts share; sourced (from the repository
# root) after their defaults are set.

# script_help: the script's usage, its header comment (every line after the first up to
# the first line that is not a comment), on stdout.
script_help() { sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; }

# progress K N WHAT OUT: one line on stderr as run K of N starts (the runs themselves are
# --quiet): what is trained and where its metrics go.
progress() { echo "[$1/$2] $3 -> $4 (metrics: $4/metrics.jsonl)" >&2; }

# get FILE KEY: the number after the first "KEY": in the JSON file FILE
get() { grep "\"$2\"" "$1" | head -1 | sed -E 's/.*:[[:space:]]*([0-9.eE+-]+).*/\1/'; }

# parse_options USAGE "$@": --profile paper|small, --mixers LIST, --steps N and --device D
# into profile, mixers, steps and device ("--device D"), and BIN, where the programs that
# train and evaluate are (bin, or bin/cuda for --device cuda: `make cuda` puts its
# programs there); any other option goes to the
# script's own extra_option "$@" (which sets its variable, or returns 1 for an unknown
# option: the usage line and exit 2). Every option takes a value, except --help / -h
# (script_help, exit 0).
BIN=bin
parse_options() {
  local usage="$1"
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --help|-h) script_help; exit 0;;
      --profile) profile="$2";;
      --mixers) mixers="$2";;
      --steps) steps="$2";;
      --device) device="--device $2"; if [ "$2" = cuda ]; then BIN=bin/cuda; else BIN=bin; fi;;
      *) extra_option "$@" || { echo "usage: $0 $usage" >&2; exit 2; };;
    esac
    shift 2
  done
  case "$profile" in paper|small) ;; *) echo "$0: --profile must be paper or small" >&2; exit 2;; esac
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

# prepare_sotu8: the programs, the SOTU split of scripts/sotu_split.sh in data/sotu8, its
# 4096-token BPE (data/bpe4k-sotu8) and the shards data/sotu8-bpe4k (each step skipped when
# its output is there): the data of reproduce_small.sh and reproduce_routing.sh
prepare_sotu8() {
  make -s binaries
  scripts/sotu_split.sh data/sotu8
  [ -f data/bpe4k-sotu8/vocab.bpe ] || bin/gmadata train-tokenizer --vocab-size 4096 --out data/bpe4k-sotu8 data/sotu8/train.txt
  [ -f data/sotu8-bpe4k/meta.json ] || bin/gmadata prepare data/sotu8 --tokenizer bpe:data/bpe4k-sotu8 --out data/sotu8-bpe4k
}
