#!/usr/bin/env bash
# reproduce_mqar.sh: Zoology's multi-query associative recall sweep (docs/mqar.md) on
# configs/mqar.json: every mixer at every width and learning rate, trained on mixed lengths
# and tested at each test length (gmaeval --data test --seq-len N); the best learning rate
# per (mixer, width) is the point reported, as Zoology reports the best of its sweep.
#   scripts/reproduce_mqar.sh [--profile small|paper] [--mixers LIST] [--widths LIST]
#                             [--lrs LIST] [--steps N] [--threads N] [--jobs N] [--device D]
#                             [--seeds LIST] [--set KEY=VALUE]... [--out DIR] [--force]
#                             [--dry-run] [--collect]
#   scripts/reproduce_mqar.sh --table RESULTS.json   (the table and plots again from it)
#   --profile P   small (default): a sweep sized for 2 CPU cores (below); paper: Zoology's
#                 mixed-length sizes, for a GPU; zoology64: Zoology's own budget at its
#                 (length 64, 4 pairs) point, for a GPU (below)
#   --mixers LIST mixer tokens [bc-]NAME[+sc][+nopos][+pp], NAME among sdpa swaW gma16
#                 gma64 gma256 linear performer mamba hybrid gdn deltanet gla (swaW: sdpa
#                 with sdpa.window W, sliding-window attention; gmaK: gma with Kc = K;
#                 hybrid: layers sdpa then gma with Kc 64; deltanet and gla: gdn without
#                 its decay or its delta rule). NAME alone: two layers of it with learned
#                 positions (Zoology's Figure 2 build); bc-NAME: layer 0 baseconv, layer 1
#                 NAME, no positions (the Hybrid that every sub-quadratic model of Zoology's
#                 models_repo.py is); +sc: model.short_conv 4 (q, k, v through a kernel-4
#                 causal convolution and SiLU, as flash-linear-attention's mixers); +nopos:
#                 no positions; +pp: the field's block recipe (model.norm rmsnorm,
#                 model.mlp_act swiglu, model.tie_embeddings false and, unless the build
#                 has no positions, model.pos rope). Default (small, zoology64): sdpa bc-sdpa bc-gma16 bc-gma64
#                 bc-linear mamba+nopos and the bc- ones again with +sc; paper adds
#                 bc-gma256 and bc-gma256+sc
#   --widths LIST model.d_model values, run in this order (paper 64 128 256; small and
#                 zoology64 64)
#   --lrs LIST    train.lr values (paper and zoology64 1e-4 4.6e-4 2.2e-3 1e-2, Zoology's
#                 logspace(-4, -2, 4); small 2.2e-3 1e-2)
#   --steps N     train.steps of every run (paper 22500: 32 epochs of Zoology's 180,000
#                 training examples in batches of 256; zoology64 12500: 64 epochs of 100,000
#                 in batches of 512; small 1500 of 64)
#   --threads N   threads of every run (paper 2; small 1)
#   --jobs N      runs at once (paper 1; small 2: two runs of one thread use 2 cores better
#                 than one of two threads at these sizes)
#   --seeds LIST  the config's seed of the runs (default 1): the weights' initialisation,
#                 dropout, and the generated train, valid and test examples all change with
#                 it. The first seed of LIST runs the whole grid; each further seed S runs,
#                 for each (mixer, width), only the best learning rate of the first seed (the
#                 choice is made once, on the first seed, as Zoology picks it from its sweep),
#                 after the first seed's grid is done, in DIR/<mixer>-d<width>-lr<lr>-s<S>/
#                 (seed 1's runs keep the names without -s1). The best row of each point is
#                 then the mean over the seeds run at that lr, with its min and max
#   --set K=V     a config key for every run, after the profile's (repeatable; e.g.
#                 data.mqar_test=64 for fewer test examples)
#   --out DIR     where the runs and results go (default runs/mqar)
#   --force       train again a run folder made with other options (or not by this script)
#   --dry-run     print the first seed's runs (one gmatrain line each), and how many the
#                 other seeds add once the first seed's best lr is known, and exit
#   --collect     train nothing: DIR/results.json and the table from the runs of the grid
#                 already done in DIR (the points not run are listed as such)
# Profiles (data.* keys of docs/mqar.md): paper: vocabulary 8192, Zoology's mixed lengths:
# trains on (length, pairs) (64, 4), (128, 8), (256, 16), (256, 32), (256, 64) in batches of
# 256 and tests on (64, 4), (64, 8), (64, 16), (128, 32), (256, 64), (512, 128), reported per
# length (64 the mean of its three); zoology64: vocabulary 8192, trains and tests on (64, 4)
# in batches of 512 for 12,500 steps (Figure 2's 64 epochs of a fixed set of 100,000
# examples, data.mqar_train), validated on 3,000 every epoch (195 steps) and stopped early
# above 0.99 (train.stop_acc), as Zoology's trainer (docs/mqar.md); small: vocabulary 256 (8192 costs
# about 8 times as much a step here: the output head over every position), trains on
# length 64 with 4 pairs in batches of 64 for 1500 steps and tests at 64 and 128 (4 and 8
# pairs, 1000 examples each), width 64: 20 runs a seed, two at a time (docs/mqar.md,
# "Profiles", gives their CPU time).
# The page (DIR/results.md) states the command, budget and seeds, and the no-lookup rule: a
# model that knows which tokens are values but looks nothing up scores 1/P at P pairs; a run
# has left that plateau when its accuracy at some test length is at least 0.1 above 1/P
# there, and when no run has, the page says that the sweep ranks nothing.
# The runs go width by width in the order given and, within a width, learning rate by
# learning rate (every mixer at the first lr before any at the second), so a sweep stopped
# part way has every mixer at the (width, lr) pairs it reached.
# A run already done in DIR (its row.json there) is not trained again, a run stopped part
# way is resumed (docs/reproducing.md, "Reruns"); DIR/results.json is written after every run,
# so a sweep stopped part way still has its table, and holds the rows of every run in DIR
# (those of other calls too: a sweep over other mixers or widths adds to it).
# Writes DIR/<mixer>-d<width>-lr<lr>/ (seed 1; -s<S> added for any other seed: the run,
# test_<N>.json, row.json with its "seed"; a row without "seed" is seed 1), DIR/results.json
# (the grid, the seeds, every run done, and the best per point: its accuracies the mean over
# the seeds run at the first seed's best lr, "seeds" their number, "acc_min"/"acc_max" and
# "mean_acc_min"/"mean_acc_max" the spread over them), DIR/results.md (the table of the best:
# accuracy per test length, "mean (min-max)" where more than one seed ran, and the seeds,
# against width and against the mixer's recurrent state in bytes),
# DIR/mqar_width.dat, DIR/mqar_state.dat, DIR/mqar.gp and, with gnuplot, DIR/mqar_width.png,
# DIR/mqar_state.png. State bytes (fp32, one sequence, both layers; docs/mqar.md): sdpa its
# key-value cache 2 N d a layer at the longest test length N; gma Kc (d + 1) a head (the
# sums S and z); linear d (d + 1); performer 2d (d + 1); mamba 2d (16 + 3); hybrid one
# sdpa layer and one gma Kc 64 layer.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
profile=small; mixers=""; widths=""; lrs=""; seeds=1; steps=""; threads=""; jobs=""; device=""; out=runs/mqar; dry=0; collect=0; table=""; user_sets=""
# the mixer tokens of each profile (their grammar: mixer_sets below)
known_names="sdpa gma16 gma64 gma256 linear performer mamba hybrid gdn deltanet gla"
plain="sdpa gma16 gma64 gma256 linear performer mamba hybrid"
zoology="sdpa bc-sdpa bc-gma16 bc-gma64 bc-linear mamba+nopos bc-sdpa+sc bc-gma16+sc bc-gma64+sc bc-linear+sc"
usage="[--profile small|paper|zoology64] [--mixers LIST] [--widths LIST] [--lrs LIST] [--seeds LIST] [--steps N] [--threads N] [--jobs N] [--device D] [--set K=V]... [--out DIR] [--force] [--dry-run] [--collect] | --table RESULTS.json"
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) need_value "$@"; profile="$2"; shift 2;;
    --mixers) need_value "$@"; mixers="$2"; shift 2;;
    --widths) need_value "$@"; widths="$2"; shift 2;;
    --lrs) need_value "$@"; lrs="$2"; shift 2;;
    --seeds) need_value "$@"; seeds="$2"; shift 2;;
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
    --force) force=1; shift;;
    --help|-h) script_help; exit 0;;
    *) unknown_option "$1" "$usage --help";;
  esac
