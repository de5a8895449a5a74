#!/usr/bin/env bash
# write_results.sh: the tables and docs/results.md from the JSON files of
# scripts/reproduce_small.sh and scripts/reproduce_routing.sh (python3, standard library only).
#   scripts/write_results.sh [--small FILE] [--routing FILE] [--out FILE] [--figures DIR]
#                            [--note TEXT]... [--no-plots]
#       docs/results.md (or --out) from runs/small-*.json and runs/routing-*.json (the newest of
#       each unless given): the tables, which differences exceed the spread, which remedy is
#       closest to the paper, the commands, date and machine; figures through
#       scripts/plot_runs.sh (when present) into docs/results/ (or --figures), embedded;
#       each --note TEXT a paragraph under "Notes on these runs". A section "## Long context"
#       already in the page (scripts/reproduce_longctx.sh --write-docs) is kept as it stands.
#   scripts/write_results.sh combine-small PREFIX COMMAND RUN.json...
#       PREFIX.json, PREFIX.txt, PREFIX.md from the per-run files of reproduce_small.sh.
#   scripts/write_results.sh combine-routing PREFIX COMMAND VARIANT.json...
#       the same from the per-variant files of reproduce_routing.sh.
#   scripts/write_results.sh mqar RESULTS.json [--out FILE] [--note TEXT]...
#       the section "## Associative recall (MQAR, Zoology protocol)" of docs/results.md (or
#       --out) from the results.json of scripts/reproduce_mqar.sh, put in place of that
#       section when the page has it (up to the next "## " heading), else before "## Notes on
#       these runs", else at the end; the rest of the page is kept as it is. The table: the
#       best learning rate of each (mixer, width) on the first of its "seeds" (1 where the
#       file has none; a run without "seed" is seed 1), its accuracy per test length and
#       mean, averaged over the seeds run at that lr, as "mean (min-max)" where more than one
#       ran, the seeds, the range of the first seed's mean accuracy over the learning rates
#       run, gma's best Kc against each baseline at each width (by the mean over seeds), every
#       grid point of the first seed not run and every other seed's run at a best lr not run;
#       the plots beside RESULTS.json (reproduce_mqar.sh's PNGs) copied into results/ beside
#       FILE.
# Statistics: mean, sample standard deviation (n - 1; 0 in the JSON for one seed, printed
# "n/a"), min, max over the seeds.
# A difference against gma "exceeds the spread" when the two ranges [min, max] over the seeds
# do not overlap (needs at least 2 seeds on each side); Welch's t = (mean_a - mean_b) /
# sqrt(s_a^2/n_a + s_b^2/n_b) is reported beside it. Distance to the paper (Kc = 128):
# sqrt(((used - 104)/128)^2 + (entropy - 0.933)^2 + (nmi - 0.244)^2).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in --help|-h) sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0;; esac
command -v python3 > /dev/null || { echo "$0: python3 not found (apt-get install python3)" >&2; exit 1; }
exec python3 - "$@" <<'PY'
import glob, json, math, os, platform, shutil, subprocess, sys, time

FUTURE_HEAD = "## Future work: per-layer K, adaptive K, gated hybrid"  # scripts/write_future_results.sh
PAPER = {"used_components": 104.0, "usage_entropy": 0.933, "nmi": 0.244}
KC = 128
METRICS = [("valid_ppl", "valid ppl", 1), ("test_ppl", "test ppl", 1),
           ("test_word_ppl", "test word ppl", 0), ("tokens_per_s", "tokens/s", 0)]
ME = "scripts/write_results.sh"

def die(msg):
    sys.stderr.write(ME + ": " + msg + "\n")
    sys.exit(1)

def load(path):
    try:
        # errors="replace": gmaeval's top_tokens texts may hold a byte-level token that is
        # only part of a UTF-8 character
        with open(path, encoding="utf-8", errors="replace") as f:
            return json.load(f)
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    except ValueError as e:
        die("%s: not JSON (%s)" % (path, e))

def number(d, key, path):
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        die("%s: field '%s' missing or not a finite number" % (path, key))
    return float(v)

def stats(xs):
    n = len(xs)
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    return {"n": n, "mean": mean, "std": std, "min": min(xs), "max": max(xs)}

def compare(a, b):
    """a against b (stats dicts): difference of means, Welch t, ranges disjoint."""
    diff = a["mean"] - b["mean"]
    se = math.sqrt(a["std"] ** 2 / a["n"] + b["std"] ** 2 / b["n"])
    t = diff / se if se > 0 else None
    if a["n"] < 2 or b["n"] < 2:
        verdict = None
    else:
        verdict = a["min"] > b["max"] or a["max"] < b["min"]
    return {"diff": diff, "welch_t": t, "exceeds_spread": verdict}

def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)

def fmt(x, d):
    return ("%%.%df" % d) % x

