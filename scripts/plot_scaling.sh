#!/usr/bin/env bash
# plot_scaling.sh: time and peak memory against sequence length N for every mixer, from the
# JSON of `gmabench mixer` (one layer, forward + backward: rows "mixer", N, ms, peak_bytes)
# and `gmabench model` (the whole training step, one file per T: rows "model", T, step_ms,
# peak_mib; dropout rows left out), as a Markdown table and log-log figures.
#
#   scripts/plot_scaling.sh [--out DIR] FILE.json ...
#   --out DIR   where the results go (default runs/scaling)
# Writes DIR/scaling.md (one table per kind, layer and model: a row per N, a column per
# mixer, "ms (MiB)"; a point gmabench skipped shows its reason), DIR/layer.dat and
# DIR/model.dat (one gnuplot block per mixer: N ms MiB), DIR/scaling.gp and, with gnuplot,
# DIR/scaling_layer.png and DIR/scaling_model.png (time and memory against N, log-log, one
# line per mixer; `cd DIR && gnuplot scaling.gp` draws them again). Without gnuplot the
# table, data and script are written and the PNGs skipped (exit 0).
# Environment: GNUPLOT=PROG the gnuplot to run (default gnuplot).
# Bad input (a missing or empty FILE, no rows in any FILE): one line naming it, exit 2.
set -euo pipefail

. "$(dirname "$0")/lib_reproduce.sh"
die() { echo "$0: $*" >&2; exit 2; }
out=runs/scaling; files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h) script_help; exit 0;;
    --out) need_value "$@"; out=$2; shift 2;;
    -*) unknown_option "$1" "--out --help";;
    *) files+=("$1"); shift;;
  esac
