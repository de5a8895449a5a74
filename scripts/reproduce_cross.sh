#!/usr/bin/env bash
# reproduce_cross.sh: the cross-attention measurements of docs/results.md ("## Cross-attention").
#   scripts/reproduce_cross.sh run [--out DIR] [--kinds LIST] [--steps N] [--threads N] [--seed S] [--configs PREFIX] [--set k=v]... [--force]
#       trains configs/xmqar_{gma,sdpa,none}.json (cross.mixer gma, sdpa, and a plain decoder
#       over the whole window; nice -n 10, all at once) on the cross-sequence MQAR task
#       (data.source xmqar, docs/cross.md), each --set applied to all, into DIR/KIND (DIR
#       default runs/cross), then `collect`. --kinds (default "gma sdpa none") among gma,
#       sdpa, none, gma_causal and sdpa_causal (cross.enc_causal true: a causal encoder),
#       gma_sdpaenc (gma cross layers reading a causal sdpa encoder: cross.enc_mixer sdpa)
#       and sdpa_gmaenc (sdpa cross layers, a causal gma encoder). --configs PREFIX (default
#       configs/xmqar_): the configs PREFIX{gma,sdpa,none}.json, e.g. configs/xmqar_long_ for
#       the models read at longer contexts (causal encoder, query_pos own; docs/cross.md).
#       A second call into DIR keeps the runs finished there and resumes those stopped part
#       way; a run of other options is refused unless --force (docs/results.md, "Reruns").
#   scripts/reproduce_cross.sh bench [--out DIR] [--seq 1K,...,64K] [gmabench options]
#       bin/gmabench cross --threads 1 --repeat 1 --max-seconds 400 --json DIR/bench.json.
#   scripts/reproduce_cross.sh lengths DIR [--ctx LIST] [--batch B] [--batches LIST] [--threads N] [--max-seconds S]
#       each trained DIR/KIND (trained with cross.query_pos own) read at longer contexts:
#       bin/gmaeval --data test --ctx-len M --batch B --batches N --json DIR/KIND/ctx_M.json for
#       M in LIST (default 256,1K,4K,16K,64K), N the matching entry of --batches (default
#       32,32,8,2,1: fewer windows where a window costs more; one entry: every M); a kind's next
#       M is skipped once its last evaluation's seconds x 4.5 x (windows next / windows last)
#       passes --max-seconds (default 1800). A ctx_M.json newer than the checkpoint is kept (a
#       second call resumes). Then `collect` as run does.
#   scripts/reproduce_cross.sh collect DIR [--command TEXT]...
#       DIR/results.json from DIR/{gma,sdpa,none}/metrics.jsonl and config.json and
#       DIR/bench.json (when there): per run the validation accuracy by step and the test
#       loss and accuracy of the final evaluation (a run stopped before its end: those of
#       DIR/KIND/test_eval.json, bin/gmaeval --data test --json of its checkpoint, and the
#       step it stopped at); the layer's time and memory per M; the evaluations at other
#       context lengths (DIR/KIND/ctx_M.json of `lengths`).
#   scripts/reproduce_cross.sh write RESULTS.json... [--out FILE] [--note TEXT]...
#       the section "## Cross-attention" of docs/results.md (or --out) from one or more
#       results.json (their runs one table each, the bench of the last that has one), in
#       place of that section when the page has it (up to the next "## " heading), else
#       before "## Notes on these runs", else at the end; the rest of the page is kept.
#       Each --note TEXT a paragraph after the tables.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in --help|-h|"") sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0;; esac
cmd=$1
shift
out=runs/cross
# an option's value: exit 2 with one line when it is missing
need() { [ "$#" -ge 2 ] || { echo "scripts/reproduce_cross.sh: $1 needs a value (see --help)" >&2; exit 2; }; }
. scripts/lib_reproduce.sh
if [ "$cmd" = run ]; then
  steps="" threads=1 seed="" sets=() kinds="gma sdpa none" prefix=configs/xmqar_
  while [ $# -gt 0 ]; do
    case "$1" in
      --out) need "$@"; out=$2; shift 2;;
      --kinds) need "$@"; kinds=$2; shift 2;;
      --steps) need "$@"; steps=$2; shift 2;;
      --threads) need "$@"; threads=$2; shift 2;;
      --seed) need "$@"; seed=$2; shift 2;;
      --configs) need "$@"; prefix=$2; shift 2;;
      --set) need "$@"; sets+=(--set "$2"); shift 2;;
      --force) force=1; shift;;
      *) unknown_option "$1" "--out --kinds --steps --threads --seed --configs --set --force";;
    esac
  done
  [ -n "$steps" ] && sets+=(--set "train.steps=$steps")
  [ -n "$seed" ] && sets+=(--set "seed=$seed")
  for k in $kinds; do
    case "$k" in gma|sdpa|none|gma_causal|sdpa_causal|gma_sdpaenc|sdpa_gmaenc) ;;
      *) echo "$0: run: --kinds: unknown kind '$k' (gma sdpa none gma_causal sdpa_causal gma_sdpaenc sdpa_gmaenc)" >&2; exit 2;; esac
    [ -f "${prefix}${k%%_*}.json" ] || { echo "$0: run: kind $k: no config ${prefix}${k%%_*}.json (--configs)" >&2; exit 2; }
  done
  runcmd() { # KIND: the gmatrain command of its run
    local extra=()
    case "$1" in
      *_causal) extra=(--set cross.enc_causal=true);;
      gma_sdpaenc) extra=(--set cross.enc_causal=true --set cross.enc_mixer=sdpa);;
      sdpa_gmaenc) extra=(--set cross.enc_causal=true --set cross.enc_mixer=gma);;
    esac
    echo bin/gmatrain --config "${prefix}${1%%_*}.json" "${sets[@]}" "${extra[@]}" --out "$out/$1" --threads "$threads" --quiet
  }
  # shellcheck disable=SC2046
  for k in $kinds; do run_state "$out/$k" $(runcmd "$k") > /dev/null || exit 2; done # every run there checked first
  mkdir -p "$out"
  for k in $kinds; do
    # shellcheck disable=SC2046
    if [ "$(run_state "$out/$k" $(runcmd "$k"))" = done ]; then echo "$out/$k: finished before, kept"; continue; fi
    # shellcheck disable=SC2046
    run_train "$out/$k" nice -n 10 $(runcmd "$k") >> "$out/$k.log" 2>&1 &
  done
  wait
  cf=""
  [ "$prefix" = configs/xmqar_ ] || cf=" --configs $prefix"
  exec "$0" collect "$out" --command "scripts/reproduce_cross.sh run --out $out --kinds '$kinds'$cf --threads $threads ${sets[*]}"
