#!/usr/bin/env bash
# reproduce_longctx.sh: long context past the training length (docs/longctx.md): every mixer
# trained at one length on (a) passkey retrieval (configs/passkey.json) and (b) the State of
# the Union language model (configs/small_<mixer>.json on data/sotu8-bpe4k), then evaluated
# at 1x, 2x, 4x, 8x and 16x that length with gmaeval --seq-len N (positions "none" or
# "sinusoidal": nothing in the model is sized by the length).
#   scripts/reproduce_longctx.sh [--profile small|paper] [--mixers LIST] [--tasks LIST]
#                                [--pos none|sinusoidal] [--steps N] [--seeds N] [--threads N]
#                                [--device D] [--sotu DIR] [--out DIR] [--force] [--dry-run] [--write-docs]
#   scripts/reproduce_longctx.sh --table RESULTS.json [--write-docs]  (table and plots again)
#   --profile P   small (default): passkey trained at 64 tokens for 1000 steps and tested at
#                 64..1024, lm trained at 128 for 150 steps and tested at 128..2048, one seed:
#                 minutes per run on 2 cores; paper: both trained at 1024, tested at
#                 1024..16384 (passkey at 1K-16K tokens), 2000 steps, for a GPU
#   --mixers LIST among sdpa gma linear performer mamba (default all)
#   --tasks LIST  among passkey lm (default both)
#   --pos P       model.pos of every run: none (default) or sinusoidal (with model.embed_std
#                 0.5, below the warning's ratio; docs/longctx.md)
#   --steps N     train.steps of every run (both tasks); --seeds N: seeds 1..N of every run (default 1)
#   --threads N   threads of every run (default 2)
#   --sotu DIR    the corpus for the lm task while data/sotu8 is not there (scripts/sotu_split.sh)
#   --out DIR     where the runs and results go (default runs/longctx); a rerun continues
#                 there: runs finished before are kept, rows of other runs stay in the results
#                 (the rule for every script: docs/results.md, "Reruns")
#   --force       train again a run folder made with other options (or not by this script)
#   --dry-run     print the runs (one gmatrain line each) and exit
#   --write-docs  also put the section "## Long context" into docs/results.md (replacing it)
# Writes DIR/<task>-<mixer>-s<seed>/ (the run, test_<N>.json of gmaeval --data test --seq-len N
# --bucket-size <train length> --json), DIR/results.json (every run's figures by length; the
# rows of DIR's other runs in an earlier results.json kept, a run's own row replaced),
# DIR/results.md (the section: passkey exact/per-digit accuracy and test perplexity against
# length, mean and sample standard deviation over the seeds), DIR/*.dat, DIR/longctx.gp and,
# with gnuplot, DIR/ppl_position.png (perplexity against position bucket at the longest
# length), DIR/passkey_length.png (exact match against length), DIR/passkey_depth.png (exact
# match against the key's depth at twice the training length).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
profile=small; mixers=""; tasks="passkey lm"; pos=none; steps=""; seeds=1; threads=2; device=""
out=runs/longctx; dry=0; table=""; docs=0
all="sdpa gma linear performer mamba"
usage="[--profile small|paper] [--mixers LIST] [--tasks LIST] [--pos none|sinusoidal] [--steps N] [--seeds N] [--threads N] [--device D] [--sotu DIR] [--out DIR] [--force] [--dry-run] [--write-docs] | --table RESULTS.json [--write-docs]"
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) need_value "$@"; profile="$2"; shift 2;;
    --mixers) need_value "$@"; mixers="$2"; shift 2;;
    --tasks) need_value "$@"; tasks="$2"; shift 2;;
    --pos) need_value "$@"; pos="$2"; shift 2;;
    --steps) need_value "$@"; steps="$2"; shift 2;;
    --seeds) need_value "$@"; seeds="$2"; shift 2;;
    --threads) need_value "$@"; threads="$2"; shift 2;;
    --device) need_value "$@"; device="--device $2"; shift 2;;
    --sotu) need_value "$@"; SOTU="$2"; shift 2;;
    --out) need_value "$@"; out="$2"; shift 2;;
    --table) need_value "$@"; table="$2"; shift 2;;
    --dry-run) dry=1; shift;;
    --force) force=1; shift;;
    --write-docs) docs=1; shift;;
    --help|-h) script_help; exit 0;;
    *) unknown_option "$1" "$usage --help";;
  esac
done