def spread(st, d):
    """the sample std of a stats dict, "n/a" for one seed (it has none)"""
    return "n/a" if st["n"] < 2 else fmt(st["std"], d)

def verdict_word(v):
    return "n/a (one seed)" if v is None else ("yes" if v else "no")

def combine_small(prefix, command, files):
    mixers = {}
    order = []
    for p in files:
        r = load(p)
        m = r.get("mixer")
        if not isinstance(m, str) or not m:
            die("%s: field 'mixer' missing" % p)
        row = {"seed": int(number(r, "seed", p)), "run": r.get("run", "")}
        for k, _, _ in METRICS + [("params", "", 0), ("steps", "", 0)]:
            row[k] = number(r, k, p)
        if m not in mixers:
            mixers[m] = {"runs": []}
            order.append(m)
        mixers[m]["runs"].append(row)
    for m in order:
        e = mixers[m]
        e["params"] = int(e["runs"][0]["params"])
        e["stats"] = {k: stats([r[k] for r in e["runs"]]) for k, _, _ in METRICS}
    ref = "gma" if "gma" in mixers else None
    for m in order:
        if ref and m != ref:
            mixers[m]["vs_gma"] = {k: compare(mixers[m]["stats"][k], mixers[ref]["stats"][k])
                                   for k, _, _ in METRICS}
    out = {"kind": "small", "command": command, "date": time.strftime("%Y-%m-%d %H:%M:%S"),
           "steps": int(mixers[order[0]]["runs"][0]["steps"]),
           "seeds": sorted({r["seed"] for m in order for r in mixers[m]["runs"]}),
           "order": order, "mixers": mixers,
           "spread_rule": "a difference exceeds the spread when the ranges [min, max] over the seeds do not overlap; Welch t reported beside it"}
    write(prefix + ".json", json.dumps(out, indent=1) + "\n")
    write(prefix + ".txt", small_text(out))
    write(prefix + ".md", small_md(out))

def small_text(s):
    lines = ["%-10s %5s %10s %-22s %-22s %-22s %-20s" % ("mixer", "seeds", "params", "valid ppl mean+-std",
             "test ppl mean+-std", "test word ppl", "tokens/s")]
    for m in s["order"]:
        e = s["mixers"][m]
        st = e["stats"]
        cell = lambda k, d: "%s +- %s" % (fmt(st[k]["mean"], d), spread(st[k], d))
        lines.append("%-10s %5d %10d %-22s %-22s %-22s %-20s" % (m, st["test_ppl"]["n"], e["params"],
                     cell("valid_ppl", 1), cell("test_ppl", 1), cell("test_word_ppl", 0), cell("tokens_per_s", 0)))
    lines.append("")
    lines += verdict_lines(s)
    return "\n".join(lines) + "\n"

def verdict_lines(s):
    out = []
    for m in s["order"]:
        v = s["mixers"][m].get("vs_gma")
        if not v:
            continue
        parts = []
        for k, label, d in METRICS:
            c = v[k]
            t = "n/a" if c["welch_t"] is None else "%.2f" % c["welch_t"]
            parts.append("%s %+.*f (t %s, exceeds spread: %s)" % (label, d, c["diff"], t, verdict_word(c["exceeds_spread"])))
        out.append("%s - gma: %s" % (m, "; ".join(parts)))
    return out

def small_md(s):
    lines = ["| mixer | params | valid ppl | test ppl | test word-level ppl | training tokens/s |",
             "|---|---:|---:|---:|---:|---:|"]
    for m in s["order"]:
        e = s["mixers"][m]
        st = e["stats"]
        cell = lambda k, d: "%s ± %s [%s, %s]" % (fmt(st[k]["mean"], d), spread(st[k], d),
                                                  fmt(st[k]["min"], d), fmt(st[k]["max"], d))
        lines.append("| %s | %s | %s | %s | %s | %s |" % (m, "{:,}".format(e["params"]), cell("valid_ppl", 1),
                     cell("test_ppl", 1), cell("test_word_ppl", 0), cell("tokens_per_s", 0)))
    lines.append("")
    lines.append("Mean ± sample std [min, max] over seeds %s, %d steps each." %
                 (", ".join(str(x) for x in s["seeds"]), s["steps"]))
    lines.append("")
    lines.append("| against gma | valid ppl diff (t) | exceeds? | test ppl diff (t) | exceeds? | tokens/s diff (t) | exceeds? |")
    lines.append("|---|---:|---|---:|---|---:|---|")
    for m in s["order"]:
        v = s["mixers"][m].get("vs_gma")
        if not v:
            continue
        row = [m]
        for k, d in (("valid_ppl", 1), ("test_ppl", 1), ("tokens_per_s", 0)):
            c = v[k]
            t = "n/a" if c["welch_t"] is None else "%.2f" % c["welch_t"]
            row += ["%+.*f (%s)" % (d, c["diff"], t), verdict_word(c["exceeds_spread"])]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"

