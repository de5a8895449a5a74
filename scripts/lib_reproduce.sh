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