fi
if [ "$cmd" = lengths ]; then
  [ $# -ge 1 ] || { echo "$0: lengths: DIR missing (see --help)" >&2; exit 2; }
  out=$1
  shift
  ctx=256,1K,4K,16K,64K batch=8 batches=32,32,8,2,1 threads=1 maxs=1800
  while [ $# -gt 0 ]; do
    case "$1" in
      --ctx) need "$@"; ctx=$2; shift 2;;
      --batch) need "$@"; batch=$2; shift 2;;
      --batches) need "$@"; batches=$2; shift 2;;
      --threads) need "$@"; threads=$2; shift 2;;
      --max-seconds) need "$@"; maxs=$2; shift 2;;
      *) unknown_option "$1" "--ctx --batch --batches --threads --max-seconds";;
    esac
  done
  IFS=, read -r -a ms <<< "$ctx"
  IFS=, read -r -a ns <<< "$batches"
  [ "${#ns[@]}" -eq 1 ] || [ "${#ns[@]}" -eq "${#ms[@]}" ] ||
    { echo "$0: lengths: --batches has ${#ns[@]} entries for the ${#ms[@]} of --ctx" >&2; exit 2; }
  for i in "${!ms[@]}"; do # 1K = 1024
    m=${ms[$i]}
    case "$m" in *K) m=$(( ${m%K} * 1024 ));; esac
    [[ "$m" =~ ^[0-9]+$ ]] || { echo "$0: lengths: --ctx: '${ms[$i]}' is not a length" >&2; exit 2; }
    ms[$i]=$m
  done
  found=0
  for k in gma sdpa gma_causal sdpa_causal gma_sdpaenc sdpa_gmaenc; do
    [ -e "$out/$k/latest" ] || continue
    found=1
    last_s="" last_w=""
    for i in "${!ms[@]}"; do
      m=${ms[$i]} n=${ns[$i]:-${ns[0]}}
      if [ -n "$last_s" ] && python3 -c "import sys; sys.exit(0 if $last_s * 4.5 * $n / $last_w > $maxs else 1)"; then
        printf '{"skipped": "time: %s s at the last length x 4.5 passes --max-seconds %s", "ctx_len": %d}\n' "$last_s" "$maxs" "$m" \
          > "$out/$k/ctx_$m.json"
        continue
      fi
      j=$out/$k/ctx_$m.json
      if [ -f "$j" ] && [ "$j" -nt "$out/$k/latest/model.safetensors" ] && ! grep -q '"skipped"' "$j"; then
        echo "$k: $j kept (newer than the checkpoint; delete it to measure again)" # a second call resumes
        last_s=$(python3 -c "import json; print(json.load(open('$j'))['seconds'])") last_w=$n
        continue
      fi
      nice -n 10 bin/gmaeval --checkpoint "$out/$k" --data test --ctx-len "$m" --batch "$batch" --batches "$n" \
        --threads "$threads" --json "$out/$k/ctx_$m.json" | tee -a "$out/lengths.txt"
      last_s=$(python3 -c "import json; print(json.load(open('$out/$k/ctx_$m.json'))['seconds'])") last_w=$n
    done
  done
  [ "$found" = 1 ] || { echo "$0: lengths: no trained run under $out (DIR/KIND/latest)" >&2; exit 1; }
  exec "$0" collect "$out" --command "scripts/reproduce_cross.sh lengths $out --ctx $ctx --batch $batch --batches $batches --threads $threads --max-seconds $maxs"