def distance(p):
    return math.sqrt(((p["used_components"] - PAPER["used_components"]) / KC) ** 2 +
                     (p["usage_entropy"] - PAPER["usage_entropy"]) ** 2 + (p["nmi"] - PAPER["nmi"]) ** 2)

def combine_routing(prefix, command, files):
    variants = []
    for p in files:
        r = load(p)
        v = {"variant": r.get("variant"), "sets": r.get("sets", ""), "run": r.get("run", ""),
             "analysis": r.get("analysis", "")}
        if not isinstance(v["variant"], str) or not v["variant"]:
            die("%s: field 'variant' missing" % p)
        for k in ("test_ppl", "collapse_alerts", "reseeded_alerts", "steps"):
            v[k] = number(r, k, p)
        a = load(v["analysis"]) if not isinstance(r.get("pooled"), dict) else r
        pooled = a.get("pooled")
        if not isinstance(pooled, dict):
            die("%s: field 'pooled' missing" % (v["analysis"] or p))
        for k in PAPER:
            v[k] = number(pooled, k, v["analysis"] or p)
        v["distance"] = distance(v)
        variants.append(v)
    base = next((v for v in variants if v["variant"] == "default"), None)
    for v in variants:
        v["ppl_cost_vs_default"] = v["test_ppl"] - base["test_ppl"] if base else None
    closest = min(variants, key=lambda v: v["distance"])
    out = {"kind": "routing", "command": command, "date": time.strftime("%Y-%m-%d %H:%M:%S"),
           "steps": int(variants[0]["steps"]), "n_components": KC, "paper": PAPER,
           "distance_rule": "sqrt(((used - 104)/128)^2 + (entropy - 0.933)^2 + (nmi - 0.244)^2), pooled over layers and heads",
           "variants": variants, "closest": closest["variant"]}
    write(prefix + ".json", json.dumps(out, indent=1) + "\n")
    write(prefix + ".txt", routing_text(out))
    write(prefix + ".md", routing_md(out))

def closest_line(r):
    c = next(v for v in r["variants"] if v["variant"] == r["closest"])
    s = "Closest to the paper's 104 / 0.933 / 0.244: %s (distance %.3f: %.1f used, entropy %.3f, NMI %.3f)" % (
        c["variant"], c["distance"], c["used_components"], c["usage_entropy"], c["nmi"])
    if c["ppl_cost_vs_default"] is not None:
        s += ", test ppl %.1f, %+.1f against default" % (c["test_ppl"], c["ppl_cost_vs_default"])
    return s + "."

def routing_text(r):
    lines = ["%-20s %8s %8s %8s %9s %9s %7s %8s" % ("variant", "used", "entropy", "nmi", "distance",
             "test_ppl", "alerts", "reseeded")]
    lines.append("%-20s %8.1f %8.3f %8.3f %9s %9s %7s %8s" % ("paper", PAPER["used_components"],
                 PAPER["usage_entropy"], PAPER["nmi"], "0", "-", "-", "-"))
    for v in r["variants"]:
        lines.append("%-20s %8.1f %8.3f %8.3f %9.3f %9.1f %7d %8d" % (v["variant"], v["used_components"],
                     v["usage_entropy"], v["nmi"], v["distance"], v["test_ppl"], v["collapse_alerts"],
                     v["reseeded_alerts"]))
    return "\n".join(lines) + "\n\n" + closest_line(r) + "\n"

def routing_md(r):
    lines = ["| variant | config keys | used of 128 | usage entropy | NMI | distance | test ppl | vs default | collapse alerts (reseeded) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|",
             "| paper (WikiText-103, full training) | | 104 | 0.933 | 0.244 | 0 | | | |"]
    for v in r["variants"]:
        cost = "" if v["ppl_cost_vs_default"] is None else "%+.1f" % v["ppl_cost_vs_default"]
        keys = v["sets"].replace("--set ", "").strip()
        lines.append("| %s | %s | %.1f | %.3f | %.3f | %.3f | %.1f | %s | %d (%d) |" % (
            v["variant"], "`%s`" % keys if keys else "", v["used_components"], v["usage_entropy"], v["nmi"],
            v["distance"], v["test_ppl"], cost, v["collapse_alerts"], v["reseeded_alerts"]))
    return "\n".join(lines) + "\n\n" + closest_line(r) + "\n"

def newest(pattern):
    fs = sorted(f for f in glob.glob(pattern) if f.endswith(".json"))
    return fs[-1] if fs else None

def machine():
    model, cores = "unknown", str(os.cpu_count() or "?")
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() == "Model name":
                model = v.strip()
    except OSError:
        pass
    return "%s, %s cores (lscpu / nproc), %s %s" % (model, cores, platform.system(), platform.machine())

