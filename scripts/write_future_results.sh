#!/usr/bin/env bash
# write_future_results.sh: the section "## Future work: per-layer K, adaptive K, gated
# hybrid" of docs/results.md from the JSON of scripts/reproduce_future.sh (python3,
# standard library only).
#   scripts/write_future_results.sh [FILE.json]... [--out FILE] [--note TEXT]... [--part TITLE]
#       FILE.json: one or more (their runs in order, each with its own steps); default the
#       newest runs/future-*.json; --out: default docs/results.md.
#       The section replaces the file's own from its heading to the end (else it is
#       appended); scripts/write_results.sh keeps it when it rewrites the page. Each
#       --note TEXT a paragraph after the generated one.
#       --part TITLE: instead, a subsection "### TITLE" of that section (replacing its own,
#       up to the next heading, else added at the end): the runs' table with the K per
#       layer at the start and the end, their commands (data and overrides in them), and a
#       paragraph comparing every variant with fixed K 256 and K 32 (the adaptive-K runs
#       of scripts/reproduce_future.sh --variants "gma32 gma64 gma256 kad256 kdir256").
# The table: per variant the mixers, K per GMA layer at the start and the end (the
# Dirichlet prior's last "components" rows), valid and test ppl, training tokens/s,
# parameters; the gated layers' gates; then one paragraph comparing each variant with
# gma K 32 (the config) and sdpa, from the numbers.
# Runs with a long window (reproduce_future.sh's gma_np, sdpa_np, auto_np, auto_distill:
# field long_len) go to their own subsection "### auto with both paths trained" at the
# section's end instead: ppl at the training length and at long_len, tokens/s, the gap
# between auto's two paths (gmaeval --analyze) at both lengths, one paragraph from the
# numbers. Each part is rewritten only when the inputs hold runs of it; the other is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in --help|-h) sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0;; esac
command -v python3 > /dev/null || { echo "$0: python3 not found (apt-get install python3)" >&2; exit 1; }
exec python3 - "$@" <<'PY'
import glob, json, math, os, platform, struct, subprocess, sys, time

ME = "scripts/write_future_results.sh"
HEAD = "## Future work: per-layer K, adaptive K, gated hybrid"
SUB = "### auto with both paths trained"
NAMES = {"gma32": "gma, K 32", "gma64": "gma, K 64", "gma64_32": "gma, K [64, 32]",
         "dir64": "gma from K 64, Dirichlet prior", "gated": "gated (sdpa + gma K 32)", "sdpa": "sdpa",
         "gma256": "gma, K 256", "kad256": "gma from K 256, structural adaptation",
         "kdir256": "gma from K 256, structural adaptation + Dirichlet prior",
         "gma_np": "gma, no positions", "sdpa_np": "sdpa, no positions",
         "auto_np": "auto, threshold 2048 (old: sdpa path only trains)",
         "auto_distill": "auto, threshold 2048, GMA path distilled (w 1)",
         "auto_distill001": "auto, threshold 2048, GMA path distilled (w 0.01)"}

def die(msg):
    sys.stderr.write("%s: %s\n" % (ME, msg)); sys.exit(2)

def machine():
    try:
        model = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
    except (OSError, IndexError):
        model = platform.processor() or "unknown CPU"
    return "%s, %d cores (nproc), %s %s" % (model, os.cpu_count() or 0, platform.system(), platform.machine())

