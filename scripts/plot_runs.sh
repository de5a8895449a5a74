#!/usr/bin/env bash
# plot_runs.sh: the training curves of several runs on one figure each (PNG through gnuplot).
#
#   scripts/plot_runs.sh [--out DIR] [--title T] [--label NAME=RUN ...] [--routing FILE ...] [RUN ...]
#   RUN              a run directory of bin/gmatrain (its metrics.jsonl; summary.json or
#                    config.json for the tokens per step)
#   --out DIR        where the figures go (default runs/plots)
#   --title T        the first words of every figure's title
#   --label NAME=RUN the legend name of RUN (or of a --routing FILE); default: RUN's
#                    basename (FILE's parent directory name)
#   --routing FILE   an analysis JSON of `gmaeval --analyze --analyze-json FILE` (docs/analysis.md):
#                    utilisation.png, one curve per FILE (a variant)
# Writes into DIR, one line each: loss_steps.png and loss_tokens.png (training loss, thin
# lines, a point for a run of one training row, and validation loss, points and lines; one
# colour per run), ppl_steps.png and
# ppl_tokens.png (validation perplexity and exp(training loss), log y) when a run has
# perplexity, acc_steps.png (validation accuracy) when a run has accuracy, utilisation.png
# with --routing (share of tokens per component, components sorted by share within each
# head, the mean at each rank over every layer and head, log y; zero shares not drawn);
# and the data and script they come from: LABEL.train.dat (step tokens loss lr),
# LABEL.valid.dat (step tokens loss ppl acc word_ppl), LABEL.routing.dat (rank share) and plots.gp
# (`cd DIR && gnuplot plots.gp` draws them again). Tokens at a step are the step times the
# run's tokens per step: summary.json tokens_seen / steps, else config.json batch_size x
# seq_len x grad_accum (one process). Both RUNs and --routing FILEs may be given in one call.
# Runs of different tokenizers (RUN/data.json "tokenizer") compare per byte, not per token:
# bpb_steps.png, validation bits per byte = loss x (tokens / bytes of the valid split, from
# the meta.json of the run's data, RUN/data.json path_abs) / ln 2 (the split's mean bytes per
# token: exact for an evaluation of the whole split). When a run's data (its meta.json with
# the valid split's bytes) is not there, one line says so and wordppl_steps.png is drawn
# instead: the word-level perplexity gmatrain logs on evaluations of the whole valid split.
# Without gnuplot the .dat files and plots.gp are written and the PNGs skipped (exit 0).
# Environment: GNUPLOT=PROG the gnuplot to run (default gnuplot, looked up on PATH).
# Bad input (a RUN without metrics.jsonl, an empty file, a malformed line): one line naming
# the file and line, exit 2.
set -euo pipefail

. "$(dirname "$0")/lib_reproduce.sh"
usage="usage: $0 [--out DIR] [--title T] [--label NAME=RUN ...] [--routing FILE ...] [RUN ...]"
die() { echo "$0: $*" >&2; exit 2; }
out=runs/plots; title=""; runs=(); routing=(); labels=()
while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h) script_help; exit 0;;
    --out|--title|--label|--routing)
      need_value "$@"
      case "$1" in
        --out) out="$2";;
        --title) title="$2";;
        --label) case "$2" in ?*=?*) labels+=("$2");; *) die "--label wants NAME=RUN, not '$2'";; esac;;
        --routing) routing+=("$2");;
      esac
      shift 2;;
    -*) unknown_option "$1" "$usage --help";;
    *) runs+=("$1"); shift;;
  esac