def plots(figdir, small, routing):
    """figures through scripts/plot_runs.sh, when it exists: [(title, path, command)]"""
    tool = "scripts/plot_runs.sh"
    if not os.access(tool, os.X_OK):
        return []
    figs = []
    os.makedirs(figdir, exist_ok=True)
    if small:
        args, runs = [], []
        for m in small["order"]:
            r = sorted(small["mixers"][m]["runs"], key=lambda x: x["seed"])[0]
            if r["run"]:
                args += ["--label", "%s=%s" % (m, r["run"])]
                runs.append(r["run"])
        if runs:
            cmd = [tool, "--out", figdir, "--title", "small profile, seed %d" % small["seeds"][0]] + args + runs
            if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode == 0:
                for f, t in (("loss_steps", "training and validation loss against steps"),
                             ("loss_tokens", "training and validation loss against tokens"),
                             ("ppl_steps", "validation perplexity against steps")):
                    if os.path.exists(os.path.join(figdir, f + ".png")):
                        figs.append(("small", t, os.path.join(figdir, f + ".png"), cmd))
    if routing:
        rdir = os.path.join(figdir, "routing")
        args = []
        for v in routing["variants"]:
            if v["analysis"]:
                args += ["--routing", v["analysis"], "--label", "%s=%s" % (v["variant"], v["analysis"])]
        if args:
            os.makedirs(rdir, exist_ok=True)
            cmd = [tool, "--out", rdir] + args
            if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode == 0 and \
                    os.path.exists(os.path.join(rdir, "utilisation.png")):
                figs.append(("routing", "routing utilisation per variant (share of tokens per component, sorted)",
                             os.path.join(rdir, "utilisation.png"), cmd))
    return figs

def shell(cmd):
    return " ".join(a if a and all(c.isalnum() or c in "-_./=:," for c in a) else "'%s'" % a for a in cmd)

def split_lines(meta_path):
    """one line per split of the shards' meta.json: speeches, words, tokens"""
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        sp = meta["splits"]
        return ["%s: %d speeches, %s words, %s tokens" % (k, (sp[k]["lines"] + 1) // 2,
                "{:,}".format(sp[k]["words"]), "{:,}".format(sp[k]["tokens"])) for k in ("train", "valid", "test")]
    except (OSError, ValueError, KeyError, TypeError):
        return []

def kept_section(path, head):
    """The section `head` of the page at path as it stands (scripts/reproduce_longctx.sh
    --write-docs writes it from its own JSON), so that rewriting the page keeps it."""
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except OSError:
        return []
    if head not in lines:
        return []
    i = lines.index(head)
    j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
    sec = lines[i:j]
    while sec and not sec[-1].strip():
        sec.pop()
    return sec + [""]