# table RESULTS [DOCS]: DIR/results.md, the .dat files, longctx.gp (and the PNGs with
# gnuplot) beside RESULTS; with DOCS 1 the section replaces "## Long context" in
# docs/results.md (appended when there is none)
write_table() {
  local res="$1" dir
  dir=$(dirname "$res")
  [ -f "$res" ] || { echo "$0: $res: no such file" >&2; exit 2; }
  command -v python3 > /dev/null || { echo "$0: python3 not found (apt-get install python3)" >&2; exit 1; }
  python3 - "$res" "$dir" "${2:-0}" <<'PY' || exit 1
import json, math, os, sys
res, d, docs = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
try:
    with open(res) as f:
        R = json.load(f)
    runs = R["runs"]
    lens = R["test_lengths"]
except (OSError, ValueError, KeyError, TypeError) as e:
    sys.stderr.write("%s: %s: not a results.json of reproduce_longctx.sh (%s)\n" % (sys.argv[0], res, e))
    sys.exit(2)
def stats(v):
    v = [x for x in v if x is not None]
    if not v:
        return None, None
    m = sum(v) / len(v)
    return m, (math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else None)
def cell(v, fmt):
    m, s = stats(v)
    if m is None:
        return "-"
    return (fmt % m) + (" ± " + fmt % s if s is not None else "")
mixers = []
for r in runs:
    if r["mixer"] not in mixers:
        mixers.append(r["mixer"])
def of(task, mixer):
    return [r for r in runs if r["task"] == task and r["mixer"] == mixer]
def at(r, L):
    return r["by_length"].get(str(L))
seeds = sorted({r["seed"] for r in runs})
T = R["train_len"]
# the passkey's own train and test lengths (the small profile trains it shorter than the lm)
pT, plens = R.get("passkey_train_len", T), R.get("passkey_test_lengths", lens)
shown = os.path.relpath(res) if not os.path.relpath(res).startswith("..") else os.path.basename(res)
hdr = " | ".join("%d (%gx)" % (L, L / T) for L in lens)
phdr = " | ".join("%d (%gx)" % (L, L / pT) for L in plens)
trained = ("every mixer trained at %d tokens" % T if pT == T else
           "every mixer trained at %d tokens on the passkey and %d on the language model" % (pT, T))
L = ["## Long context", "",
     "Command: `%s` (%s; JSON `%s`). Profile %s: %s with model.pos \"%s\", %s steps, "
     "seed%s %s, then `gmaeval --data test --seq-len N --bucket-size T` (T the training length) at each length N (docs/longctx.md). "
     "Machine: %s; timings are loose." % (R["command"], R["date"], shown, R["profile"], trained, R["pos"], "%d passkey and %d lm" % (R["steps"]["passkey"], R["steps"]["lm"]),
     "s" if len(seeds) > 1 else "", ", ".join(str(s) for s in seeds), R.get("machine", "unknown")), ""]
if any(r["task"] == "passkey" for r in runs):
    L += ["Passkey retrieval (%s): exact match of all digits, test split, %s (per-digit accuracy in "
          "brackets; chance per digit 0.1):" % (R.get("passkey", ""), "mean ± sample std over seeds" if len(seeds) > 1 else "one seed"), "",
          "| mixer | " + phdr + " |", "|---|" + "---:|" * len(plens)]
    for m in mixers:
        rs = of("passkey", m)
        if rs:
            L.append("| %s | " % m + " | ".join("%s (%s)" % (cell([at(r, N)["exact"] if at(r, N) else None for r in rs], "%.3f"),
                     cell([at(r, N)["digit"] if at(r, N) else None for r in rs], "%.3f")) for N in plens) + " |")
    L.append("")
if any(r["task"] == "lm" for r in runs):
    L += ["Language model (State of the Union, BPE 4096): test perplexity by evaluation window, %s:" %
          ("mean ± sample std over seeds" if len(seeds) > 1 else "one seed"), "",
          "| mixer | " + hdr + " |", "|---|" + "---:|" * len(lens)]
    for m in mixers:
        rs = of("lm", m)
        if rs:
            L.append("| %s | " % m + " | ".join(cell([at(r, N)["ppl"] if at(r, N) else None for r in rs], "%.1f") for N in lens) + " |")
    L.append("")
# plot data: one block per mixer (two blank lines between blocks)
def block(path, rows):
    with open(os.path.join(d, path), "w") as f:
        for m, pts in rows:
            f.write("# %s\n" % m)
            for x, y in pts:
                f.write("%g %g\n" % (x, y))
            f.write("\n\n")
Lmax, L2 = lens[-1], (2 * pT if 2 * pT in plens else plens[-1])
pp, pl, pd = [], [], []
for m in mixers:
    rs = [at(r, Lmax) for r in of("lm", m) if at(r, Lmax)]
    if rs:
        pts = []
        for i, b in enumerate(rs[0]["buckets"]):
            v = [math.log(x["buckets"][i]["ppl"]) for x in rs if x["buckets"][i]["tokens"] > 0]
            if v:
                pts.append((b["from"], math.exp(sum(v) / len(v))))
        pp.append((m, pts))
    rs = of("passkey", m)
    if rs:
        pl.append((m, [(N, stats([at(r, N)["exact"] for r in rs if at(r, N)])[0]) for N in plens if any(at(r, N) for r in rs)]))
        ds = [at(r, L2) for r in rs if at(r, L2)]
        if ds:
            pd.append((m, [((b["from"] + b["to"]) / 2, sum(x["by_depth"][i]["exact"] for x in ds) / len(ds))
                           for i, b in enumerate(ds[0]["by_depth"]) if b["examples"] > 0]))
block("ppl_position.dat", pp)
block("passkey_length.dat", pl)
block("passkey_depth.dat", pd)
gp = ["# written by scripts/reproduce_longctx.sh; cd to this directory and run: gnuplot longctx.gp",
      "set terminal pngcairo size 800,500; set key outside right"]
pngs = []
def plot(png, dat, names, xl, yl, extra):
    if names:
        gp.extend(["set output '%s'; set xlabel '%s'; set ylabel '%s'; %s" % (png, xl, yl, extra),
                   "names = \"%s\"" % " ".join(names),
                   "plot for [i=0:%d] '%s' index i with linespoints title word(names, i + 1)" % (len(names) - 1, dat),
                   "unset logscale; set autoscale"])
        pngs.append(png)
plot("ppl_position.png", "ppl_position.dat", [m for m, _ in pp], "position in the window of %d tokens (bucket start)" % Lmax,
     "test perplexity", "set logscale y")
plot("passkey_length.png", "passkey_length.dat", [m for m, _ in pl], "evaluation length (trained at %d)" % pT,
     "passkey exact match", "set logscale x 2; set yrange [0:1.05]")
plot("passkey_depth.png", "passkey_depth.dat", [m for m, _ in pd], "depth of the key (0 start, 1 end) at %d tokens" % L2,
     "passkey exact match", "set yrange [0:1.05]")
with open(os.path.join(d, "longctx.gp"), "w") as f:
    f.write("\n".join(gp) + "\n")
with open(os.path.join(d, "pngs"), "w") as f:
    f.write(" ".join(pngs))
with open(os.path.join(d, "results.md"), "w") as f:
    f.write("\n".join(L))
print("table: %s" % os.path.join(d, "results.md"))
PY
  local pngs gnuplot="${GNUPLOT:-gnuplot}"
  pngs=$(cat "$dir/pngs"); rm -f "$dir/pngs"
  if ! command -v "$gnuplot" > /dev/null 2>&1; then
    echo "gnuplot not found: plots skipped (apt-get install gnuplot-nox)"
  elif (cd "$dir" && "$gnuplot" longctx.gp) 2> "$dir/gnuplot.err"; then
    rm -f "$dir/gnuplot.err"; echo "plots: $(for p in $pngs; do printf '%s ' "$dir/$p"; done)"
  else
    echo "$0: gnuplot failed on $dir/longctx.gp (see $dir/gnuplot.err)" >&2
  fi
  [ "${2:-0}" = 1 ] || return 0
  # the section into docs/results.md, its figures into docs/results/longctx/
  mkdir -p docs/results/longctx
  local figs="" p
  for p in $pngs; do
    [ -f "$dir/$p" ] || continue
    cp "$dir/$p" docs/results/longctx/
    case "$p" in
      ppl_position.png) cap="test perplexity against position in the longest window, per mixer";;
      passkey_length.png) cap="passkey exact match against evaluation length, per mixer";;
      *) cap="passkey exact match against the depth of the key at twice the training length, per mixer";;
    esac
    figs="$figs![$cap](results/longctx/$p)"$'\n\n'
  done
  { cat "$dir/results.md"; echo; [ -n "$figs" ] && printf '%s' "$figs"; [ -f "$dir/notes.md" ] && cat "$dir/notes.md"; } > "$dir/section.md"
  awk -v sec="$dir/section.md" 'function put() { while ((getline l < sec) > 0) print l; print ""; done = 1 }
    /^## Long context$/ { put(); skip = 1; next }
    skip && /^## / { skip = 0 }
    !skip && /^## Notes on these runs$/ && !done { put() }
    !skip { print }
    END { if (!done) { print ""; put() } }' docs/results.md > docs/results.md.tmp.$$
  mv docs/results.md.tmp.$$ docs/results.md
  echo "docs: docs/results.md (## Long context)"
}
if [ -n "$table" ]; then write_table "$(from_start "$table")" "$docs"; exit 0; fi