fi
if [ "$cmd" = bench ]; then
  args=()
  while [ $# -gt 0 ]; do
    case "$1" in --out) need "$@"; out=$2; shift 2;; *) args+=("$1"); shift;; esac
  done
  mkdir -p "$out"
  nice -n 10 bin/gmabench cross --seq 1K,2K,4K,8K,16K,32K,64K --threads 1 --repeat 1 --max-seconds 400 "${args[@]}" \
    --json "$out/bench.json" | tee "$out/bench.txt"
  exit 0
fi
command -v python3 > /dev/null || { echo "$0: python3 not found" >&2; exit 1; }
exec python3 - "$cmd" "$@" <<'PY'
import json, os, platform, sys, time

ME = "scripts/reproduce_cross.sh"
HEAD = "## Cross-attention"
KINDS = ("gma", "sdpa", "gma_causal", "sdpa_causal", "gma_sdpaenc", "sdpa_gmaenc", "none")
LABEL = {"none": "none (decoder over the window)", "gma_causal": "gma, causal encoder", "sdpa_causal": "sdpa, causal encoder",
         "gma_sdpaenc": "gma cross, causal sdpa encoder", "sdpa_gmaenc": "sdpa cross, causal gma encoder"}

def die(msg, code=1):
    sys.stderr.write(ME + ": " + msg + "\n")
    sys.exit(code)

def value(args, i):
    if i + 1 >= len(args): die(args[i] + " needs a value (see --help)", 2)
    return args[i + 1]