def pi_range(run):
    """min and max over the GMA layers' routing heads of K pi_k (pi = softmax(prior_logits),
    live components only; 1 = uniform) in RUN/latest/model.safetensors, or None"""
    path = os.path.join(run, "latest", "model.safetensors")
    try:
        b = open(path, "rb").read()
        n = struct.unpack("<Q", b[:8])[0]
        hdr = json.loads(b[8:8 + n])
    except (OSError, ValueError, struct.error):
        return None
    lo, hi = None, None
    for name, v in hdr.items():
        if not name.endswith(".gma.prior_logits") or v.get("dtype") != "F32": continue
        s, e = v["data_offsets"]
        a = struct.unpack("<%df" % ((e - s) // 4), b[8 + n + s:8 + n + e])
        H, K = v["shape"]
        for h in range(H):
            r = [x for x in a[h * K:(h + 1) * K] if x > -5e3]
            m = max(r); z = sum(math.exp(x - m) for x in r)
            for x in r:
                q = math.exp(x - m) / z * len(r)
                lo = q if lo is None else min(lo, q); hi = q if hi is None else max(hi, q)
    return (lo, hi) if lo is not None else None

def fmt_k(ks):
    return "[" + ", ".join(("%g" % k) for k in ks) + "]" if ks else "-"

def gaps(r, tag):
    a = r.get("auto_" + tag) or []
    return ", ".join("%s %.3f" % (g["path"], g["gap_rel"]) for g in a) or "-"

def sub_section(docs, paths, notes):
    runs = [r for d in docs for r in d["runs"] if "long_len" in r]
    by = {}
    for r in runs: by.setdefault(r["variant"], r)
    n = runs[0]["long_len"]
    L = [SUB, "",
         "Written by `%s` from %s (`scripts/reproduce_future.sh --variants \"sdpa_np gma_np auto_np auto_distill auto_distill001\"`, %s);" % (
             ME, ", ".join("`%s` (`--steps %d --threads %d`)" % (p, x["steps"], x["threads"]) for p, x in zip(paths, docs)),
             time.strftime("%Y-%m-%d")),
         "machine: %s, shared with other jobs (tokens/s loose)." % machine(),
         "`configs/small_gma.json` / `configs/small_sdpa.json` with `model.pos: \"none\"` (so that a window longer",
         "than the training one can be evaluated), trained at 128 tokens, one seed (1337), short runs far from",
         "converged. auto's threshold is 2048: at the training length only its sdpa path runs, at %d only its GMA path." % n,
         "ppl at 128: gmatrain's closing evaluation; at %d: `gmaeval --seq-len %d --batch 1` on the whole splits." % (n, n),
         "Gap: per auto layer, the path taken and |oh_gma - oh_sdpa|^2 / |oh_sdpa|^2 of the heads' outputs",
         "(`gmaeval --analyze` on the valid split; 0: GMA reproduces sdpa).", "",
         "| variant | steps | valid ppl 128 | test ppl 128 | valid ppl %d | test ppl %d | tokens/s | gap at 128 | gap at %d |" % (n, n, n),
         "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in runs:
        L.append("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.0f | %s | %s |" % (
            NAMES.get(r["variant"], r["variant"]), r["steps"], r["valid_ppl"], r["test_ppl"], r["long_valid_ppl"],
            r["long_test_ppl"], r["tokens_per_s"], gaps(r, "train_len"), gaps(r, "long")))
    L += ["", "Commands (one per run; then the gmaeval calls above):", ""]
    L += ["    " + r["command"] for r in runs]
    L.append("")
    said = []
    a, g, s = (by.get(v) for v in ("auto_np", "gma_np", "sdpa_np"))
    for v in ("auto_distill", "auto_distill001"):
        d = by.get(v)
        if not (a and d): continue
        said.append("%s: at %d tokens (GMA path) test ppl %.1f against the old auto's %.1f, at 128 (sdpa path) %.1f against %.1f"
                    % (NAMES[v], n, d["long_test_ppl"], a["long_test_ppl"], d["test_ppl"], a["test_ppl"]))
        if "aux_loss_last" in d:
            said.append("its distillation loss w |oh_gma - oh_sdpa|^2 / |oh_sdpa|^2 (summed over the layers) went %.4g -> %.4g"
                        " over the logged steps" % (d["aux_loss_first"], d["aux_loss_last"]))
        said.append("its tokens/s %.2fx the old auto's" % (d["tokens_per_s"] / a["tokens_per_s"] if a["tokens_per_s"] else float("nan")))
    d = None
    if g and s:
        said.append("gma alone: %.1f at 128, %.1f at %d; sdpa alone: %.1f at 128, %.1f at %d" % (
            g["test_ppl"], g["long_test_ppl"], n, s["test_ppl"], s["long_test_ppl"], n))
    if said:
        L += ["From the table: " + "; ".join(said) + ". One seed: a difference within the small table's seed spread"
              " (about 5-10 test ppl at 128 tokens) is not a finding.", ""]
    for t in notes: L += [t, ""]
    return "\n".join(L)

def section(docs, paths, notes):
    runs = [r for d in docs for r in d["runs"]]
    d = docs[0]
    by = {}
    for r in runs: by.setdefault(r["variant"], r)  # the comparisons: each variant's first run
    for r in runs:
        for key in ("variant", "command", "valid_ppl", "test_ppl", "tokens_per_s", "params", "k_start", "k_end", "steps"):
            if key not in r: die("%s: run %s: no field %s" % (", ".join(paths), r.get("variant", "?"), key))
    L = [HEAD, "",
         "Written by `%s` from %s (`scripts/reproduce_future.sh`, %s); machine: %s," % (
             ME, ", ".join("`%s` (`--steps %d --threads %d`)" % (p, x["steps"], x["threads"]) for p, x in zip(paths, docs)),
             time.strftime("%Y-%m-%d"), machine()),
         "shared with other jobs, so tokens/s are loose. `configs/small_gma.json` / `configs/small_sdpa.json` on the",
         "State of the Union split of `scripts/reproduce_small.sh`, `train.steps` as in the table (warmup 100), one seed (1337):",
         "short runs, far from converged; the seed spread of the small table above (test ppl std 5-10 at 300 steps)",
         "is the yardstick for differences. ppl: gmatrain's closing evaluation on the whole valid and test splits.",
         "K: components per head of each GMA layer at the start and the end (the Dirichlet prior's live components,",
         "the mean over heads). K pi: the range of K pi_k over the layers' routing heads in the final checkpoint",
         "(pi = softmax(prior_logits) over the live components; 1 = uniform), read from each run's",
         "`latest/model.safetensors`.", "",
         "| variant | steps | mixers | K start | K end | K pi min-max | valid ppl | test ppl | tokens/s | params |",
         "|---|---:|---|---|---|---|---:|---:|---:|---:|"]
    for r in runs:
        pr = pi_range(r.get("run", ""))
        L.append("| %s | %d | %s | %s | %s | %s | %.1f | %.1f | %.0f | %d |" % (
            NAMES.get(r["variant"], r["variant"]), r["steps"], ",".join(r.get("mixer", [])) or "-", fmt_k(r["k_start"]), fmt_k(r["k_end"]),
            "%.3f-%.3f" % pr if pr else "-", r["valid_ppl"], r["test_ppl"], r["tokens_per_s"], r["params"]))
    L.append("")
    for r in runs:
        for g in r.get("gates", []):
            L.append("Gates of %s, layer %d (the sdpa path's share g per head, initial 0.5): %s." % (
                NAMES.get(r["variant"], r["variant"]), g["layer"], ", ".join("%.3f" % x for x in g["gate"])))
    if any(r.get("gates") for r in runs): L.append("")
    L += ["Commands (one per run):", ""]
    L += ["    " + r["command"] for r in runs]
    L.append("")
    # what helped: against gma K 32 and sdpa, by the test ppl and the speed
    base = by.get("gma32")
    said = []
    if base:
        for v in ("gma64", "gma64_32", "dir64", "gated"):
            r = by.get(v)
            if not r: continue
            dp = r["test_ppl"] - base["test_ppl"]
            sp = r["tokens_per_s"] / base["tokens_per_s"] if base["tokens_per_s"] else float("nan")
            s = "%s: test ppl %+.1f against gma K 32 (%s), at %.2fx its tokens/s" % (
                NAMES[v], dp, "lower" if dp < 0 else "higher" if dp > 0 else "equal", sp)
            if v == "dir64":
                s += "; K went %s -> %s" % (fmt_k(r["k_start"]), fmt_k(r["k_end"]))
            said.append(s)
        if by.get("sdpa"):
            s = by["sdpa"]
            said.append("sdpa: test ppl %+.1f against gma K 32" % (s["test_ppl"] - base["test_ppl"]))
        for r in runs:  # further runs of a variant (another budget)
            if by.get(r["variant"]) is not r:
                said.append("%s at %d steps: test ppl %.1f, K %s -> %s" % (
                    NAMES.get(r["variant"], r["variant"]), r["steps"], r["test_ppl"], fmt_k(r["k_start"]), fmt_k(r["k_end"])))
    L += ["From the table (runs of %d steps): " % base["steps"] + "; ".join(said) + ". With one seed a difference within the small table's seed"
          " spread (about 5-10 test ppl) is not a finding.", ""] if said else []
    for n in notes: L += [n, ""]
    return "\n".join(L)

def part(docs, paths, notes, title):
    runs = [r for d in docs for r in d["runs"]]
    by = {}
    for r in runs: by.setdefault(r["variant"], r)
    L = ["### " + title, "",
         "Written by `%s --part` from %s (`scripts/reproduce_future.sh`, %s); machine: %s, shared with" % (
             ME, ", ".join("`%s` (`--steps %d --warmup %s --threads %d`)" % (p, x["steps"], x.get("warmup", 100), x["threads"])
                           for p, x in zip(paths, docs)), time.strftime("%Y-%m-%d"), machine()),
         "other jobs (load far above the core count), so tokens/s are loose. One seed (1337); the data and the",
         "overrides of every run are in its command below. ppl: gmatrain's closing evaluation on the whole valid",
         "and test splits. K: components per head of each GMA layer at the start and the end (the structural",
         "adaptation's last `adapt` rows, docs/model.md §4.2).", "",
         "| variant | steps | K start | K end | valid ppl | test ppl | tokens/s | params |",
         "|---|---:|---|---|---:|---:|---:|---:|"]
    for r in runs:
        L.append("| %s | %d | %s | %s | %.1f | %.1f | %.0f | %d |" % (
            NAMES.get(r["variant"], r["variant"]), r["steps"], fmt_k(r["k_start"]), fmt_k(r["k_end"]),
            r["valid_ppl"], r["test_ppl"], r["tokens_per_s"], r["params"]))
    L += ["", "Commands (one per run):", ""]
    L += ["    " + r["command"] for r in runs]
    L.append("")
    said = []
    for base_v in ("gma256", "gma32"):
        base = by.get(base_v)
        if not base: continue
        for r in runs:
            if r is base or r["variant"] == "gma32" and base_v == "gma256": continue
            if base_v == "gma32" and r["variant"] not in ("kad256", "kdir256"): continue
            sp = r["tokens_per_s"] / base["tokens_per_s"] if base["tokens_per_s"] else float("nan")
            said.append("%s: test ppl %+.1f against %s, at %.2fx its tokens/s, K %s -> %s" % (
                NAMES.get(r["variant"], r["variant"]), r["test_ppl"] - base["test_ppl"], NAMES[base_v], sp,
                fmt_k(r["k_start"]), fmt_k(r["k_end"])))
    if said:
        L += ["From the table: " + "; ".join(said) + ". One seed: small differences are not findings.", ""]
    for n in notes: L += [n, ""]
    return "\n".join(L)

def put_part(old, text, title):
    at = old.find("\n" + HEAD)
    if at < 0: die("no section '%s' to put the part into (write it first)" % HEAD)
    sub = old.find("\n### " + title + "\n", at)
    if sub < 0:
        return old.rstrip("\n") + "\n\n" + text + "\n"
    nxt = [i for i in (old.find("\n### ", sub + 1), old.find("\n## ", sub + 1)) if i >= 0]
    end = min(nxt) if nxt else len(old)
    return old[:sub] + "\n" + text + old[end:]

def main(argv):
    paths, out, notes, i, title = [], "docs/results.md", [], 0, None
    while i < len(argv):
        a = argv[i]
        if a in ("--out", "--note", "--part"):
            if i + 1 >= len(argv): die("%s needs a value (see --help)" % a)
            if a == "--out": out = argv[i + 1]
            elif a == "--part": title = argv[i + 1]
            else: notes.append(argv[i + 1])
            i += 2; continue
        if a.startswith("--"): die("unknown option %s (see --help)" % a)
        paths.append(a); i += 1
    if not paths:
        c = sorted(glob.glob("runs/future-*.json"))
        if not c: die("no runs/future-*.json (run scripts/reproduce_future.sh first)")
        paths = [c[-1]]
    docs, mpaths, lpaths, ldocs = [], [], [], []
    for path in paths:
        try:
            d = json.load(open(path))
        except (OSError, ValueError) as e:
            die("%s: %s" % (path, e))
        if not isinstance(d, dict) or "runs" not in d or "steps" not in d or "threads" not in d:
            die("%s: not a reproduce_future.sh JSON (fields runs, steps, threads)" % path)
        if any("long_len" in r for r in d["runs"]):
            lpaths.append(path); ldocs.append(d)
        d = dict(d, runs=[r for r in d["runs"] if "long_len" not in r])
        if d["runs"]: docs.append(d); mpaths.append(path)
    old = open(out).read() if os.path.exists(out) else ""
    page, mnotes = old, [] if ldocs else notes
    if docs and title:
        page = put_part(page, part(docs, mpaths, mnotes, title), title)
    elif docs:
        # the main table is rewritten; the section's "### " parts are kept
        at = page.find("\n" + HEAD)
        sec = page[at + 1:] if at >= 0 else ""
        sa = sec.find("\n### ")
        kept = sec[sa:].rstrip("\n") if sa >= 0 else ""
        page = (page[:at] if at >= 0 else page.rstrip("\n")) + "\n\n" + section(docs, mpaths, mnotes).rstrip("\n") + kept + "\n"
    if ldocs:
        if page.find("\n" + HEAD) < 0 and not page.startswith(HEAD):
            page = page.rstrip("\n") + "\n\n" + HEAD + "\n"
        page = put_part(page, sub_section(ldocs, lpaths, notes).rstrip("\n") + "\n", SUB[4:])
    tmp = out + ".tmp"
    with open(tmp, "w") as f: f.write(page.lstrip("\n") if not old else page)
    os.replace(tmp, out)
    print("%s: wrote %s" % (ME, out))

main(sys.argv[1:])
PY
