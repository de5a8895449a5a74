#!/usr/bin/env bash
# check_plot_runs.sh: the check of scripts/plot_runs.sh and of lib_reproduce.sh's md_table
# (run by `make test`). Trains two tiny runs of configs/quickstart.json (gma and sdpa, 40
# steps), analyses the gma one (gmaeval --analyze: its plots.gp draws the heatmap on a
# defined palette over [0:1] and one line per layer), plots both with the routing figure and
# checks: the files it names exist, each .dat has one row per training / validation row of
# its metrics.jsonl, the PNGs start with the PNG signature; a run of one training row is
# drawn with points (a line through one point is not drawn); without gnuplot (GNUPLOT=a
# missing program) the .dat files and plots.gp are written, no PNG, exit 0; a RUN without
# metrics.jsonl, an empty metrics.jsonl and a malformed line exit 2 with one line naming
# the file (and line) and leave the output directory as it was; runs of different tokenizers
# get validation bits per byte (each data's meta.json), or word-level perplexity with one
# line when a run's data is not there. When gnuplot is not
# installed the PNG checks are skipped with a "SKIP: " line (the rest still runs).
set -u
cd "$(dirname "$0")/.."
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0
fail() { echo "FAIL: plot-runs: $*"; fails=$((fails + 1)); }
train() {
  bin/gmatrain --config configs/quickstart.json --out "$t/$1" --quiet --set threads=1 --set train.steps=40 \
    --set train.eval_every=20 --set train.log_every=10 --set train.checkpoint_every=0 --set gma.monitor_every=20 \
    "${@:2}" > "$t/$1.log" 2>&1 || { echo "FAIL: plot-runs: bin/gmatrain $1 (see below)"; cat "$t/$1.log"; exit 1; }
}
train gma
train sdpa --set model.mixer=sdpa
OMP_NUM_THREADS=1 bin/gmaeval --checkpoint "$t/gma" --data valid --analyze \
  --analyze-json "$t/gma/valid.analysis.json" > "$t/analyze.log" 2>&1 || { fail "gmaeval --analyze"; cat "$t/analyze.log"; }

# gmaeval's own figures: a defined palette on [0:1] for the heatmap, one line per layer
ap="$t/gma/valid.analysis_plots"
grep -q "^set palette defined" "$ap/plots.gp" && grep -q "^set cbrange \[0:1\]" "$ap/plots.gp" \
  || fail "$ap/plots.gp: the heatmap has no defined palette on cbrange [0:1]"
[ "$(grep -o "with linespoints" "$ap/plots.gp" | wc -l)" = 2 ] && ! grep -q "with boxes" "$ap/plots.gp" \
  || fail "$ap/plots.gp: utilisation is not one line with points per layer (2 layers)"

# rows: the number of training rows (no "split", no "event") or validation rows of a metrics.jsonl
train_rows() { grep '"loss"' "$1" | grep -v '"split"' | grep -vc '"event"'; }
valid_rows() { grep -c '"split":"valid"' "$1"; }
data_rows() { grep -vc '^#' "$1"; }
png_ok() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }

have_gnuplot=1; command -v gnuplot > /dev/null 2>&1 || have_gnuplot=0
out="$t/plots"
scripts/plot_runs.sh --out "$out" --title check --label G="$t/gma" "$t/gma" "$t/sdpa/" \
  --routing "$t/gma/valid.analysis.json" > "$t/plot.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { fail "plot_runs.sh exit $rc"; cat "$t/plot.log"; }
for r in G:gma sdpa:sdpa; do
  name=${r%%:*}; m="$t/${r#*:}/metrics.jsonl"
  [ "$(data_rows "$out/$name.train.dat")" = "$(train_rows "$m")" ] || fail "$name.train.dat rows != training rows of $m"
  [ "$(data_rows "$out/$name.valid.dat")" = "$(valid_rows "$m")" ] || fail "$name.valid.dat rows != validation rows of $m"
  [ "$(train_rows "$m")" -ge 4 ] && [ "$(valid_rows "$m")" -ge 2 ] || fail "$m: fewer rows than the run should log"