done

# state_bytes TOKEN WIDTH: the fp32 recurrent state of one sequence over the two layers of
# configs/mqar.json (one head: d = WIDTH; docs/mqar.md, "Recurrent state in bytes"): sdpa its
# key-value cache 2 N d a layer at the longest test length N; gma Kc (d + 1) a head (the
# core's S [Kc,d] and z [Kc]); linear d (d + 1); performer m (d + 1), m = 2 d features;
# mamba expand d (d_state + d_conv - 1) (scan and convolution); hybrid one sdpa layer and one
# gma Kc 64 layer; gdn its S [d, d] and convolution rows; a bc- token one such layer and the
# baseconv layer's 2 d; model.short_conv K 3 (K - 1) d more in each layer that takes it; a
# --set gma.window=W the ring of min(W, n) key and value rows of each gma layer
state_bytes() {
  local d=$2 n=$test_max layers=2 b
  token_parts "$1" || return 1
  [ $tk_bc = 0 ] || layers=1
  case "$tk_name" in
    sdpa) b=$((layers * 4 * 2 * n * d));;
    swa*) local w=${tk_name#swa}; [ "$w" -le "$n" ] || w=$n; b=$((layers * 4 * 2 * w * d));; # its ring cache of W rows
    gma*) b=$((layers * 4 * ${tk_name#gma} * (d + 1)));;
    linear) b=$((layers * 4 * d * (d + 1)));;
    performer) b=$((layers * 4 * 2 * d * (d + 1)));;
    mamba) b=$((layers * 4 * 2 * d * (16 + 3)));;
    hybrid) b=$((4 * 2 * n * d + 4 * 64 * (d + 1)));;
    gdn|deltanet|gla) b=$((layers * 4 * (d * d + 3 * 3 * d)));; # S [d, d] and its kernel-4 convolution's last 3 rows of q, k, v
  esac
  # the baseconv layer keeps its kernel-3 convolution's last 2 input rows; model.short_conv K
  # (4 with +sc, else a --set of it) the last K - 1 rows of q, k and v in each layer that has it
  [ $tk_bc = 0 ] || b=$((b + 4 * 2 * d))
  local k
  k=$(printf '%s\n' "$user_sets" | sed -n 's/.*model\.short_conv=\([0-9][0-9]*\).*/\1/p')
  [ $tk_sc = 0 ] || k=4
  case "$tk_name" in mamba|gdn|deltanet|gla) k="";; esac # their own convolutions, counted above
  [ -z "$k" ] || [ "$k" -le 1 ] || b=$((b + layers * 4 * 3 * (k - 1) * d))
  # gma.window W (a --set of it): each gma layer's ring of min(W, n) key and value rows
  local w
  w=$(printf '%s\n' "$user_sets" | sed -n 's/.*gma\.window=\([0-9][0-9]*\).*/\1/p')
  case "$tk_name" in gma*) [ -z "$w" ] || { [ "$w" -le "$n" ] || w=$n; b=$((b + layers * 4 * 2 * w * d)); };; esac
  echo $b
}
# token_parts TOKEN: a mixer token [bc-]NAME[+sc][+nopos] into tk_bc, tk_name, tk_sc,
# tk_nopos, tk_pp; 1 when it is not one (NAME among known_names, or swaW with W > 0)
token_parts() {
  local rest=$1 mods m
  tk_bc=0; tk_sc=0; tk_nopos=0; tk_pp=0
  case "$rest" in bc-*) tk_bc=1; rest=${rest#bc-};; esac
  tk_name=${rest%%+*}; mods=${rest#"$tk_name"}
  case "$tk_name" in
    swa[1-9]*) case "${tk_name#swa}" in *[!0-9]*) return 1;; esac;;
    *) case " $known_names " in *" $tk_name "*) ;; *) return 1;; esac;;
  esac
  for m in $(echo "$mods" | tr '+' ' '); do
    case "$m" in sc) tk_sc=1;; nopos) tk_nopos=1;; pp) tk_pp=1;; *) return 1;; esac
  done
  [ "$tk_name" != hybrid ] || [ "$1" = hybrid ]
}
# mixer_sets TOKEN: the --set options of a mixer token. NAME: both layers NAME with learned
# positions (Zoology's Figure 2 build; hybrid: sdpa then gma Kc 64); bc-NAME: layer 0
# baseconv, layer 1 NAME, no positions (the Hybrid of every sub-quadratic model in Zoology's
# models_repo.py); +sc: model.short_conv 4 (q, k, v through a kernel-4 causal convolution
# and SiLU, as flash-linear-attention's mixers); +nopos: no positions
mixer_sets() {
  local one sets=""
  token_parts "$1" || return 1
  case "$tk_name" in
    sdpa) one="sdpa"; sets=" --set model.attn_dropout=0.1";; # Zoology's MHA dropout
    swa*) one="sdpa"; sets=" --set model.attn_dropout=0.1 --set sdpa.window=${tk_name#swa}";;
    linear|performer|mamba) one="$tk_name";;
    gma16|gma64|gma256) one="gma"; sets=" --set gma.n_components=${tk_name#gma}";;
    hybrid) echo "--set model.mixer=sdpa,gma --set gma.n_components=64"; return 0;;
    gdn) one="gdn";;
    deltanet) one="gdn"; sets=" --set gdn.decay=false";;
    gla) one="gdn"; sets=" --set gdn.delta=false";;
  esac
  if [ $tk_bc = 0 ] && [ $tk_nopos = 0 ]; then [ $tk_pp = 0 ] || sets="$sets --set model.pos=rope"
  else sets="$sets --set model.pos=none"; fi
  [ $tk_pp = 0 ] || sets="$sets --set model.norm=rmsnorm --set model.mlp_act=swiglu --set model.tie_embeddings=false"
  [ $tk_sc = 0 ] || sets="$sets --set model.short_conv=4"
  if [ $tk_bc = 1 ]; then echo "--set model.mixer=baseconv,$one$sets"; else echo "--set model.mixer=$one$sets"; fi
}
# best_rows FIRST: of the run rows on stdin (one JSON object a line, as results.json's
# "runs"; a row without "seed" is seed 1), the best of each (mixer, width): the learning rate
# of seed FIRST's rows with the highest mean accuracy over the test lengths (the first on a
# tie), in the order the points first appear among them; its accuracies the mean over every
# row of the point at that lr (each seed), "seeds" their number, "seed_list" the seeds, and
# "acc_min", "acc_max", "mean_acc_min", "mean_acc_max" the spread over them
best_rows() {
  awk -v first="$1" '
    function num(s, k) { if (!match(s, "\"" k "\": [-0-9.eE+]+")) return ""; s = substr(s, RSTART, RLENGTH); sub(/.*: /, "", s); return s }
    function str(s, k) { if (!match(s, "\"" k "\": \"[^\"]*\"")) return ""; s = substr(s, RSTART, RLENGTH); sub(/.*: "/, "", s); sub(/"$/, "", s); return s }
    # obj S K OUT TRACK: the numbers of the object "K": {...} of S into OUT by key (TRACK:
    # the keys in order into keys[]), their count
    function obj(s, k, out, track,   a, i, kv, parts, nk) { for (i in out) delete out[i]
      if (!match(s, "\"" k "\": \\{[^}]*\\}")) return 0; a = substr(s, RSTART, RLENGTH)
      sub(/^[^{]*\{/, "", a); sub(/\}$/, "", a); nk = split(a, parts, ", ")
      for (i = 1; i <= nk; i++) { split(parts[i], kv, ": "); gsub(/"/, "", kv[1]); out[kv[1]] = kv[2]; if (track) keys[i] = kv[1] } return nk }
    function list(s, a, i) { for (i = 1; i <= n_acc; i++) s = s (i > 1 ? ", " : "") sprintf("\"%s\": %.6g", keys[i], a[keys[i]]); return s }
    { sub(/,$/, ""); row[NR] = $0; sd[NR] = num($0, "seed"); if (sd[NR] == "") sd[NR] = 1
      key[NR] = str($0, "mixer") " " num($0, "width"); lr[NR] = num($0, "lr")
      if (sd[NR] + 0 != first + 0) next
      a = num($0, "mean_acc"); k = key[NR]
      if (!(k in b) || a + 0 > b[k] + 0) { b[k] = a; br[k] = NR }
      if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
    END {
      for (q = 1; q <= n; q++) {
        r0 = br[order[q]]; n_acc = obj(row[r0], "acc", acc0, 1); c = 0; sl = ""
        for (i in sum) { delete sum[i]; delete lo[i]; delete hi[i] }
        for (r = 1; r <= NR; r++) {
          if (key[r] != order[q] || lr[r] + 0 != lr[r0] + 0) continue
          obj(row[r], "acc", ac, 0); m = num(row[r], "mean_acc") + 0; c++; sl = sl (c > 1 ? ", " : "") sd[r]
          for (i = 1; i <= n_acc; i++) { L = keys[i]; v = ac[L] + 0; sum[L] += v; if (c == 1 || v < lo[L]) lo[L] = v; if (c == 1 || v > hi[L]) hi[L] = v }
          msum += m; if (c == 1 || m < mlo) mlo = m; if (c == 1 || m > mhi) mhi = m
        }
        for (i = 1; i <= n_acc; i++) mean[keys[i]] = sum[keys[i]] / c
        printf "    {\"mixer\": \"%s\", \"width\": %s, \"lr\": %s, \"state_bytes\": %s, \"steps\": %s, \"seeds\": %d, \"seed_list\": [%s], ", \
          str(row[r0], "mixer"), num(row[r0], "width"), lr[r0], num(row[r0], "state_bytes"), num(row[r0], "steps"), c, sl
        printf "\"acc\": {%s}, \"acc_min\": {%s}, \"acc_max\": {%s}, ", list("", mean), list("", lo), list("", hi)
        printf "\"mean_acc\": %.6g, \"mean_acc_min\": %.6g, \"mean_acc_max\": %.6g, \"run\": \"%s\"}\n", msum / c, mlo, mhi, str(row[r0], "run")
        msum = 0
      }
    }'
}
# first_seed RESULTS: the first of RESULTS' "seeds" list (1 where it has none: written before
# --seeds)
first_seed() { local f; f=$(sed -n 's/.*"seeds": \[ *\([0-9][0-9]*\).*/\1/p' "$1" | head -1); echo "${f:-1}"; }

# rule_mean RESULTS: the mean over the test lengths of RESULTS' "no_lookup" accuracies (1/P),
# 0 when it has none (written before they were recorded)
rule_mean() {
  sed -n 's/.*"no_lookup": {\([^}]*\)}.*/\1/p' "$1" | head -1 \
    | awk -F', ' '{ for (i = 1; i <= NF; i++) { split($i, kv, ": "); s += kv[2]; n++ } } END { printf "%.6g\n", n ? s / n : 0 }'
}
# page_frame RESULTS PAGE: PAGE (the table alone) framed: before it the command, budget and
# seeds, the no-lookup rule; after it which runs left the plateau (a run has left it when its
# accuracy at some test length is at least 0.1 above 1/P there), or that none did, so the
# sweep ranks nothing
page_frame() {
  local res=$1 page=$2 field
  field() { sed -n "s/.*\"$1\": \([^,]*\),.*/\1/p" "$res" | head -1 | tr -d '"'; }
  {
    local cmd when where seeds_run vocab batch
    cmd=$(sed -n 's/.*"command": "\([^"]*\)".*/\1/p' "$res" | head -1)
    when=$(sed -n 's/.*"date": "\([^"]*\)".*/\1/p' "$res" | head -1); where=$(sed -n 's/.*"machine": "\([^"]*\)".*/\1/p' "$res" | head -1)
    seeds_run=$(sed -n 's/.*"seeds": \[\([^]]*\)\].*/\1/p' "$res" | head -1); vocab=$(field vocab); batch=$(field batch)
    echo "# MQAR sweep: profile $(field profile)"
    echo
    if [ -n "$cmd" ]; then echo "Command: \`$cmd\` (${when:-date not recorded}, ${where:-machine not recorded})."; else echo "Command: not recorded in this results.json."; fi
    echo "Budget: $(field steps) steps$( [ -z "$batch" ] || echo " of $batch examples ($(( $(field steps) * batch )) training examples a run)")$( [ -z "$vocab" ] || echo ", vocabulary $vocab"); seeds: ${seeds_run:-1}. Each point is the first seed's best learning rate; with more seeds a cell is \"mean (min-max)\" over them."
    echo
    if grep -q '"no_lookup"' "$res"; then
      echo "No-lookup rule: a model that knows which tokens are values but looks nothing up scores 1/P at P pairs: $(sed -n 's/.*"no_lookup": {\([^}]*\)}.*/\1/p' "$res" | head -1 | sed 's/"\([0-9]*\)": \([0-9.e-]*\)/\2 at length \1/g'). A run has left this plateau when its accuracy at some test length is at least 0.1 above 1/P there."
    else
      echo "No-lookup rule: not recorded in this results.json (written before it was); 1/P at P pairs."
    fi
    echo
    cat "$page"
    echo
    sed -n '/"runs": \[/,/^ *\]/p' "$res" | grep '"mixer"' | awk -v rules="$(sed -n 's/.*"no_lookup": {\([^}]*\)}.*/\1/p' "$res" | head -1)" '
      function str(k,   s) { if (!match($0, "\"" k "\": \"[^\"]*\"")) return ""; s = substr($0, RSTART, RLENGTH); sub(/.*: "/, "", s); sub(/"$/, "", s); return s }
      BEGIN { n = split(rules, r, ", "); for (i = 1; i <= n; i++) { split(r[i], kv, ": "); gsub(/"/, "", kv[1]); rule[kv[1]] = kv[2] + 0 } }
      { m = str("mixer"); if (!(m in tot)) order[++nm] = m; tot[m]++
        if (!match($0, /"acc": \{[^}]*\}/)) next
        a = substr($0, RSTART, RLENGTH); sub(/^[^{]*\{/, "", a); sub(/\}$/, "", a); k = split(a, p, ", "); up = 0
        for (i = 1; i <= k; i++) { split(p[i], kv, ": "); gsub(/"/, "", kv[1]); if ((kv[1] in rule) && kv[2] + 0 >= rule[kv[1]] + 0.1) up = 1 }
        left[m] += up }
      END {
        if (n == 0) { print "Plateau: no rule recorded, so no verdict."; exit }
        s = ""; c = 0
        for (q = 1; q <= nm; q++) if (left[order[q]] > 0) { s = s (c++ ? ", " : "") order[q] " (" left[order[q]] " of " tot[order[q]] " runs)" }
        if (c == 0) print "**No mixer left the plateau: this run ranks nothing.** Every accuracy is within 0.1 of the no-lookup rule; differences between mixers here are noise, not recall."
        else print "Left the plateau: " s "; every other mixer stayed on it (runs counted over every learning rate and seed)." }'
  } > "$page.tmp.$$"
  mv "$page.tmp.$$" "$page"
}
# write_table RESULTS: DIR/results.md, the .dat files and mqar.gp beside RESULTS (and the
# PNGs with gnuplot) from the best of its "runs" rows (best_rows of its first seed), one a
# line as this script writes them
write_table() {
  local res="$1" dir
  dir=$(dirname "$res")
  [ -f "$res" ] || { echo "$0: $res: no such file" >&2; exit 2; }
  grep -q '"runs": \[' "$res" || { echo "$0: $res: no \"runs\" list (not written by reproduce_mqar.sh)" >&2; exit 2; }
  awk -v md="$dir/results.md" -v wd="$dir/mqar_width.dat" -v sd="$dir/mqar_state.dat" '
    function num(k,   s) { if (!match($0, "\"" k "\": [-0-9.eE+]+")) return ""; s = substr($0, RSTART, RLENGTH); sub(/.*: /, "", s); return s }
    function str(k,   s) { if (!match($0, "\"" k "\": \"[^\"]*\"")) return ""; s = substr($0, RSTART, RLENGTH); sub(/.*: "/, "", s); sub(/"$/, "", s); return s }
    function obj(k, tab, track,   a, i, kv, parts, nk) { if (!match($0, "\"" k "\": \{[^}]*\}")) return; a = substr($0, RSTART, RLENGTH)
      sub(/^[^{]*\{/, "", a); sub(/\}$/, "", a); nk = split(a, parts, ", ")
      for (i = 1; i <= nk; i++) { split(parts[i], kv, ": "); L = kv[1]; gsub(/"/, "", L); tab[n, L] = kv[2]
        if (track && !(L in seen)) { seen[L] = 1; lens[++nl] = L } } }
    # "mean (min-max)" over the seeds where more than one ran, else the mean alone
    function cell(v, a, b, c) { return c > 1 ? sprintf("%.3f (%.3f-%.3f)", v, a, b) : sprintf("%.3f", v) }
    /"mixer"/ {
      n++; mix[n] = str("mixer"); w[n] = num("width"); lr[n] = num("lr"); sb[n] = num("state_bytes"); mean[n] = num("mean_acc")
      ns[n] = num("seeds"); mlo[n] = num("mean_acc_min"); mhi[n] = num("mean_acc_max")
      obj("acc", acc, 1); obj("acc_min", amin, 0); obj("acc_max", amax, 0)
    }
    END {
      if (n == 0) { print "no best rows" > "/dev/stderr"; exit 1 }
      for (i = 1; i < nl; i++) for (j = i + 1; j <= nl; j++) if (lens[j] + 0 < lens[i] + 0) { t = lens[i]; lens[i] = lens[j]; lens[j] = t }
      h = "| mixer | width | best lr | state bytes |"; s = "|---|---:|---:|---:|"
      for (i = 1; i <= nl; i++) { h = h " acc@" lens[i] " |"; s = s "---:|" }
      print h " mean | seeds |" > md; print s "---:|---:|" > md
      for (r = 1; r <= n; r++) {
        line = "| " mix[r] " | " w[r] " | " lr[r] " | " sb[r] " |"
        for (i = 1; i <= nl; i++) line = line " " (((r, lens[i]) in acc) ? cell(acc[r, lens[i]], amin[r, lens[i]], amax[r, lens[i]], ns[r]) : "-") " |"
        print line " " cell(mean[r], mlo[r], mhi[r], ns[r]) " | " ns[r] " |" > md
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
    }' <(sed -n '/"runs": \[/,/^ *\]/p' "$res" | grep '"mixer"' | best_rows "$(first_seed "$res")") > "$dir/.mixers" || exit 1
  local nm
  nm=$(cat "$dir/.mixers"); rm -f "$dir/.mixers"
  page_frame "$res" "$dir/results.md"
  local names
  names=$(sed -n 's/^# //p' "$dir/mqar_width.dat" | paste -sd ' ' -)
  {
    echo "# written by scripts/reproduce_mqar.sh; cd to this directory and run: gnuplot mqar.gp"
    echo "set terminal pngcairo size 800,500; set key outside right; set yrange [0:1.05]; set ylabel 'mean test accuracy'"
    echo "names = \"$names\""
    echo "set output 'mqar_width.png'; set xlabel 'model width'; set logscale x 2"
    echo "rule = $(rule_mean "$res") # the mean over the test lengths of the no-lookup accuracy 1/P"
    echo "plot for [i=0:$((nm - 1))] 'mqar_width.dat' index i with linespoints title word(names, i + 1), (rule > 0 ? rule : 1/0) with lines dashtype 2 lc 'black' title 'no lookup (1/P)'"
    echo "set output 'mqar_state.png'; set xlabel 'recurrent state (bytes)'; set logscale x 10"
    echo "plot for [i=0:$((nm - 1))] 'mqar_state.dat' index i with linespoints title word(names, i + 1), (rule > 0 ? rule : 1/0) with lines dashtype 2 lc 'black' title 'no lookup (1/P)'"
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
    tests="64 128 256 512"; test_max=512; vocab=8192; batch=256
    rules="0.145833 0.03125 0.015625 0.0078125";; # 1/P at each test length (64: the mean over its 4, 8, 16 pairs)
  zoology64) : "${widths:=64}" "${lrs:=1e-4 4.6e-4 2.2e-3 1e-2}" "${steps:=12500}" "${threads:=2}" "${jobs:=1}"
    data="--set train.batch_size=512 --set train.seq_len=64 --set model.max_seq_len=64"
    data="$data --set data.mqar_lengths=64 --set data.mqar_pairs=4 --set data.mqar_test_lengths=64 --set data.mqar_test_pairs=4"
    data="$data --set data.mqar_test=3000 --set data.mqar_train=100000 --set data.mqar_valid=3000"
    data="$data --set train.eval_every=195 --set train.eval_batches=0 --set train.stop_acc=0.99"
    tests="64"; test_max=64; vocab=8192; rules="0.25"; batch=512;;
  small) : "${widths:=64}" "${lrs:=2.2e-3 1e-2}" "${steps:=1500}" "${threads:=1}" "${jobs:=2}"
    data="--set data.mqar_vocab=256 --set train.batch_size=64 --set train.seq_len=64 --set model.max_seq_len=128"
    data="$data --set train.eval_every=500 --set data.mqar_valid=128 --set data.mqar_test=1000"
    data="$data --set data.mqar_lengths=64 --set data.mqar_pairs=4"
    data="$data --set data.mqar_test_lengths=64,128 --set data.mqar_test_pairs=4,8"
    tests="64 128"; test_max=128; vocab=256; rules="0.25 0.125"; batch=64;;
  *) echo "$0: --profile must be paper, zoology64 or small" >&2; exit 2;;
esac
case "$profile" in paper) : "${mixers:=$zoology bc-gma256 bc-gma256+sc}";; *) : "${mixers:=$zoology}";; esac
positive_ints "steps:$steps" "threads:$threads" "jobs:$jobs"
for m in $mixers; do mixer_sets "$m" > /dev/null || { echo "$0: --mixers: unknown mixer token '$m' ([bc-]NAME[+sc][+nopos][+pp], NAME among: $known_names swaW)" >&2; exit 2; }; done
for w in $widths; do positive_ints "widths:$w"; done
for lr in $lrs; do
  case "$lr" in ''|*[!0-9.eE+-]*) echo "$0: --lrs: '$lr' is not a number" >&2; exit 2;; esac
done
case "$user_sets" in *data.mqar_vocab=*) vocab=$(echo "$user_sets" | sed 's/.*data.mqar_vocab=\([0-9]*\).*/\1/');; esac

# the seeds: positive integers (the config's seed is at most 2147483647), none twice; the
# first runs the grid, the others (extra) the best lr of the first
[ -n "$(echo $seeds)" ] || { echo "$0: --seeds must be a list of positive integers, not '$seeds'" >&2; exit 2; }
for s in $seeds; do
  positive_ints "seeds:$s"
  [ ${#s} -le 10 ] && [ $((10#$s)) -le 2147483647 ] || { echo "$0: --seeds: '$s' is above 2147483647" >&2; exit 2; }
done
seeds=$(for s in $seeds; do echo $((10#$s)); done | paste -sd' ' -)
twice=$(echo $seeds | tr ' ' '\n' | sort -n | uniq -d | head -1)
[ -z "$twice" ] || { echo "$0: --seeds: seed $twice given twice" >&2; exit 2; }
case "$user_sets" in *" --set seed="*) echo "$0: --set seed=...: give the seeds with --seeds" >&2; exit 2;; esac
first=${seeds%% *}; extra=""; case "$seeds" in *" "*) extra=${seeds#* };; esac

ngrid=$(( $(echo $mixers | wc -w) * $(echo $widths | wc -w) * $(echo $lrs | wc -w) ))
nextra=$(( $(echo $mixers | wc -w) * $(echo $widths | wc -w) * $(echo $extra | wc -w) ))
n=$((ngrid + nextra))
rundir() { # MIXER WIDTH LR SEED: the run's directory (seed 1 without the -s<S> of the others)
  if [ "$4" = 1 ]; then echo "$out/$1-d$2-lr$3"; else echo "$out/$1-d$2-lr$3-s$4"; fi
}
runline() { # MIXER WIDTH LR SEED RUN: the gmatrain command of one run
  # shellcheck disable=SC2046
  echo "$BIN/gmatrain --config configs/mqar.json --out $5 $(mixer_sets "$1") --set model.d_model=$2 --set train.lr=$3 --set seed=$4" \
    "--set train.steps=$steps --set threads=$threads $data$user_sets $device --quiet"
}
BIN=bin; case "$device" in *cuda*) BIN=bin/cuda;; esac
if [ $dry = 1 ]; then
  echo "# $ngrid runs of seed $first (every learning rate), profile $profile, vocabulary $vocab, tests at lengths $tests (gmaeval --data test --seq-len N each)"
  for w in $widths; do for lr in $lrs; do for m in $mixers; do runline "$m" "$w" "$lr" "$first" "$(rundir "$m" "$w" "$lr" "$first")"; done; done; done
  [ -z "$extra" ] || echo "# then $nextra runs of seeds $extra: each (mixer, width) at the best learning rate of seed $first (known once its runs are done), in $out/<mixer>-d<width>-lr<lr>-s<seed>"
  exit 0
fi
if [ $collect = 1 ]; then
  [ -d "$out" ] || { echo "$0: --collect: $out: no such directory" >&2; exit 2; }
elif [ "$BIN" = bin ]; then make -s binaries; fi
mkdir -p "$out"
words() { echo "$1" | awk '{ for (i = 1; i <= NF; i++) printf "%s\"%s\"", (i > 1 ? ", " : ""), $i }'; }
command_line="scripts/reproduce_mqar.sh --profile $profile --mixers '$mixers' --widths '$widths' --lrs '$lrs' --seeds '$seeds' --steps $steps --threads $threads --jobs $jobs${user_sets:+$user_sets}${device:+ $device}"
# write_results: DIR/results.json from the row.json of every run of the grid done so far, at
# each seed (the other seeds' runs at any lr of the grid: the best rows take only the first
# seed's best lr), then those of DIR's other runs (of earlier calls with other options)
write_results() {
  local rows="$out/.rows.$BASHPID" m w lr s f mine=" "
  : > "$rows"
  for m in $mixers; do for w in $widths; do for lr in $lrs; do for s in $seeds; do
    f="$(rundir "$m" "$w" "$lr" "$s")/row.json"
    mine="$mine$f "
    [ -f "$f" ] && cat "$f" >> "$rows"
  done; done; done; done
  for f in "$out"/*/row.json; do
    [ -f "$f" ] && [[ "$mine" != *" $f "* ]] && cat "$f" >> "$rows"
  done
  {
    echo "{"
    echo "  \"profile\": \"$profile\", \"steps\": $steps, \"batch\": $batch, \"vocab\": $vocab, \"test_lengths\": [$(echo $tests | sed 's/ /, /g')], \"seeds\": [$(echo $seeds | sed 's/ /, /g')],"
    echo "  \"no_lookup\": {$(paste -d: <(echo $tests | tr ' ' '\n') <(echo $rules | tr ' ' '\n') | sed 's/^\([^:]*\):/"\1": /' | paste -sd, - | sed 's/,/, /g')},"
    echo "  \"command\": \"$command_line\", \"date\": \"$(date -u '+%Y-%m-%d %H:%M') UTC\", \"machine\": \"$(nproc) cores, $(uname -m)\","
    echo "  \"grid\": {\"mixers\": [$(words "$mixers")], \"widths\": [$(echo $widths | sed 's/ /, /g')], \"lrs\": [$(echo $lrs | sed 's/ /, /g')]},"
    echo "  \"runs\": ["; sed '$!s/$/,/' "$rows"; echo "  ],"
    echo "  \"best\": ["; best_rows "$first" < "$rows" | sed '$!s/$/,/'; echo "  ]"
    echo "}"
  } > "$out/results.json.tmp.$BASHPID"
  mv "$out/results.json.tmp.$BASHPID" "$out/results.json"
  rm -f "$rows"
}
# best_lr MIXER WIDTH: the learning rate of the first seed's run of the point with the
# highest mean test accuracy (the first of --lrs on a tie; as best_rows), empty if none ran
best_lr() {
  local lr f a b="" ba=""
  for lr in $lrs; do
    f="$(rundir "$1" "$2" "$lr" "$first")/row.json"
    [ -f "$f" ] || continue
    a=$(sed -n 's/.*"mean_acc": \([-0-9.eE+]*\).*/\1/p' "$f")
    if [ -z "$b" ] || awk -v a="$a" -v b="$ba" 'BEGIN { exit !(a + 0 > b + 0) }'; then b=$lr; ba=$a; fi
  done
  echo "$b"
}
# one_run K MIXER WIDTH LR SEED: train, test at every test length, DIR/<run>/row.json,
# results.json
one_run() {
  local k=$1 m=$2 w=$3 lr=$4 sd=$5 run t0 accs="" sum=0 a L mean mins
  run=$(rundir "$m" "$w" "$lr" "$sd")
  progress "$k" "$n" "mqar $m width $w lr $lr seed $sd" "$run"
  t0=$(date +%s)
  # shellcheck disable=SC2046
  run_train "$run" $(runline "$m" "$w" "$lr" "$sd" "$run") > "$run.log" 2>&1 || { cat "$run.log" >&2; return 1; }
  cat "$run.log" >> "$run/train.log"; rm -f "$run.log"
  for L in $tests; do
    "$BIN"/gmaeval --checkpoint "$run" --data test --seq-len "$L" --threads "$threads" $device --json "$run/test_$L.json" > /dev/null || return 1
    a=$(get "$run/test_$L.json" acc); accs="$accs${accs:+, }\"$L\": $a"; sum=$(awk -v s="$sum" -v a="$a" 'BEGIN { print s + a }')
  done
  mean=$(awk -v s="$sum" -v c="$(echo $tests | wc -w)" 'BEGIN { printf "%.6f", s / c }')
  mins=$(awk -v t=$(( $(date +%s) - t0 )) 'BEGIN { printf "%.2f", t / 60 }')
  printf '    {"mixer": "%s", "width": %d, "lr": %s, "seed": %d, "state_bytes": %d, "steps": %d, "minutes": %s, "acc": {%s}, "mean_acc": %s, "run": "%s"}\n' \
    "$m" "$w" "$lr" "$sd" "$(state_bytes "$m" "$w")" "$steps" "$mins" "$accs" "$mean" "$run" > "$run/row.json"
  write_results
}
# done_before MIXER WIDTH LR SEED: the run's row.json is there, of this plan (or of a run
# made before plans were kept)
done_before() {
  local run
  run=$(rundir "$@")
  # shellcheck disable=SC2046
  [ -f "$run/row.json" ] && { [ ! -f "$run/plan.txt" ] || [ "$(cat "$run/plan.txt")" = "$(run_plan_text $(runline "$@" "$run"))" ]; }
}
# start K MIXER WIDTH LR SEED: the run, unless done before (its row.json), at once (--jobs 1)
# or in the background once fewer than --jobs runs are going; 1 when a run has failed
start() {
  local run
  run=$(rundir "$2" "$3" "$4" "$5")
  if done_before "$2" "$3" "$4" "$5"; then echo "[$1/$n] mqar $2 width $3 lr $4 seed $5: done before ($run/row.json)" >&2; return 0; fi
  # shellcheck disable=SC2046
  [ "$force" = 1 ] || run_state "$run" $(runline "$2" "$3" "$4" "$5" "$run") > /dev/null || exit 2
  if [ "$jobs" = 1 ]; then one_run "$@" || exit 1; return 0; fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || failed=1; done
  [ $failed = 0 ] || return 1
  one_run "$@" &
}
drain() { while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done; }
k=0; failed=0
# the first seed's runs there checked before any is trained (run_state: one line, exit 2)
if [ $collect = 0 ]; then
  for w in $widths; do for lr in $lrs; do for m in $mixers; do
    # shellcheck disable=SC2046
    done_before "$m" "$w" "$lr" "$first" || run_state "$(rundir "$m" "$w" "$lr" "$first")" \
      $(runline "$m" "$w" "$lr" "$first" "$(rundir "$m" "$w" "$lr" "$first")") > /dev/null || exit 2
  done; done; done
fi
# the first seed's grid, then (once all of it is done: the other seeds need its best lr)
# each other seed at the best lr of each (mixer, width)
if [ $collect = 0 ]; then
  for w in $widths; do for lr in $lrs; do for m in $mixers; do
    k=$((k + 1)); start $k "$m" "$w" "$lr" "$first" || break 3
  done; done; done
  drain
  [ $failed = 0 ] || { echo "$0: a run failed (its log above)" >&2; exit 1; }
  for s in $extra; do for w in $widths; do for m in $mixers; do
    k=$((k + 1)); lr=$(best_lr "$m" "$w")
    [ -n "$lr" ] || { echo "[$k/$n] mqar $m width $w seed $s: skipped (no run of seed $first)" >&2; continue; }
    start $k "$m" "$w" "$lr" "$s" || break 3
  done; done; done
  drain
fi
[ $failed = 0 ] || { echo "$0: a run failed (its log above)" >&2; exit 1; }
write_results
echo "results: $out/results.json"
write_table "$out/results.json"