case "$profile" in
  paper) pk_steps=${steps:-2000}; lm_steps=${steps:-2000}; T=1024; tests="1024 2048 4096 8192 16384"; pktest=500
    pkT=$T; pktests=$tests;;
  # the passkey at 64 tokens: at 128 one run of 1000 steps takes about 5 minutes here, and
  # at 400 steps (4 digits, 128 tokens) no mixer learnt it (docs/longctx.md, the trials)
  small) pk_steps=${steps:-1000}; lm_steps=${steps:-150}; T=128; tests="128 256 512 1024 2048"; pktest=100
    pkT=64; pktests="64 128 256 512 1024";;
  *) echo "$0: --profile must be paper or small" >&2; exit 2;;
esac
: "${mixers:=$all}"
positive_ints "steps:$pk_steps" "steps:$lm_steps" "seeds:$seeds" "threads:$threads"
for m in $mixers; do case " $all " in *" $m "*) ;; *) echo "$0: --mixers: unknown mixer '$m' (known: $all)" >&2; exit 2;; esac; done
for t in $tasks; do case "$t" in passkey|lm) ;; *) echo "$0: --tasks: unknown task '$t' (known: passkey lm)" >&2; exit 2;; esac; done
case "$pos" in none) posset="--set model.pos=none";; sinusoidal) posset="--set model.pos=sinusoidal --set model.embed_std=0.5";;
  *) echo "$0: --pos must be none or sinusoidal" >&2; exit 2;; esac