done
[ "$(data_rows "$out/gma.routing.dat")" = 32 ] || fail "gma.routing.dat: not one row per component (32)"
grep -q "title 'G'" "$out/plots.gp" || fail "plots.gp: no legend entry for --label G"
pngs="loss_steps loss_tokens ppl_steps ppl_tokens acc_steps utilisation"
while read -r f; do [ -f "$f" ] || fail "$f printed but not written"; done < <(grep "^$out/" "$t/plot.log")
if [ $have_gnuplot = 1 ]; then
  for p in "$ap/utilisation.png" "$ap/heatmap.png"; do png_ok "$p" || fail "$p: missing or not a PNG"; done
  for p in $pngs; do
    png_ok "$out/$p.png" || fail "$p.png: missing or not a PNG"
    grep -qx "$out/$p.png" "$t/plot.log" || fail "$p.png not printed"
  done
fi

# a run of one training row (and no validation row): drawn as a point, not as a line that
# gnuplot leaves out for a single point; its PNG written
mkdir -p "$t/one"
grep '"loss"' "$t/gma/metrics.jsonl" | grep -v '"split"' | grep -v '"event"' | head -1 > "$t/one/metrics.jsonl"
cp "$t/gma/config.json" "$t/one/"
scripts/plot_runs.sh --out "$t/oneplot" "$t/one" > "$t/one.log" 2>&1 || { fail "one-row run: exit $?"; cat "$t/one.log"; }
[ "$(data_rows "$t/oneplot/one.train.dat")" = 1 ] || fail "one-row run: one.train.dat is not one row"
grep -q "'one.train.dat' using 1:3 with points" "$t/oneplot/plots.gp" || fail "one-row run: its training loss is not drawn with points"
[ $have_gnuplot = 0 ] || png_ok "$t/oneplot/loss_steps.png" || fail "one-row run: loss_steps.png missing or not a PNG"

# runs of different tokenizers (RUN/data.json): validation bits per byte from each data's
# meta.json (loss x valid tokens / valid bytes / ln 2); a run whose data is not there: one
# line, and the word-level perplexity instead; runs of one tokenizer: neither figure
for k in A:bytes:1000 B:gpt2:250; do
  IFS=: read -r n tk tok <<< "$k"
  mkdir -p "$t/tk$n" "$t/data$n"
  { cat "$t/gma/metrics.jsonl"; echo '{"step":40,"split":"valid","loss":2,"ppl":7.389,"word_ppl":20.5,"tokens":99}'; } > "$t/tk$n/metrics.jsonl"
  cp "$t/gma/config.json" "$t/tk$n/"
  printf '{\n\t"path":\t"x",\n\t"path_abs":\t"%s",\n\t"tokenizer":\t"%s",\n\t"tokenizer_files":\t[]\n}\n' "$t/data$n" "$tk" > "$t/tk$n/data.json"
  printf '{\n\t"splits":\t{\n\t\t"train":\t{\n\t\t\t"tokens":\t7,\n\t\t\t"bytes":\t9\n\t\t},\n\t\t"valid":\t{\n\t\t\t"tokens":\t%s,\n\t\t\t"words":\t200,\n\t\t\t"bytes":\t1000\n\t\t}\n\t}\n}\n' "$tok" > "$t/data$n/meta.json"
done
scripts/plot_runs.sh --out "$t/tkplot" "$t/tkA" "$t/tkB" > "$t/tk.log" 2>&1 || { fail "two tokenizers: exit $?"; cat "$t/tk.log"; }
grep -q "'tkA.valid.dat' using 1:(\$3\*1.442695041) " "$t/tkplot/plots.gp" && grep -q "'tkB.valid.dat' using 1:(\$3\*0.3606737602) " "$t/tkplot/plots.gp" \
  && grep -q "^set output 'bpb_steps.png'" "$t/tkplot/plots.gp" && ! grep -q wordppl "$t/tkplot/plots.gp" \
  || { fail "two tokenizers: no bits-per-byte figure (tokens / bytes / ln 2 of each run)"; cat "$t/tkplot/plots.gp"; }
[ "$(tail -1 "$t/tkplot/tkA.valid.dat")" = "40 $(tail -1 "$t/tkplot/tkA.valid.dat" | cut -d' ' -f2) 2 7.389 ? 20.5" ] \
  || fail "tkA.valid.dat: the word ppl column: $(tail -1 "$t/tkplot/tkA.valid.dat")"