done
[ ${#runs[@]} -gt 0 ] || [ ${#routing[@]} -gt 0 ] || { echo "$usage" >&2; exit 2; }

# label_of PATH DEFAULT: the --label NAME given for PATH (trailing slashes ignored), else DEFAULT
label_of() {
  local l p="${1%/}"
  for l in "${labels[@]+"${labels[@]}"}"; do
    [ "${l#*=}" = "$p" ] || [ "${l#*=}" = "$1" ] || [ "${l#*=}" = "$p/" ] && { echo "${l%%=*}"; return; }
  done
  echo "$2"
}
# a label as a file name: anything but letters, digits, '.', '_' and '-' becomes '_'
used_names=" "
file_name() {
  local n k=2 s
  s=$(printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_')
  n=$s
  while [[ "$used_names" == *" $n "* ]]; do n="$s-$k"; k=$((k + 1)); done
  used_names+="$n "
  echo "$n"
}
# the first number after "KEY": in the JSON file $1 (empty when absent)
num() { [ -f "$1" ] && grep -m1 "\"$2\"[[:space:]]*:" "$1" | sed -nE 's/.*:[[:space:]]*([-0-9.eE+]+).*/\1/p' || true; }
gp_quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/''/g")"; }

# metrics.jsonl -> NAME.train.dat, NAME.valid.dat; prints "ntrain nvalid has_ppl has_acc"
# on success; a malformed line: one line "FILE:LINE: ..." on stderr, exit 2
split_metrics() { # FILE TOKENS_PER_STEP TRAIN_DAT VALID_DAT
  awk -v file="$1" -v tps="$2" -v tdat="$3" -v vdat="$4" '
    function bad(why) { printf "%s:%d: %s\n", file, NR, why > "/dev/stderr"; failed = 1; exit 2 }
    function ws() { while (p <= n && index(" \t\r", substr(s, p, 1))) p++ }
    function str(   c, o) { # the string at p (opening quote), its raw contents
      if (substr(s, p, 1) != "\"") bad("expected a string at column " p)
      o = ""; p++
      while (p <= n) {
        c = substr(s, p, 1)
        if (c == "\\") { o = o substr(s, p, 2); p += 2; continue }
        if (c == "\"") { p++; return o }
        o = o c; p++
      }
      bad("unterminated string")
    }
    function skip_nested(   d, c) { # an object or array at p
      d = 0
      while (p <= n) {
        c = substr(s, p, 1)
        if (c == "\"") { str(); continue }
        if (c == "{" || c == "[") d++
        else if (c == "}" || c == "]") { d--; if (d == 0) { p++; return } }
        p++
      }
      bad("unterminated object or array")
    }
    function value(   c, t) {
      c = substr(s, p, 1)
      if (c == "\"") return "\"" str()
      if (c == "{" || c == "[") { skip_nested(); return "{" }
      t = ""
      while (p <= n && index("-+0123456789.eEtruefalsn", substr(s, p, 1))) { t = t substr(s, p, 1); p++ }
      if (t == "null" || t == "true" || t == "false") return t
      if (t !~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) bad("bad value at column " p - length(t))
      return t
    }
    function parse(   k) { # the top-level fields of the object on this line into F
      split("", F); p = 1; n = length(s); ws()
      if (substr(s, p, 1) != "{") bad("not a JSON object")
      p++; ws()
      if (substr(s, p, 1) == "}") { p++ }
      else while (1) {
        ws(); k = str(); ws()
        if (substr(s, p, 1) != ":") bad("expected : after \"" k "\"")
        p++; ws(); F[k] = value(); ws()
        c = substr(s, p, 1); p++
        if (c == "}") break
        if (c != ",") bad("expected , or } at column " p - 1)
      }
      ws()
      if (p <= n) bad("text after the object at column " p)
    }
    function v(k) { return ((k in F) && F[k] ~ /^-?[0-9]/) ? F[k] : "?" }
    BEGIN {
      print "# step tokens loss lr (training rows of " file ")" > tdat
      print "# step tokens loss ppl acc word_ppl (validation rows of " file ")" > vdat
    }
    {
      s = $0
      if (s ~ /^[ \t\r]*$/) bad("empty line")
      parse()
      if (!("step" in F) || F["step"] !~ /^[0-9]/) next
      if ("split" in F) {
        if (F["split"] != "\"valid") next
        printf "%s %.0f %s %s %s %s\n", F["step"], F["step"] * tps, v("loss"), v("ppl"), v("acc"), v("word_ppl") > vdat
        nv++; if (v("ppl") != "?") hp = 1; if (v("acc") != "?") ha = 1
      } else if (!("event" in F) && ("loss" in F)) {
        printf "%s %.0f %s %s\n", F["step"], F["step"] * tps, v("loss"), v("lr") > tdat
        nt++
      }
    }
    END {
      if (failed) exit 2
      if (NR == 0) { printf "%s: empty file\n", file > "/dev/stderr"; exit 2 }
      if (nt + nv == 0) { printf "%s:%d: no training or validation rows\n", file, NR > "/dev/stderr"; exit 2 }
      printf "%d %d %d %d\n", nt, nv, hp, ha
    }' "$1"
}

# analysis JSON -> NAME.routing.dat (rank, mean share over every layer and head of the
# rank-th busiest component of the head); prints "L layers x H heads, Kc K"
routing_shares() { # FILE DAT
  awk -v file="$1" -v dat="$2" '
    function flush(   i, j, t) {
      if (m == 0) return
      for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] < t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      for (i = 1; i <= m; i++) sum[i] += a[i]
      if (m > kmax) kmax = m
      heads++; m = 0
    }
    {
      line = $0
      while (match(line, /"(layer|head|share)"[ \t]*:[ \t]*-?[0-9][-+0-9.eE]*/)) {
        tok = substr(line, RSTART, RLENGTH); line = substr(line, RSTART + RLENGTH)
        val = tok; sub(/.*:[ \t]*/, "", val)
        if (tok ~ /^"layer"/) layers++
        else if (tok ~ /^"head"/) flush()
        else { m++; a[m] = val + 0 }
      }
    }
    END {
      flush()
      if (NR == 0) { printf "%s: empty file\n", file > "/dev/stderr"; exit 2 }
      if (heads == 0 || kmax == 0 || layers == 0) { printf "%s:%d: no \"layers\" with \"heads\" and component shares (not a gmaeval --analyze-json file?)\n", file, NR > "/dev/stderr"; exit 2 }
      print "# rank share (mean over " layers " layers x " heads / layers " heads of the rank-th largest component share; " file ")" > dat
      for (i = 1; i <= kmax; i++) printf "%d %.6g\n", i - 1, sum[i] / heads > dat
      print layers " layers x " heads / layers " heads, Kc " kmax
    }' "$1"
}

# everything is written into a staging directory first and moved into DIR once every input
# has been read: bad input leaves DIR as it was
made=""; [ -d "$out" ] || made=1
mkdir -p "$out"
stage=$(mktemp -d "$out/.plot_runs.XXXXXX")
trap 'rm -rf "$stage"; [ -z "$made" ] || rmdir "$out" 2> /dev/null || true' EXIT
colours=(0x0072b2 0xd55e00 0x009e73 0xcc79a7 0xe69f00 0x56b4e9 0x000000 0xf0e442 0x882255 0x44aa99)
tl=""; [ -n "$title" ] && tl="$title: "
gp="$stage/plots.gp"
{
  echo "# written by scripts/plot_runs.sh; cd to this directory and run: gnuplot plots.gp"
  echo "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { png = 'pngcairo' } else { png = 'png' }"
  echo "set terminal @png size 1000,600 noenhanced"
  echo "set datafile missing '?'"
  echo "set grid"
} > "$gp"
written=(plots.gp)

train_el=(); valid_el=(); ppl_tr=(); ppl_va=(); acc_el=(); any_ppl=0; any_acc=0; i=0
tokenizers=(); nobytes=(); bpb_el=(); wppl_el=()
for r in "${runs[@]+"${runs[@]}"}"; do
  m="${r%/}/metrics.jsonl"
  [ -f "$m" ] || die "$m: no such file (is $r a run directory of bin/gmatrain?)"
  [ -s "$m" ] || die "$m: empty file"
  tps=""; steps=$(num "${r%/}/summary.json" steps); seen=$(num "${r%/}/summary.json" tokens_seen)
  if [ -n "$steps" ] && [ -n "$seen" ] && [ "$steps" != 0 ]; then tps=$(awk -v a="$seen" -v b="$steps" 'BEGIN { print a / b }')
  else
    c="${r%/}/config.json"; b=$(num "$c" batch_size); sl=$(num "$c" seq_len); ga=$(num "$c" grad_accum)
    [ -n "$b" ] && [ -n "$sl" ] || die "$c: no train.batch_size / train.seq_len (and no summary.json) for the tokens per step"
    tps=$((b * sl * ${ga:-1}))
  fi
  base=$(basename "${r%/}")
  label=$(label_of "$r" "$base"); name=$(file_name "$label")
  read -r nt nv hp ha < <(split_metrics "$m" "$tps" "$stage/$name.train.dat" "$stage/$name.valid.dat" || echo FAIL) || true
  [ "${nt:-FAIL}" != FAIL ] || exit 2
  written+=("$name.train.dat" "$name.valid.dat")
  col=${colours[$((i % ${#colours[@]}))]}; i=$((i + 1))
  q=$(gp_quote "$label")
  tdat=$(gp_quote "$name.train.dat"); vdat=$(gp_quote "$name.valid.dat")
  if [ "$nt" -gt 0 ]; then
    tt="title $q"; [ "$nv" -gt 0 ] && tt=notitle
    # one training row: a point (gnuplot draws no line through a single point)
    tw="lines lw 1"; [ "$nt" = 1 ] && tw="points pt 7 ps 0.7"
    train_el+=("$tdat using X:3 with $tw lc rgb '#$(printf %06x $col)' $tt")
    [ "$hp" = 1 ] && ppl_tr+=("$tdat using X:(exp(\$3)) with $tw lc rgb '#$(printf %06x $col)' notitle")
  fi
  if [ "$nv" -gt 0 ]; then
    valid_el+=("$vdat using X:3 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#$(printf %06x $col)' title $q")
    [ "$hp" = 1 ] && ppl_va+=("$vdat using X:4 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#$(printf %06x $col)' title $q")
    [ "$ha" = 1 ] && acc_el+=("$vdat using 1:5 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#$(printf %06x $col)' title $q")
  fi
  [ "$hp" = 1 ] && any_ppl=1; [ "$ha" = 1 ] && any_acc=1
  # per byte: the run's tokenizer and its valid split's tokens / bytes / ln 2 (empty when unknown)
  dj="${r%/}/data.json"; tk=""; f=""; meta=""
  if [ -f "$dj" ]; then
    tk=$(sed -n 's/^[[:space:]]*"tokenizer":[[:space:]]*"\(.*\)",\{0,1\}[[:space:]]*$/\1/p' "$dj" | head -1)
    meta="$(sed -n 's/^[[:space:]]*"path_abs":[[:space:]]*"\(.*\)",\{0,1\}[[:space:]]*$/\1/p' "$dj" | head -1)/meta.json"
  fi
  [ -f "$meta" ] && f=$(awk '/"valid"[ \t]*:[ \t]*\{/ { v = 1 } v && /"tokens"/ && t == "" { t = $0; sub(/.*:[ \t]*/, "", t); sub(/,.*/, "", t) }
    v && /"bytes"/ && b == "" { b = $0; sub(/.*:[ \t]*/, "", b); sub(/,.*/, "", b) }
    END { if (t > 0 && b > 0) printf "%.10g", t / b / log(2) }' "$meta")
  tokenizers+=("${tk:-?}")
  [ -n "$f" ] || nobytes+=("$r")
  bpb_el+=("$vdat using X:(\$3*${f:-0}) with linespoints lw 2 pt 7 ps 0.7 lc rgb '#$(printf %06x $col)' title $q")
  wppl_el+=("$vdat using X:6 with linespoints lw 2 pt 7 ps 0.7 lc rgb '#$(printf %06x $col)' title $q")
done

pngs=()
# figure PNG XCOL XLABEL YLABEL TITLE LOGY KEY ELEMENT...: one plot command into plots.gp
# (KEY: where the legend goes, inside the frame)
figure() {
  local png="$1" x="$2" xl="$3" yl="$4" t="$5" logy="$6" key="$7" e sep="" cmd="plot "
  shift 7
  [ $# -gt 0 ] || return 0
  for e in "$@"; do cmd+="$sep${e//using X:/using $x:}"; sep=", \\"$'\n'"     "; done
  {
    echo
    echo "set output '$png'"
    echo "set title $(gp_quote "$tl$t")"
    echo "set xlabel '$xl'"; echo "set ylabel '$yl'"; echo "set key inside $key"
    if [ "$x" = 2 ]; then echo "set format x '%.1s%c'"; else echo "set format x '%g'"; fi
    if [ "$logy" = 1 ]; then echo "set logscale y"; echo "set format y '%g'"; else echo "unset logscale y"; echo "set format y '%g'"; fi
    echo "$cmd"
  } >> "$gp"
  pngs+=("$out/$png")
}
legend=("NaN with lines lw 1 lc rgb '#808080' title 'training (thin)'"
        "NaN with linespoints lw 2 pt 7 ps 0.7 lc rgb '#808080' title 'validation'")
if [ ${#runs[@]} -gt 0 ]; then
  lt=(); [ ${#train_el[@]} -gt 0 ] && [ ${#valid_el[@]} -gt 0 ] && lt=("${legend[@]}")
  all=("${train_el[@]+"${train_el[@]}"}" "${valid_el[@]+"${valid_el[@]}"}" "${lt[@]+"${lt[@]}"}")
  figure loss_steps.png 1 step loss "training and validation loss" 0 "top right" "${all[@]}"
  figure loss_tokens.png 2 "training tokens" loss "training and validation loss" 0 "top right" "${all[@]}"
  if [ $any_ppl = 1 ]; then
    lt=(); [ ${#ppl_tr[@]} -gt 0 ] && [ ${#ppl_va[@]} -gt 0 ] && lt=("${legend[@]}")
    all=("${ppl_tr[@]+"${ppl_tr[@]}"}" "${ppl_va[@]+"${ppl_va[@]}"}" "${lt[@]+"${lt[@]}"}")
    figure ppl_steps.png 1 step "perplexity (log)" "validation perplexity and exp(training loss)" 1 "top right" "${all[@]}"
    figure ppl_tokens.png 2 "training tokens" "perplexity (log)" "validation perplexity and exp(training loss)" 1 "top right" "${all[@]}"
  fi
  [ $any_acc = 1 ] && figure acc_steps.png 1 step "validation accuracy" "validation accuracy" 0 "bottom right" "${acc_el[@]}"
  # runs of different tokenizers: per byte (or per word when a run's bytes are not known)
  if [ "$(printf '%s\n' "${tokenizers[@]}" | sort -u | wc -l)" -gt 1 ]; then
    if [ ${#nobytes[@]} -eq 0 ]; then
      figure bpb_steps.png 1 step "validation bits per byte" "validation bits per byte (the runs differ in tokenizer)" 0 "top right" "${bpb_el[@]}"
    else
      echo "bits per byte not drawn: no valid split bytes in the data's meta.json of ${nobytes[*]} (RUN/data.json path_abs); word-level perplexity drawn instead"
      figure wordppl_steps.png 1 step "word-level perplexity (log)" "validation word-level perplexity (the runs differ in tokenizer)" 1 "top right" "${wppl_el[@]}"
    fi
  fi
fi

k=0; rel=()
for f in "${routing[@]+"${routing[@]}"}"; do
  [ -f "$f" ] || die "$f: no such file"
  [ -s "$f" ] || die "$f: empty file"
  label=$(label_of "$f" "$(basename "$(dirname "$(readlink -f "$f")")")"); name=$(file_name "$label")
  heads=$(routing_shares "$f" "$stage/$name.routing.dat") || exit 2
  written+=("$name.routing.dat")
  col=${colours[$((k % ${#colours[@]}))]}; k=$((k + 1))
  rel+=("$(gp_quote "$name.routing.dat") using 1:(\$2 > 0 ? \$2 : NaN) with linespoints lw 2 pt 7 ps 0.6 lc rgb '#$(printf %06x $col)' title $(gp_quote "$label ($heads)")")
done
[ ${#rel[@]} -gt 0 ] && figure utilisation.png 1 "component rank (by share, within each head)" \
  "share of tokens (log)" "routing utilisation per variant (mean over layers and heads)" 1 "top right" "${rel[@]}"

for f in "${written[@]}"; do mv -f "$stage/$f" "$out/$f"; echo "$out/$f"; done
made=""
if ! command -v "${GNUPLOT:-gnuplot}" > /dev/null 2>&1; then
  echo "gnuplot not found: plots skipped (apt-get install gnuplot-nox)"
  exit 0
fi
[ ${#pngs[@]} -gt 0 ] || exit 0
# gnuplot's warnings about a range of one point (a run with one evaluation) are dropped
(cd "$out" && "${GNUPLOT:-gnuplot}" plots.gp) 2> "$stage/gnuplot.err" ||
  { cat "$stage/gnuplot.err" >&2; echo "$0: gnuplot failed on $out/plots.gp" >&2; exit 1; }
grep -v '^Warning: empty [xy] range' "$stage/gnuplot.err" >&2 || true
for f in "${pngs[@]}"; do echo "$f"; done