BIN=bin; case "$device" in *cuda*) BIN=bin/cuda;; esac
common="--set train.eval_every=0 --set train.checkpoint_every=0 --set threads=$threads $posset $device --quiet"
runline() { # TASK MIXER SEED RUN: the gmatrain command of one run
  case "$1" in
    passkey) echo "$BIN/gmatrain --config configs/passkey.json --out $4 --set model.mixer=$2 --set seed=$3 --set data.passkey_test=$pktest --set train.steps=$pk_steps --set train.seq_len=$pkT --set model.max_seq_len=$pkT $common";;
    lm) echo "$BIN/gmatrain --config configs/small_$2.json --out $4 --set data.path=data/sotu8-bpe4k --set seed=$3 --set train.steps=$lm_steps --set train.seq_len=$T --set model.max_seq_len=$T $common";;
  esac
}
n=$(( $(echo $tasks | wc -w) * $(echo $mixers | wc -w) * seeds ))
if [ $dry = 1 ]; then
  echo "# $n runs, profile $profile, passkey trained at $pkT and tested at lengths $pktests, lm trained at $T and tested at lengths $tests (gmaeval --data test --seq-len N --bucket-size <train length> each)"
  for t in $tasks; do for m in $mixers; do for ((s = 1; s <= seeds; s++)); do runline "$t" "$m" "$s" "$out/$t-$m-s$s"; done; done; done
  exit 0
fi
# every run folder checked before anything is trained (run_state: exit 2 naming it)
for t in $tasks; do for m in $mixers; do for ((s = 1; s <= seeds; s++)); do
  # shellcheck disable=SC2046
  run_state "$out/$t-$m-s$s" $(runline "$t" "$m" "$s" "$out/$t-$m-s$s") > /dev/null || exit 2