def collect(args):
    if not args: die("collect: DIR missing")
    d, commands = args[0], []
    i = 1
    while i < len(args):
        if args[i] == "--command": commands.append(value(args, i)); i += 2
        else: die("collect: unknown argument " + args[i])
    runs = []
    for k in KINDS:
        mpath = os.path.join(d, k, "metrics.jsonl")
        if not os.path.exists(mpath): continue
        valid, test, last = [], None, None
        with open(mpath) as f:
            for line in f:
                try: r = json.loads(line)
                except ValueError: die(mpath + ": a line that is not JSON")
                if r.get("split") == "valid": valid.append({"step": r["step"], "acc": r.get("acc"), "loss": r["loss"]})
                elif r.get("split") == "test": test = {"step": r["step"], "acc": r.get("acc"), "loss": r["loss"]}
                elif "tokens_per_s" in r: last = r
        stopped = None
        epath = os.path.join(d, k, "test_eval.json")
        if test is None and os.path.exists(epath):  # a run stopped early: bin/gmaeval --data test --json of its checkpoint
            e = json.load(open(epath))
            stopped = max([v["step"] for v in valid] + [last["step"] if last else 0])
            ck = os.path.basename(os.path.realpath(e.get("checkpoint", "")))  # RUN/latest -> ckpt_<step>
            if ck.startswith("ckpt_") and ck[5:].isdigit(): stopped = int(ck[5:])
            test = {"step": stopped, "acc": e.get("acc"), "loss": e["loss"], "gmaeval": True}
        lengths = []
        for fn in sorted(os.listdir(os.path.join(d, k))):
            if fn.startswith("ctx_") and fn.endswith(".json"):
                e = json.load(open(os.path.join(d, k, fn)))
                lengths.append({x: e.get(x) for x in ("ctx_len", "acc", "loss", "windows", "tokens", "seconds", "skipped") if x in e})
        lengths.sort(key=lambda e: e["ctx_len"])
        cfg = json.load(open(os.path.join(d, k, "config.json")))
        runs.append({"kind": k, "lengths": lengths, "valid": valid, "test": test, "steps": cfg["train"]["steps"], "seed": cfg.get("seed"), "stopped_at": stopped,
                     "elapsed_s": last.get("elapsed_s") if last else None,
                     "config": {"cross": cfg.get("cross"), "data": {x: v for x, v in cfg["data"].items() if x.startswith("xmqar") or x == "source"},
                                "model": {x: cfg["model"][x] for x in ("d_model", "n_layers", "n_heads", "mixer", "mlp", "pos") if x in cfg["model"]},
                                "train": {x: cfg["train"][x] for x in ("batch_size", "seq_len", "lr", "steps")}}})
    bench = None
    bpath = os.path.join(d, "bench.json")
    if os.path.exists(bpath): bench = json.load(open(bpath))
    rpath = os.path.join(d, "results.json")
    if os.path.exists(rpath):  # a second collect (lengths after run) keeps the commands of the first
        try: old = json.load(open(rpath)).get("commands", [])
        except ValueError: die(rpath + ": not JSON")
        commands = old + [c for c in commands if c not in old]
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commands": commands,
           "machine": "%s, %d cores (nproc), %s %s" % (platform.processor() or platform.machine(), os.cpu_count(), platform.system(), platform.machine()),
           "runs": runs, "bench": bench}
    with open(os.path.join(d, "results.json"), "w") as f: json.dump(res, f, indent=1)
    print(os.path.join(d, "results.json"))

def fmt(x, p=3): return "n/a" if x is None else ("%.*f" % (p, x))

