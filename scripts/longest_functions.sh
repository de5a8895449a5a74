#!/usr/bin/env bash
# longest_functions.sh: the N longest functions under src/ (default 10), lines from the
# definition's first line to its closing brace, as Universal Ctags reports them (--fields=+ne).
#
#   scripts/longest_functions.sh [N] [DIR]    e.g. scripts/longest_functions.sh 10 src/cli
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
dir=${2:-src}
command -v ctags >/dev/null || { echo "longest_functions.sh: needs Universal Ctags (ctags)" >&2; exit 2; }
find "$dir" \( -name '*.c' -o -name '*.cu' \) -print0 | sort -z |
  xargs -0 ctags --languages=C,C++ --langmap=C++:+.cu --kinds-C=f --kinds-C++=f --fields=+ne -x --_xformat='%{name} %{input}:%{line} %{end}' 2>/dev/null |
  awk '$3 ~ /^[0-9]+$/ { split($2, a, ":"); printf "%d %s %s\n", $3 - a[2] + 1, $2, $1 }' | sort -rn | head -n "$n"