done
[ ${#files[@]} -gt 0 ] || die "no JSON file given (usage: $0 [--out DIR] FILE.json ...)"
for f in "${files[@]}"; do [ -s "$f" ] || die "$f: missing or empty"; done

# one line a row: kind mixer N ms MiB skipped (cJSON's layout: one key a line, "mixer" first)
rows=$(awk '
  function val(line) { sub(/^[^:]*:[ \t]*/, "", line); sub(/,[ \t]*$/, "", line); gsub(/["{}\[\]]/, "", line); return line }
  function emit() {
    if (mx != "" && n != "" && drop == 0) printf "%s %s %s %s %s %s\n", kind, mx, n, (ms == "" ? "-" : ms), (mib == "" ? "-" : mib), (sk == "" ? "-" : sk)
    mx = ""; n = ""; ms = ""; mib = ""; sk = ""; drop = 0
  }
  FNR == 1 { emit(); kind = "" }
  /^\t"mixer":[ \t]*\[/ { kind = "layer" }
  /^\t"model":[ \t]*\[/ { kind = "model" }
  /^\t"[a-z_]+":/ && !/^\t"(mixer|model)":[ \t]*\[/ { emit(); kind = "" }
  kind != "" && /"mixer":[ \t]*"/ { emit(); mx = val($0) }
  kind == "layer" && /"N":/ { n = val($0) }
  kind == "model" && /"T":/ { n = val($0) }
  kind == "layer" && /"ms":/ { ms = val($0) }
  kind == "model" && /"step_ms":/ { ms = val($0) }
  kind == "layer" && /"peak_bytes":/ { mib = val($0) / 1048576 }
  kind == "model" && /"peak_mib":/ { mib = val($0) }
  kind == "model" && /"dropout":/ { drop = val($0) + 0 }
  /"skipped":/ { sk = val($0); gsub(/[ :]+/, "_", sk) }
  END { emit() }' "${files[@]}")
[ -n "$rows" ] || die "no mixer or model rows in ${files[*]}"
mkdir -p "$out"

# the table: per kind, a row per N (ascending), a column per mixer (first-seen order)
echo "$rows" | awk -v md="$out/scaling.md" '
  function k1(n) { return n >= 1024 && n % 1024 == 0 ? (n / 1024) "K" : n }
  {
    key = $1 SUBSEP $2 SUBSEP $3
    if (!(($1, $2) in seenm)) { seenm[$1, $2] = 1; mixers[$1] = mixers[$1] (mixers[$1] == "" ? "" : " ") $2 }
    if (!(($1, $3) in seenn)) { seenn[$1, $3] = 1; ns[$1] = ns[$1] (ns[$1] == "" ? "" : " ") $3 }
    if ($6 != "-") { s = $6; gsub(/_/, " ", s); cell[key] = s } else cell[key] = sprintf("%.1f (%.1f)", $4, $5)
  }
  END {
    split("layer model", kinds, " ")
    title["layer"] = "One mixer layer, forward + backward: ms (peak MiB)"
    title["model"] = "Whole training step: ms (peak MiB)"
    first = 1
    for (ki = 1; ki <= 2; ki++) {
      k = kinds[ki]
      if (mixers[k] == "") continue
      nm = split(mixers[k], m, " "); nn = split(ns[k], nv, " ")
      for (i = 1; i <= nn; i++) for (j = i + 1; j <= nn; j++) if (nv[j] + 0 < nv[i] + 0) { t = nv[i]; nv[i] = nv[j]; nv[j] = t }
      if (!first) print "" > md
      first = 0
      print title[k] ":" > md
      print "" > md
      line = "| N |"; sep = "|---:|"
      for (j = 1; j <= nm; j++) { line = line " " m[j] " |"; sep = sep "---:|" }
      print line > md; print sep > md
      for (i = 1; i <= nn; i++) {
        line = "| " k1(nv[i]) " |"
        for (j = 1; j <= nm; j++) { c = (k SUBSEP m[j] SUBSEP nv[i]) in cell ? cell[k, m[j], nv[i]] : "-"; line = line " " c " |" }
        print line > md
      }
    }
  }'

# the data: one block per mixer (two blank lines apart), measured points only
for k in layer model; do
  echo "$rows" | awk -v k="$k" '$1 == k && $6 == "-" { print $2, $3, $4, $5 }' | sort -s -k1,1 -k2,2n |
    awk 'BEGIN { prev = "" } { if ($1 != prev) { if (prev != "") printf "\n\n"; printf "# %s\n", $1; prev = $1 } print $2, $3, $4 }' \
    > "$out/$k.dat"
done

{
  echo "# written by scripts/plot_scaling.sh; cd to this directory and run: gnuplot scaling.gp"
  echo "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { png = 'pngcairo' } else { png = 'png' }"
  for k in layer model; do
    [ -s "$out/$k.dat" ] || continue
    names=$(sed -n 's/^# //p' "$out/$k.dat" | paste -sd ' ' -)
    nm=$(echo "$names" | wc -w)
    [ "$k" = layer ] && what="one mixer layer, forward + backward" || what="whole training step"
    echo "reset"
    echo "set terminal @png size 1200,500"
    echo "set output 'scaling_$k.png'"
    echo "names = '$names'"
    echo "set multiplot layout 1,2 title 'Scaling against N: $what (log-log)'"
    echo "set logscale xy 2"
    echo "set format x '%g'; set format y '%g'"
    echo "set grid; set key top left; set xlabel 'N (tokens)'"
    echo "set ylabel 'time (ms)'"
    echo "plot for [i=0:$((nm - 1))] '$k.dat' index i using 1:2 with linespoints lw 2 title word(names, i + 1)"
    echo "set ylabel 'peak memory (MiB)'"
    echo "plot for [i=0:$((nm - 1))] '$k.dat' index i using 1:3 with linespoints lw 2 title word(names, i + 1)"
    echo "unset multiplot"
  done
} > "$out/scaling.gp"
echo "table: $out/scaling.md"
pngs=$(for k in layer model; do [ -s "$out/$k.dat" ] && printf '%s ' "$out/scaling_$k.png"; done)
if ! command -v "${GNUPLOT:-gnuplot}" > /dev/null 2>&1; then
  echo "gnuplot not found: plots skipped (apt-get install gnuplot-nox)"
elif (cd "$out" && "${GNUPLOT:-gnuplot}" scaling.gp) 2> "$out/gnuplot.err"; then
  rm -f "$out/gnuplot.err"; echo "plots: ${pngs% }"
else
  echo "$0: gnuplot failed on $out/scaling.gp (see $out/gnuplot.err)" >&2; exit 1
fi
