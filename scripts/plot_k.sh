#!/usr/bin/env bash
# plot_k.sh: K per GMA layer over training (docs/model.md §4.2) of one or more runs, from the
# "adapt" rows of the structural adaptation and the "components" rows of the Dirichlet
# prior in RUN/metrics.jsonl (PNG through gnuplot).
#   scripts/plot_k.sh [--out DIR] RUN...
#   --out DIR   where the figure goes (default runs/plots)
# Writes DIR/NAME.k.dat per run (step layer n_components k_live; k_live the live components
# per routing head, their mean: the adapt rows' k_live, with a row at step 0 for the K
# before the first adaptation; a run without adapt rows: the components rows' k_active),
# DIR/k.gp and DIR/k_steps.png (one curve per run and layer: live K, and the tensor K
# dashed). Without gnuplot the .dat files and k.gp are written and the PNG skipped (exit 0).
# Environment: GNUPLOT=PROG the gnuplot to run (default gnuplot, looked up on PATH).
# Bad input (a RUN without metrics.jsonl, or with no such rows): one line naming it, exit 2.
set -euo pipefail
. "$(dirname "$0")/lib_reproduce.sh"
usage="usage: $0 [--out DIR] RUN..."
out=runs/plots; runs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h) script_help; exit 0;;
    --out) need_value "$@"; out="$2"; shift 2;;
    -*) unknown_option "$1" "$usage --help";;
    *) runs+=("$1"); shift;;
  esac
done
[ ${#runs[@]} -gt 0 ] || { echo "$usage" >&2; exit 2; }
mkdir -p "$out"
# the number after "KEY": in a metrics row
field() { sed -nE "s/.*\"$1\":([-0-9.eE+]+).*/\\1/p"; }
plots=""; c=0
for run in "${runs[@]}"; do
  m="${run%/}/metrics.jsonl"
  [ -f "$m" ] || { echo "$0: $m: no such file (a run directory of bin/gmatrain)" >&2; exit 2; }
  name=$(printf '%s' "$(basename "${run%/}")" | tr -c 'A-Za-z0-9._-' '_')
  dat="$out/$name.k.dat"
  ev='"event":"components"'; grep -q '"event":"adapt"' "$m" && ev='"event":"adapt"' # adapt rows when there are
  grep -F "$ev" "$m" | while IFS= read -r row; do
    s=$(field step <<< "$row"); l=$(field layer <<< "$row"); k=$(field n_components <<< "$row")
    live=$(field k_live <<< "$row"); [ -n "$live" ] || live=$(field k_active <<< "$row")
    k0=$(field k_before <<< "$row")
    [ -z "$k0" ] || echo "0 $l $k0 $k0 first"
    echo "$s $l $k $live"
  done | awk '$5 == "first" { if (seen[$2]++) next; $5 = "" } { print }' | sed 's/ *$//' \
    | sort -n -k2,2 -k1,1 | awk 'NR > 1 && $2 != last { print ""; print "" } { print; last = $2 }' > "$dat"
  [ -s "$dat" ] || { echo "$0: $m: no \"adapt\" or \"components\" rows (gma.adapt_every or gma.dirichlet_weight off)" >&2; exit 2; }
  for l in $(awk 'NF { print $2 }' "$dat" | sort -un); do
    i=$(awk 'NF { print $2 }' "$dat" | sort -un | grep -n "^$l\$" | cut -d: -f1); i=$((i - 1))
    c=$((c + 1))
    plots+="${plots:+, }'$name.k.dat' index $i using 1:4 with linespoints lc $c title '$name layer $l', '$name.k.dat' index $i using 1:3 with lines lc $c dashtype 2 notitle"
  done
done
cat > "$out/k.gp" <<GP
set terminal pngcairo size 900,500 noenhanced
set output 'k_steps.png'
set xlabel 'step'
set ylabel 'components per head K (live; tensor K dashed)'
set key outside right
set grid
plot $plots
GP
if ! command -v "${GNUPLOT:-gnuplot}" > /dev/null 2>&1; then
  echo "$0: gnuplot not found: wrote $out/k.gp and the .dat files, no PNG (apt-get install gnuplot)"
  exit 0
fi
(cd "$out" && "${GNUPLOT:-gnuplot}" k.gp)
echo "$out/k_steps.png"