def section(results, notes):
    L = [HEAD, "", "Written by `%s write` from the JSON of `%s run` and `%s bench` (docs/cross.md: the task, the model, the" % (ME, ME, ME),
         "cross layer; docs/model.md §3.8 the math). Loose timings: a 2-core x86_64 VM shared with other jobs (load average",
         "well above 2), one thread a process; the cpu ms column is the process's own CPU time, the wall ms follows the load.", ""]
    seen = {}
    def heading(t):  # every heading of the section distinct: a repeated one numbered
        seen[t] = seen.get(t, 0) + 1
        return "### " + t + ("" if seen[t] == 1 else " (%d)" % seen[t])
    def setting(res):  # what tells one results file from another: task, cross Kc, seed, kinds
        c = res["runs"][0]["config"]
        return "vocabulary %s, %s pairs in %s tokens, Kc %s, seed %s" % (c["data"].get("xmqar_vocab"), c["data"].get("xmqar_pairs"),
               c["data"].get("xmqar_ctx"), (c["cross"] or {}).get("n_components"), res["runs"][0]["seed"])
    for res in results:
        if not res["runs"]: continue
        c0 = res["runs"][0]["config"]
        dx, tr, mo = c0["data"], c0["train"], c0["model"]
        L += [heading("Cross-sequence MQAR, %s: %s" % (setting(res), ", ".join(r["kind"] for r in res["runs"]))), ""]
        for c in res["commands"]:
            if "gmabench" not in c: L.append("Command: `%s`" % c)
        L += ["", "Task: vocabulary %s, %s pairs in a context of %s tokens, %d queries after it (window %s); model width %s, %s decoder layers"
              " (self mixer %s, %s), %s encoder layer(s) (bidirectional unless the row says causal), cross Kc %s; batch %s, lr %s, %s steps, seed %s (one seed). Chance: 1/%s pairs"
              " = %.3f for a model that answers some value of the context."
              % (dx.get("xmqar_vocab"), dx.get("xmqar_pairs"), dx.get("xmqar_ctx"), tr["seq_len"] - dx.get("xmqar_ctx", 0), tr["seq_len"],
                 mo["d_model"], mo["n_layers"], mo["mixer"], "MLP" if mo["mlp"] else "no MLP", (c0["cross"] or {}).get("enc_layers"),
                 (c0["cross"] or {}).get("n_components"), tr["batch_size"], tr["lr"], tr["steps"], res["runs"][0]["seed"],
                 dx.get("xmqar_pairs"), 1.0 / max(1, dx.get("xmqar_pairs", 1))), ""]
        steps = sorted({v["step"] for r in res["runs"] for v in r["valid"]})
        L.append("| cross.mixer | " + " | ".join("valid acc @%d" % s for s in steps) + " | test acc | test loss | steps run | minutes |")
        L.append("|---|" + "---:|" * (len(steps) + 4))
        for r in res["runs"]:
            va = {v["step"]: v["acc"] for v in r["valid"]}
            t = r["test"] or {}
            ran = "%d of %d (stopped; test by gmaeval)" % (r["stopped_at"], r["steps"]) if r.get("stopped_at") else str(r["steps"])
            L.append("| %s | %s | %s | %s | %s | %s |" % (LABEL.get(r["kind"], r["kind"]),
                     " | ".join(fmt(va.get(s)) for s in steps), fmt(t.get("acc")), fmt(t.get("loss")), ran,
                     fmt(r["elapsed_s"] / 60 if r["elapsed_s"] else None, 1)))
        L.append("")
    src = next((r for r in reversed(results) if r.get("bench")), None)
    bench = src["bench"] if src else None
    cpu = {}  # (kind, M) -> the layer's cpu ms of the bench
    for r in (bench or {}).get("cross", []):
        if "cpu_ms" in r: cpu[(r["kind"], r["M"])] = r["cpu_ms"]
    for res in results:
        runs = [r for r in res["runs"] if r.get("lengths")]
        if not runs: continue
        c0 = runs[0]["config"]
        M0 = c0["data"].get("xmqar_ctx")
        L += [heading("Longer contexts than trained, %s" % setting(res)), ""]
        L += ["Command: `%s`" % c for c in res["commands"] if "gmabench" not in c]
        L += ["", "The models of the table above that have the rows (trained at a context of %s, cross.query_pos %s), each test window"
              " read by `bin/gmaeval --ctx-len M`: the same pairs and queries, zeros from the pairs to M. acc: test accuracy over the"
              " windows scored (%d queries a window); s: the evaluation's seconds; the last column the cross layer's cpu time, sdpa"
              " over gma, of the bench below at that M (width 256, Kc 64, N = M)." % (M0, (c0["cross"] or {}).get("query_pos", "window"),
              c0["train"]["seq_len"] - (M0 or 0)), ""]
        Ms = sorted({e["ctx_len"] for r in runs for e in r["lengths"]})
        L.append("| context M | " + " | ".join("%s acc | s" % LABEL.get(r["kind"], r["kind"]) for r in runs)
                 + " | windows | layer cpu sdpa / gma |")
        L.append("|---:|" + "---:|---:|" * len(runs) + "---:|---:|")
        for M in Ms:
            cells, wins = [], set()
            for r in runs:
                e = next((e for e in r["lengths"] if e["ctx_len"] == M), None)
                if e is None: cells += ["", ""]
                elif "skipped" in e: cells += ["skipped: time", ""]
                else:
                    cells += [fmt(e["acc"]), "%.0f" % e["seconds"]]
                    wins.add(e["windows"])
            g, q = cpu.get(("gma", M)), cpu.get(("sdpa", M))
            L.append("| %d | %s | %s | %s |" % (M, " | ".join(cells), "/".join(str(w) for w in sorted(wins)) or "",
                     fmt(q / g if g and q else None, 2)))
        L.append("")
    if bench:
        rows = bench.get("cross", [])
        L += ["### Layer speed and memory against context length", "",
              "`bin/gmabench cross` (%s, %s): one cross layer, forward + backward, B 1, width 256, 4 heads, Kc 64, as many queries as"
              " context rows (N = M). Skipped points say why (a kind's next point is skipped once its last time x 4.5 passes"
              " --max-seconds 400)." % (bench.get("backend"), bench.get("blas_core")), "",
              ] + ["Command: `%s`" % c for c in src["commands"] if "gmabench" in c] + ["",
              "| M | kind | wall ms | cpu ms | cpu ms / gma's | peak MiB | planned MiB |", "|---:|---|---:|---:|---:|---:|---:|"]
        gma_cpu = {r["M"]: r.get("cpu_ms") for r in rows if r["kind"] == "gma" and "cpu_ms" in r}
        for r in rows:
            if "skipped" in r:
                L.append("| %d | %s | %s | | | | %.1f |" % (r["M"], r["kind"], r["skipped"], r["planned_mib"]))
                continue
            g = gma_cpu.get(r["M"])
            L.append("| %d | %s | %.0f | %.1f | %s | %.1f | %.1f |" % (r["M"], r["kind"], r["ms"], r["cpu_ms"],
                     fmt(r["cpu_ms"] / g if g else None, 2), r["peak_mib"], r["planned_mib"]))
        L.append("")
    for n in notes: L += [n, ""]
    return "\n".join(L).rstrip() + "\n"