done; done; done
case " $tasks " in *" lm "*) prepare_sotu8;; *) if [ "$BIN" = bin ]; then make -s binaries; fi;; esac
mkdir -p "$out"
rows="$out/.rows"; : > "$rows"
k=0; t_start=$(date +%s)
for t in $tasks; do for m in $mixers; do for ((s = 1; s <= seeds; s++)); do
  run="$out/$t-$m-s$s"; k=$((k + 1))
  progress $k $n "$t $m seed $s" "$run"
  t0=$(date +%s)
  # shellcheck disable=SC2046
  if [ "$(run_state "$run" $(runline "$t" "$m" "$s" "$run"))" = done ]; then echo "$run: finished before, kept" >&2
  else # shellcheck disable=SC2046
    run_train "$run" $(runline "$t" "$m" "$s" "$run") > "$run.log" 2>&1 || { cat "$run.log" >&2; exit 1; }
    cat "$run.log" >> "$run/train.log"; rm -f "$run.log"
  fi
  if [ "$t" = passkey ]; then tl=$pkT; lens=$pktests; else tl=$T; lens=$tests; fi
  for L in $lens; do # an evaluation already made is kept
    [ -s "$run/test_$L.json" ] || "$BIN"/gmaeval --checkpoint "$run" --data test --seq-len "$L" --bucket-size "$tl" --threads "$threads" $device \
      --json "$run/test_$L.json" > "$run/test_$L.txt"
  done
  [ -s "$run/minutes" ] || awk -v t=$(( $(date +%s) - t0 )) 'BEGIN { printf "%.2f\n", t / 60 }' > "$run/minutes"
  mins=$(cat "$run/minutes")
  printf '%s %s %s %s %s\n' "$t" "$m" "$s" "$run" "$mins" >> "$rows"
done; done; done
machine="$(nproc)-core $(lscpu 2> /dev/null | sed -n 's/^Model name: *//p' | head -1), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
cmd="scripts/reproduce_longctx.sh --profile $profile --mixers \"$mixers\" --tasks \"$tasks\" --pos $pos${steps:+ --steps $steps} --seeds $seeds --threads $threads"
python3 - "$rows" "$out/results.json" "$tests" "$T" "$pktests" "$pkT" "$profile" "$pos" "$pk_steps $lm_steps" "$cmd" "$machine" "$(( ($(date +%s) - t_start + 30) / 60 ))" <<'PY'
import json, os, sys, time
rows, dst, tests, T, pktests, pkT, profile, pos, steps, cmd, machine, minutes = sys.argv[1:]
tests = [int(x) for x in tests.split()]
pktests = [int(x) for x in pktests.split()]
runs = []
for line in open(rows):
    task, mixer, seed, run, mins = line.split()
    by = {}
    for N in (pktests if task == "passkey" else tests):
        with open("%s/test_%d.json" % (run, N)) as f:
            j = json.load(f)
        e = {"loss": j["loss"], "ppl": j["ppl"], "acc": j["acc"], "tokens": j["tokens"]}
        if "passkey" in j:
            e.update(exact=j["passkey"]["exact"], digit=j["passkey"]["digit"], by_depth=j["passkey"]["by_depth"])
        if "position_buckets" in j:
            e["buckets"] = j["position_buckets"]["buckets"]
        by[str(N)] = e
    runs.append({"task": task, "mixer": mixer, "seed": int(seed), "run": run, "minutes": float(mins), "by_length": by})
# merged with the rows of an earlier results.json there: a row a run (by its folder's name),
# this call's row for a run it has, the earlier rows of the other runs kept before them
try:
    with open(dst) as f:
        old = json.load(f)["runs"]
except (OSError, ValueError, KeyError, TypeError):
    old = []
mine = {os.path.basename(r["run"]) for r in runs}
runs = [r for r in old if isinstance(r, dict) and os.path.basename(str(r.get("run"))) not in mine] + runs
try:
    pk = json.load(open("configs/passkey.json"))["data"]
    pkd = "%d digits, vocabulary %d, filler \"%s\", depth uniform in [%g, %g]" % (pk["passkey_digits"], pk["passkey_vocab"],
          pk["passkey_filler"], pk["passkey_depth_min"], pk["passkey_depth_max"])
except (OSError, ValueError, KeyError):
    pkd = ""
out = {"command": cmd, "date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine, "minutes": int(minutes),
       "profile": profile, "pos": pos, "steps": {"passkey": int(steps.split()[0]), "lm": int(steps.split()[1])}, "train_len": int(T), "test_lengths": tests,
       "passkey_train_len": int(pkT), "passkey_test_lengths": pktests, "passkey": pkd,
       "runs": runs}
with open(dst, "w") as f:
    json.dump(out, f, indent=1)
print("results: %s (%s minutes)" % (dst, minutes))
PY
rm -f "$rows"
write_table "$out/results.json" "$docs"