[ $have_gnuplot = 0 ] || png_ok "$t/tkplot/bpb_steps.png" || fail "bpb_steps.png missing or not a PNG"
rm "$t/dataB/meta.json"
scripts/plot_runs.sh --out "$t/tkplot2" "$t/tkA" "$t/tkB" > "$t/tk2.log" 2>&1 || { fail "no bytes: exit $?"; cat "$t/tk2.log"; }
grep -q "^bits per byte not drawn: no valid split bytes in the data's meta.json of $t/tkB " "$t/tk2.log" \
  && grep -q "^set output 'wordppl_steps.png'" "$t/tkplot2/plots.gp" && grep -q "'tkB.valid.dat' using 1:6 " "$t/tkplot2/plots.gp" \
  && ! grep -q bpb_steps "$t/tkplot2/plots.gp" || { fail "no bytes: not the word-level perplexity with one line"; cat "$t/tk2.log"; }
grep -q "bpb_steps\|wordppl_steps" "$out/plots.gp" && fail "runs of one tokenizer: a per-byte or per-word figure"

# without gnuplot: data and script, no PNG, exit 0
GNUPLOT=/nonexistent scripts/plot_runs.sh --out "$t/nognu" "$t/gma" > "$t/nognu.log" 2>&1 || fail "without gnuplot: exit $?"
grep -qx "gnuplot not found: plots skipped (apt-get install gnuplot-nox)" "$t/nognu.log" || fail "without gnuplot: no notice"
[ -f "$t/nognu/plots.gp" ] && [ -f "$t/nognu/gma.train.dat" ] || fail "without gnuplot: plots.gp or gma.train.dat missing"
ls "$t/nognu" | grep -q '\.png$' && fail "without gnuplot: a PNG was written"

# bad input: exit 2, one line naming the file (and line), the output directory untouched
before=$(ls -l --time-style=+%s.%N "$out" | md5sum)
bad() { # WHAT EXPECTED-TEXT ARGS...
  local what="$1" want="$2" rc
  shift 2
  scripts/plot_runs.sh --out "$out" "$@" > "$t/bad.log" 2>&1
  rc=$?
  [ $rc -eq 2 ] || fail "$what: exit $rc, not 2"
  grep -qF -- "$want" "$t/bad.log" || { fail "$what: no line naming $want"; cat "$t/bad.log"; }
  [ "$(grep -c . "$t/bad.log")" = 1 ] || { fail "$what: not one line"; cat "$t/bad.log"; }
}
mkdir -p "$t/none" "$t/empty" "$t/broken"
: > "$t/empty/metrics.jsonl"
{ head -2 "$t/gma/metrics.jsonl"; echo '{"step":30,"loss":2.5,}'; } > "$t/broken/metrics.jsonl"
cp "$t/gma/config.json" "$t/broken/"
bad "no metrics.jsonl" "$t/none/metrics.jsonl" "$t/gma" "$t/none"
bad "empty metrics.jsonl" "$t/empty/metrics.jsonl" "$t/empty"
bad "malformed line" "$t/broken/metrics.jsonl:3:" "$t/gma" "$t/broken"
bad "not an analysis file" "$t/gma/config.json:" --routing "$t/gma/config.json"
bad "unknown option" 'unknown option "--bogus"' --bogus
bad "a near miss of an option" 'unknown option "--titel" (did you mean --title?)' --titel T
[ "$(ls -l --time-style=+%s.%N "$out" | md5sum)" = "$before" ] || fail "bad input changed $out"
ls -a "$out" | grep -q '^\.plot_runs' && fail "a staging directory was left in $out"

# md_table: the whitespace table as Markdown, a two-word last header, numbers right-aligned
printf "%-6s %8s %10s\n" mixer ppl "LRA paper" gma 12.5 -- > "$t/tab.txt"
( . scripts/lib_reproduce.sh; md_table "$t/tab.txt" "$t/tab.md" )
printf '%s\n' "| mixer | ppl | LRA paper |" "|---|---:|---:|" "| gma | 12.5 | -- |" | cmp -s - "$t/tab.md" \
  || { fail "md_table output"; cat "$t/tab.md"; }

[ $have_gnuplot = 1 ] || echo "SKIP: plot-runs: gnuplot not found, the PNG checks skipped (apt-get install gnuplot-nox)"
[ $fails -eq 0 ] && echo "plot-runs: ok" || { echo "plot-runs: $fails failures"; exit 1; }