def write(args):
    files, out, notes, i = [], "docs/results.md", [], 0
    while i < len(args):
        a = args[i]
        if a == "--out": out = value(args, i); i += 2
        elif a == "--note": notes.append(value(args, i)); i += 2
        else: files.append(a); i += 1
    if not files: die("write: RESULTS.json missing")
    results = []
    for f in files:
        try: results.append(json.load(open(f)))
        except (OSError, ValueError) as e: die("%s: %s" % (f, e))
    sec = section(results, notes)
    page = open(out).read() if os.path.exists(out) else "# Results\n"
    if HEAD + "\n" in page:
        a = page.index(HEAD + "\n")
        b = page.find("\n## ", a + len(HEAD))
        page = page[:a] + sec + ("\n" + page[b + 1:] if b >= 0 else "")
    elif "\n## Notes on these runs" in page:
        a = page.index("\n## Notes on these runs")
        page = page[:a + 1] + sec + "\n" + page[a + 1:]
    else:
        page = page.rstrip() + "\n\n" + sec
    with open(out, "w") as f: f.write(page)
    print(out)

cmd, rest = sys.argv[1], sys.argv[2:]
if cmd == "collect": collect(rest)
elif cmd == "write": write(rest)
else: die("unknown command %s (run, bench, lengths, collect, write)" % cmd)
PY