def results_md(small_path, routing_path, out_path, figdir, do_plots, notes=()):
    small = load(small_path) if small_path else None
    routing = load(routing_path) if routing_path else None
    if not small and not routing:
        die("no runs/small-*.json or runs/routing-*.json (run scripts/reproduce_small.sh first)")
    figs = plots(figdir, small, routing) if do_plots else []
    rel = lambda p: os.path.relpath(p, os.path.dirname(out_path) or ".")
    L = ["# Results", "",
         "Written by `scripts/write_results.sh` from the JSON outputs of `scripts/reproduce_small.sh` and",
         "`scripts/reproduce_routing.sh`; do not edit by hand, rerun the scripts (with `--write-docs` they write it here).", "",
         "Reruns: every `scripts/reproduce_*.sh` and `scripts/migrate.sh` continues where an earlier call into the same",
         "output stopped. The output is `--out DIR` (reproduce_longctx, reproduce_mqar, reproduce_migration, reproduce_cross `run`,",
         "migrate.sh) or the stamp of the run names (`--stamp S`, printed as a call starts: reproduce_small, reproduce_routing,",
         "reproduce_future, reproduce_wikitext, reproduce_lra). A run finished there is kept and not trained again; a run stopped",
         "part way is continued with `gmatrain --resume` (one stopped before its first checkpoint is started again); an evaluation",
         "already made is kept; a results file keeps the rows of the runs it held (a row a run, this call's row for a run it has).",
         "What a script trains is recorded in the run's plan.txt: a run made with other options, or a folder the script did not",
         "make, is refused in one line naming it, and only `--force` trains it again (removing it). migrate.sh records the",
         "teacher's checkpoint (step, SHA-256 of its model.safetensors) and refuses a teacher that changed since, unless `--force`",
         "(its figures and every phase are then made again). Nothing else is removed.",
         "",
         "Machine: %s. Written %s." % (machine(), time.strftime("%Y-%m-%d")), ""]
    if small:
        L += ["## Small profile over seeds", "",
              "Command: `%s` (%s; JSON `%s`)." % (small["command"], small["date"], small_path), "",
              "Data: the State of the Union corpus split by `scripts/sotu_split.sh` (the last 8 speeches test,",
              "the 8 before valid, the rest train), a 4096-token byte-level BPE trained on its train split;",
              "configs `configs/small_<mixer>.json` with `train.steps` %d, evaluated on the full valid and test splits." % small["steps"], "",
              ] + (["Splits (`data/sotu8-bpe4k/meta.json`): " + "; ".join(split_lines("data/sotu8-bpe4k/meta.json")) + ".", ""]
                   if split_lines("data/sotu8-bpe4k/meta.json") else []) + [
              small_md(small).rstrip(), "",
              "Training tokens/s is the speed at the time of each run; on a machine shared with other jobs",
              "it measures the load as much as the mixer.", "",
              "Which differences against gma exceed the spread (%s):" % small["spread_rule"], ""]
        L += ["* " + l for l in verdict_lines(small)]
        L.append("")
        for f in figs:
            if f[0] == "small":
                L += ["![%s](%s)" % (f[1], rel(f[2])), "", "%s: `%s`" % (f[1][0].upper() + f[1][1:], shell(f[3])), ""]
    if routing:
        L += ["## Routing remedies at Kc = 128", "",
              "Command: `%s` (%s; JSON `%s`); `configs/small_gma.json` with `gma.n_components` 128 and" % (
                  routing["command"], routing["date"], routing_path),
              "`train.steps` %d on the same data, seed 1337, one run per variant; figures from" % routing["steps"],
              "`gmaeval --data test --analyze-json` pooled over layers and heads; collapse alerts are the",
              "`collapse_alert` rows of each run's metrics.jsonl (docs/routing.md).", "",
              routing_md(routing).rstrip(), "",
              "Distance: " + routing["distance_rule"] + ".", ""]
        for f in figs:
            if f[0] == "routing":
                L += ["![%s](%s)" % (f[1], rel(f[2])), "", "%s: `%s`" % (f[1][0].upper() + f[1][1:], shell(f[3])), ""]
    L += kept_section(out_path, "## Long context")
    if notes:
        L += ["## Notes on these runs", ""]
        for n in notes:
            L += [n, ""]
    if do_plots and not figs:
        L += ["(No figures: scripts/plot_runs.sh is not there or drew nothing.)", ""]
    kept = kept_section(out_path, MQAR_HEAD)
    try:  # the section of scripts/write_future_results.sh, from its heading on, stays
        old = open(out_path).read()
        at = old.find("\n" + FUTURE_HEAD)
        if at >= 0: L += [old[at + 1:].rstrip("\n"), ""]
    except OSError:
        pass
    write(out_path, "\n".join(L))
    if kept:  # the MQAR section (written by the mqar command) stays on the page
        splice(out_path, kept)
    print("%s: wrote %s" % (ME, out_path))

MQAR_HEAD = "## Associative recall (MQAR, Zoology protocol)"

def mqar_rows(res, path):
    rows = res.get("runs")
    if not isinstance(rows, list):
        die("%s: field 'runs' missing (not written by scripts/reproduce_mqar.sh)" % path)
    grid = res.get("grid")
    if not isinstance(grid, dict) or not all(isinstance(grid.get(k), list) for k in ("mixers", "widths", "lrs")):
        die("%s: field 'grid' missing or not mixers / widths / lrs lists" % path)
    for r in rows:
        for k in ("width", "lr", "state_bytes", "mean_acc"):
            number(r, k, path)
        if not isinstance(r.get("mixer"), str) or not isinstance(r.get("acc"), dict):
            die("%s: a run without 'mixer' or 'acc'" % path)
        sd = r.get("seed", 1)  # a row written before --seeds is seed 1
        if isinstance(sd, bool) or not isinstance(sd, int) or sd < 1:
            die("%s: a run's 'seed' is not a positive integer" % path)
    seeds = res.get("seeds", [1])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds):
        die("%s: field 'seeds' not a list of seeds" % path)
    return rows, grid, seeds

def over_seeds(rs, lens):
    """The runs RS of one (mixer, width, lr), one a seed, as one row: the mean accuracy per
    test length and of the mean, with the min and max over the seeds."""
    b = dict(rs[0])
    b["seeds"] = len(rs)
    b["acc"], b["acc_min"], b["acc_max"] = {}, {}, {}
    for x in lens:
        v = [r["acc"][x] for r in rs if x in r["acc"]]
        if v:
            b["acc"][x], b["acc_min"][x], b["acc_max"][x] = sum(v) / len(v), min(v), max(v)
    m = [r["mean_acc"] for r in rs]
    b["mean_acc"], b["mean_acc_min"], b["mean_acc_max"] = sum(m) / len(m), min(m), max(m)
    return b

def seed_cell(b, key, x=None):
    """'mean (min-max)' of the key of the row B over its seeds, the mean alone for one."""
    v, lo, hi = (b[key], b[key + "_min"], b[key + "_max"]) if x is None else (b[key][x], b[key + "_min"][x], b[key + "_max"][x])
    return "%.3f (%.3f-%.3f)" % (v, lo, hi) if b["seeds"] > 1 else "%.3f" % v

def token_name(m):
    """The mixer NAME of a reproduce_mqar.sh token [bc-]NAME[+sc][+nopos]."""
    return (m[3:] if m.startswith("bc-") else m).split("+")[0]

def is_gma(m):
    return token_name(m).startswith("gma")

def off_plateau(acc, rule):
    """1 when a run's accuracies ACC (test length -> acc) are at least 0.1 above the
    no-lookup rule 1/P at some test length (docs/mqar.md, "The page and the no-lookup rule")."""
    return any(x in rule and float(a) >= float(rule[x]) + 0.1 for x, a in acc.items())

def mqar_plateau(res, best, grid, seeds, lens):
    """The plateau lines of the MQAR section: the rule; each best point's seeds off the
    plateau; each token against its +sc twin; and GMA's standing in plain sentences (where it
    leaves the plateau, at which state size, and the baselines it still loses to)."""
    rule = res.get("no_lookup")
    if not isinstance(rule, dict) or not rule:
        return ["No-lookup rule: not recorded in this results.json (written before it was), so no plateau verdict.", ""]
    runs = res["runs"]
    L = ["No-lookup rule: %s (1/P at P pairs: a model that knows the values but looks nothing up); a run has left the "
         "plateau when its accuracy at some test length is at least 0.1 above it." % ", ".join(
             "%s at length %s" % (rule[x], x) for x in lens if x in rule), ""]
    off = {}
    for (m, w), b in best.items():
        rs = [r for r in runs if r["mixer"] == m and int(r["width"]) == w and float(r["lr"]) == float(b["lr"])]
        off[(m, w)] = (sum(off_plateau(r["acc"], rule) for r in rs), len(rs))
    if not any(k for k, _ in off.values()) and not any(off_plateau(r["acc"], rule) for r in runs):
        return L + ["**No mixer left the plateau: this sweep ranks nothing.** Every accuracy is within 0.1 of the "
                    "no-lookup rule; differences between mixers here are noise, not recall.", ""]
    L.append("Off the plateau at the best learning rate (seeds): " + "; ".join(
        "%s width %d: %d of %d" % (m, w, k, n) for (m, w), (k, n) in sorted(off.items(), key=lambda t: (t[0][1], grid["mixers"].index(t[0][0])))) + ".")
    L.append("")
    pairs = [(m, m + "+sc") for m in grid["mixers"] if "+sc" not in m and m + "+sc" in grid["mixers"]]
    conv = []
    for m, msc in pairs:
        for w in grid["widths"]:
            if (m, int(w)) in best and (msc, int(w)) in best:
                a, b = best[(m, int(w))], best[(msc, int(w))]
                conv.append("%s width %d: %.3f (%d of %d seeds off) without, %.3f (%d of %d) with" % (
                    m, int(w), a["mean_acc"], off[(m, int(w))][0], off[(m, int(w))][1],
                    b["mean_acc"], off[(msc, int(w))][0], off[(msc, int(w))][1]))
    if conv:
        L += ["The short convolution on q, k, v (`+sc`, model.short_conv 4), mean accuracy without and with it: " + "; ".join(conv) + ".", ""]
    for w in grid["widths"]:
        g = [(m, best[(m, int(w))]) for m in grid["mixers"] if is_gma(m) and (m, int(w)) in best]
        if not g:
            continue
        up = [(m, b) for m, b in g if 2 * off[(m, int(w))][0] > off[(m, int(w))][1]]
        if up:
            m, b = min(up, key=lambda t: t[1]["state_bytes"])
            s_ = ("At width %d GMA leaves the plateau on most seeds from %s on (%s state bytes, mean %.3f)" % (
                int(w), m, "{:,}".format(int(b["state_bytes"])), b["mean_acc"]))
            cap = b["state_bytes"]
        else:
            m, b = max(g, key=lambda t: t[1]["mean_acc"])
            s_ = "At width %d no GMA setting leaves the plateau on most seeds (best %s, mean %.3f, %d of %d seeds off)" % (
                int(w), m, b["mean_acc"], off[(m, int(w))][0], off[(m, int(w))][1])
            cap = max(x["state_bytes"] for _, x in g)
        base = [(x, best[(x, int(w))]) for x in grid["mixers"] if not is_gma(x) and (x, int(w)) in best]
        beat = [(x, y) for x, y in base if y["mean_acc"] > b["mean_acc"]]
        small = [(x, y) for x, y in beat if y["state_bytes"] <= cap]
        if beat:
            s_ += "; it loses to %s" % ", ".join("%s (%.3f, %s bytes)" % (x, y["mean_acc"], "{:,}".format(int(y["state_bytes"]))) for x, y in beat)
            if small:
                s_ += ", of which %s at no more state" % ", ".join(x for x, _ in small)
        else:
            s_ += "; no baseline run here beats it"
        L += [s_ + ".", ""]
    return L

def mqar_section(path, notes=(), page_dir=None):
    res = load(path)
    rows, grid, seeds = mqar_rows(res, path)
    lens = [str(x) for x in res.get("test_lengths", [])]
    first = seeds[0]
    key = lambda r: (r["mixer"], int(r["width"]), float(r["lr"]))
    done = {key(r): r for r in rows if r.get("seed", 1) == first}
    by_seed = {key(r) + (r.get("seed", 1),): r for r in rows}
    others = ("seed " if len(seeds) == 2 else "seeds ") + ", ".join(str(x) for x in seeds[1:])
    nseeds = "one seed a run" if len(seeds) == 1 else (
        "seed %d at every learning rate, then %s at the best learning rate of seed %d only (the choice made once, on seed %d)" % (
            first, others, first, first))
    L = [MQAR_HEAD, "",
         "Written by `scripts/write_results.sh mqar %s` from the JSON of `scripts/reproduce_mqar.sh`" % path,
         "(docs/mqar.md: the generator against Zoology's, the recipe, each mixer's state size).", "",
         "Command: `%s` (%s; %s; a machine shared with other jobs, so the minutes are loose)." % (
             res.get("command", "?"), res.get("date", "?"), res.get("machine", "?")), "",
         "Profile %s: vocabulary %s, %s steps a run, tested at lengths %s; %s. Each row is the best" % (
             res.get("profile", "?"), res.get("vocab", "?"), res.get("steps", "?"), ", ".join(lens), nseeds),
         "learning rate of its (mixer, width) by mean test accuracy over the test lengths on seed %d, as Zoology reports" % first,
         "the best of its sweep; its accuracies are the mean over the seeds run at that learning rate, \"(min-max)\"",
         "over them where more than one ran (a seed changes the initialisation and the generated train and test",
         "examples); \"lr range\" is seed %d's mean accuracy of the worst and the best learning rate run." % first, ""]
    head = "| mixer | width | best lr | state bytes | " + " | ".join("acc@" + x for x in lens) + " | mean | seeds | lr range | lrs run |"
    L += [head, "|---|---:|---:|---:|" + "---:|" * len(lens) + "---:|---:|---|---:|"]
    best = {}
    for m in grid["mixers"]:
        for w in grid["widths"]:
            rs = [done[(m, int(w), float(lr))] for lr in grid["lrs"] if (m, int(w), float(lr)) in done]
            if not rs:
                continue
            b1 = max(rs, key=lambda r: r["mean_acc"])  # the first on a tie (grid order)
            b = over_seeds([by_seed[key(b1) + (sd,)] for sd in seeds if key(b1) + (sd,) in by_seed], lens)
            best[(m, int(w))] = b
            means = [r["mean_acc"] for r in rs]
            L.append("| %s | %d | %g | %s | %s | %s | %d | [%.3f, %.3f] | %d of %d |" % (
                m, int(w), b["lr"], "{:,}".format(int(b["state_bytes"])),
                " | ".join(seed_cell(b, "acc", x) if x in b["acc"] else "-" for x in lens),
                seed_cell(b, "mean_acc"), b["seeds"], min(means), max(means), len(rs), len(grid["lrs"])))
    if not best:
        L += ["| (no run done) |" + " |" * (7 + len(lens)), ""]
    L.append("")
    plateau = mqar_plateau(res, best, grid, seeds, lens)
    L += plateau
    flat = any("ranks nothing" in x for x in plateau)  # no ranking to print
    cmp_lines = []
    for w in ([] if flat else grid["widths"]):
        g = [best[(m, int(w))] for m in grid["mixers"] if is_gma(m) and (m, int(w)) in best]
        if not g:
            continue
        gb = max(g, key=lambda r: r["mean_acc"])
        parts = ["%s %+.3f" % (m, gb["mean_acc"] - best[(m, int(w))]["mean_acc"])
                 for m in grid["mixers"] if not is_gma(m) and (m, int(w)) in best]
        if parts:
            cmp_lines.append("* width %d: the best gma (%s, mean %.3f) minus each baseline's best: %s." % (
                int(w), gb["mixer"], gb["mean_acc"], ", ".join(parts)))
    if cmp_lines:
        L += ["GMA against the baselines (mean test accuracy; a negative number is a loss for gma):", ""] + cmp_lines + [""]
    missing = ["%s width %d lr %g" % (m, int(w), float(lr)) for m in grid["mixers"] for w in grid["widths"]
               for lr in grid["lrs"] if (m, int(w), float(lr)) not in done]
    if missing:
        L += ["Not run (%d of %d runs of the grid): %s." % (len(missing), len(missing) + len(done), "; ".join(missing)), ""]
    else:
        L += ["Every run of the grid (%d) was done." % len(done), ""]
    if len(seeds) > 1:
        more = [(m, w, b["lr"], sd) for (m, w), b in best.items() for sd in seeds[1:]]
        left = ["%s width %d lr %g seed %d" % x for x in more if (x[0], x[1], float(x[2]), x[3]) not in by_seed]
        if left:
            L += ["Not run on the other seeds (%d of %d: %s at the best lr of each (mixer, width) run on seed %d): %s." % (
                len(left), len(more), others, first, "; ".join(left)), ""]
        else:
            L += ["Every run of %s at the best learning rates (%d) was done." % (others, len(more)), ""]
    figs = [(f, t) for f, t in (("mqar_width", "mean test accuracy against width"),
                                 ("mqar_state", "mean test accuracy against the recurrent state in bytes"))
            if os.path.exists(os.path.join(os.path.dirname(path), f + ".png"))]
    if figs and page_dir is not None:
        os.makedirs(os.path.join(page_dir, "results"), exist_ok=True)
        for f, t in figs:
            shutil.copyfile(os.path.join(os.path.dirname(path), f + ".png"), os.path.join(page_dir, "results", f + ".png"))
            L += ["![%s](results/%s.png)" % (t, f), ""]
        L += ["Plots: `scripts/reproduce_mqar.sh --table %s` (gnuplot), copied beside this page." % path, ""]
    for n in notes:
        L += [n, ""]
    return L

def splice(page_path, section):
    try:
        with open(page_path) as f:
            lines = f.read().split("\n")
    except OSError:
        lines = ["# Results", ""]
    if MQAR_HEAD in lines:
        i = lines.index(MQAR_HEAD)
        j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
    elif "## Notes on these runs" in lines:
        i = j = lines.index("## Notes on these runs")
    else:
        while lines and lines[-1] == "":
            lines.pop()
        lines.append("")
        i = j = len(lines)
    out = lines[:i] + section + lines[j:]
    write(page_path, "\n".join(out).rstrip("\n") + "\n")

def mqar_main(argv):
    if not argv or argv[0].startswith("--"):
        sys.stderr.write("usage: %s mqar RESULTS.json [--out FILE] [--note TEXT]...\n" % ME)
        sys.exit(2)
    res, out, notes, i = argv[0], "docs/results.md", [], 1
    while i < len(argv):
        a = argv[i]
        if a not in ("--out", "--note"):
            sys.stderr.write("usage: %s mqar RESULTS.json [--out FILE] [--note TEXT]...\n" % ME)
            sys.exit(2)
        if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
            sys.stderr.write("%s: %s needs a value (see --help)\n" % (ME, a))
            sys.exit(2)
        if a == "--out": out = argv[i + 1]
        else: notes.append(argv[i + 1])
        i += 2
    splice(out, mqar_section(res, notes, os.path.dirname(out) or "."))
    print("%s: wrote the MQAR section of %s" % (ME, out))

def main(argv):
    if argv and argv[0] == "mqar":
        mqar_main(argv[1:])
        return
    if argv and argv[0] in ("combine-small", "combine-routing"):
        if len(argv) < 4:
            die("usage: %s %s PREFIX COMMAND FILE.json..." % (ME, argv[0]))
        (combine_small if argv[0] == "combine-small" else combine_routing)(argv[1], argv[2], argv[3:])
        return
    small = routing = None
    out, figdir, do_plots, notes = "docs/results.md", "docs/results", True, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--no-plots":
            do_plots = False; i += 1; continue
        if a not in ("--small", "--routing", "--out", "--figures", "--note"):
            sys.stderr.write("usage: %s [--small FILE] [--routing FILE] [--out FILE] [--figures DIR] [--note TEXT]... [--no-plots]\n" % ME)
            sys.exit(2)
        if i + 1 >= len(argv) or argv[i + 1].startswith("--"):  # as need_value of lib_reproduce.sh
            sys.stderr.write("%s: %s needs a value (see --help)\n" % (ME, a))
            sys.exit(2)
        v = argv[i + 1]
        if a == "--note": notes.append(v)
        elif a == "--small": small = v
        elif a == "--routing": routing = v
        elif a == "--out": out = v
        else: figdir = v
        i += 2
    small = small or newest("runs/small-*.json")
    routing = routing or newest("runs/routing-*.json")
    results_md(small, routing, out, figdir, do_plots, notes)

main(sys.argv[1:])
PY
