#!/usr/bin/env python3
"""routing_diag.py: the plots and tables of the recall diagnosis (scripts/reproduce_diagnosis.sh).

  scripts/routing_diag.py DIR [--out OUT] [--command TEXT]
  scripts/routing_diag.py --summary RESULTS.json   (print the summary tables of results.md)

Reads DIR/<kind>-s<seed>/metrics.jsonl (kind self, cross, reinit or reseedk, the runs of
reproduce_diagnosis.sh; "routing_diag" rows of gma.diag_every, "valid" and "test" rows) and
writes into OUT (default DIR): results.json (per run: the test accuracy, the validation
accuracy by step and the diagnosis rows of the layers plotted every 100 steps and the last;
every row is in the .dat files), results.md (the summary tables at the last step, made from
results.json alone, between the markers <!-- gen:diag-summary --> that scripts/gen_docs.py
checks; then per run the figures at a few steps), <kind>.dat (one gnuplot block per run and layer) and
routing_diag.gp, then, with gnuplot, <kind>.png (eight panels against the step: validation
accuracy, components used by queries and keys, responsibility entropies, and for the key
rows j+o, o = -1, 0, 1, around each query's recall position j (the value of its pair; o = -1
the key token): the query's mass on the row's slot, the row's share of that slot, the row's
weight in the output over uniform attention's, the share of distinct slots among a
sequence's rows; and the centres' gradient norms of live and dead components). Layers
plotted: self, reinit and reseedk, the GMA layer (part "self"); cross, the cross layers (part
"cross"). Definitions of the fields: src/train/routing_diag.h, docs/routing.md.
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys

FIELDS = ["q_used", "k_used", "q_entropy", "k_entropy", "match_mass", "same_slot", "lookup_weight", "lookup_uniform",
          "slot_share", "key_slots_distinct", "live", "grad_centre", "grad_var", "grad_bias", "grad_centre_live",
          "grad_centre_dead"]
PART = {"self": "self", "cross": "cross", "reinit": "self", "reseedk": "self"}
HEAD = {"self": "MQAR, bc-gma64+sc", "cross": "cross-sequence MQAR, GMA Kc 64",
        "reinit": "MQAR, bc-gma64+sc, gma.on_collapse reinit",
        "reseedk": "MQAR, bc-gma64+sc, gma.on_collapse reinit, gma.reseed_rows keys"}
TITLE = {"self": "MQAR, bc-gma64+sc (self-attention GMA layer, Kc 64): seed 1 learns, seed 2 does not",
         "cross": "cross-sequence MQAR, GMA cross layers (Kc 64, causal GMA encoder): seed 1 learns, seed 2 does not",
         "reinit": "MQAR, bc-gma64+sc with gma.on_collapse reinit (query rows)",
         "reseedk": "MQAR, bc-gma64+sc with gma.on_collapse reinit from key rows (gma.reseed_rows keys)"}


def usage(msg):
    sys.exit("routing_diag.py: %s (usage: scripts/routing_diag.py DIR [--out OUT] [--command TEXT])" % msg)


def read_run(path):
    """valid accuracy by step, the test row, the diagnosis rows by layer"""
    valid, test, diag = [], None, {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except ValueError:
                usage("%s line %d: not JSON" % (path, n))
            if r.get("split") == "valid":
                valid.append((r["step"], r.get("acc")))
            elif r.get("split") == "test":
                test = r
            elif r.get("event") == "routing_diag":
                diag.setdefault((r.get("part", "self"), r["layer"]), []).append(r)
    return valid, test, diag


def fmt(v, nd=3):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if isinstance(v, float) and v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e4):
        return "%.2e" % v
    return ("%." + str(nd) + "f") % v if isinstance(v, float) else str(v)


def ratio(r):
    u = r.get("lookup_uniform")
    w = r.get("lookup_weight")
    return w / u if u and w is not None else None


OFFS = [-1, 0, 1, 2, 3]  # the key rows j + o of the *_by_offset lists


def offsets(r):
    """match, lookup / uniform and slot share at each offset (None where missing)"""
    u = r.get("lookup_uniform")
    m = r.get("match_by_offset") or [None] * 5
    lk = [(x / u if x is not None and u else None) for x in (r.get("lookup_by_offset") or [None] * 5)]
    sh = r.get("share_by_offset") or [None] * 5
    di = r.get("distinct_by_offset") or [None] * 5
    return list(m) + lk + list(sh) + list(di)


def last_row(run, layer):
    rows = run["layers"].get(str(layer)) or []
    return rows[-1] if rows else None


def read_at(r):
    """the row a query reads: of its pair's value row j and the next row j+1, the one with the
    larger weight over uniform attention (OFFS index 1 or 2)"""
    lk = offsets(r)[5:10]
    return 2 if (lk[2] or 0) > (lk[1] or 0) else 1


def summary(res):
    """the summary tables of results.md from results.json's runs (their last rows)"""
    runs = {(e["kind"], e["seed"]): e for e in res["runs"]}
    L = ["## At the last step", "",
         "j: a query's recall position (the value of its pair), j+1 the next pair's key token (its short-convolution "
         "window also holds the pair); row read: of j and j+1, the one with the larger weight over uniform "
         "attention; lookup: that weight as a multiple of uniform attention's, in brackets the next pair's row "
         "of the same kind (read + 2); components of 64; the cross layers' figures the mean of their 2 heads.", "",
         "| run | test acc | query / key components used | query entropy (nats) | row read | query mass on its slot "
         "| lookup / uniform (next pair's row) | row's share of its slot | recall rows in distinct slots "
         "| dead / live centre gradient |",
         "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for kind, part in (("self", "self"), ("cross", "cross")):
        layers = sorted({int(l) for (k, _), e in runs.items() if k == kind for l in e["layers"]}, reverse=True)
        for l in layers:
            for (k, seed), e in sorted(runs.items()):
                r = last_row(e, l) if k == kind else None
                if not r:
                    continue
                o = offsets(r)
                a = read_at(r)
                gl, gd = r.get("grad_centre_live"), r.get("grad_centre_dead")
                name = "self, seed %d" % seed if kind == "self" else "cross layer %d, seed %d" % (l, seed)
                acc = fmt(e["test_acc"], 5) if kind == "self" or l == max(layers) else ""
                L.append("| %s | %s | %s / %s | %s | %s | %s | %s (%s) | %s | %s | %s |" % (
                    name, acc, fmt(r["q_used"], 1), fmt(r["k_used"], 1), fmt(r.get("q_entropy"), 2),
                    "j" if a == 1 else "j+%d" % (a - 1), fmt(o[a], 3), fmt(o[5 + a], 1), fmt(o[5 + a + 2], 1),
                    fmt(o[10 + a], 2), fmt(o[15 + a], 2), fmt(gd / gl, 2) if gl and gd is not None else "-"))
    reseed = [(k, e) for k, e in ((k, runs.get((k, 2))) for k in ("self", "reinit", "reseedk")) if e]
    if len(reseed) > 1:
        label = {"self": "no re-seed", "reinit": "re-seed from query rows", "reseedk": "re-seed from key rows"}
        L += ["", "## Re-seeding dead components on seed 2 (`gma.on_collapse` reinit, `gma.reseed_rows`)", "",
              "At the last step, the pair's value row j:", "",
              "| run | test acc | query / key components used | recall rows in distinct slots | row's share of its slot "
              "| dead / live centre gradient |", "|---|---:|---:|---:|---:|---:|"]
        for k, e in reseed:
            r = last_row(e, max(int(l) for l in e["layers"]))
            o = offsets(r)
            gl, gd = r.get("grad_centre_live"), r.get("grad_centre_dead")
            L.append("| %s | %s | %s / %s | %s | %s | %s |" % (
                label[k], fmt(e["test_acc"], 5), fmt(r["q_used"], 1), fmt(r["k_used"], 1), fmt(o[16], 2),
                fmt(o[11], 2), fmt(gd / gl, 2) if gl and gd is not None else "-"))
    return "\n".join(L)


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--summary":
        try:
            with open(args[1]) as f:
                print(summary(json.load(f)))
        except (OSError, ValueError, KeyError, TypeError) as e:
            usage("%s: not a results.json of this script (%s)" % (args[1], e))
        return
    if not args or args[0].startswith("--"):
        usage("DIR missing")
    d, out, command = args[0], None, None
    i = 1
    while i < len(args):
        if args[i] in ("--out", "--command") and i + 1 < len(args):
            if args[i] == "--out":
                out = args[i + 1]
            else:
                command = args[i + 1]
            i += 2
        else:
            usage("unknown argument %s" % args[i])
    out = out or d
    if not os.path.isdir(d):
        usage("%s: no such directory" % d)
    runs = {}
    for name in sorted(os.listdir(d)):
        m = re.fullmatch(r"(self|cross|reinit|reseedk)-s(\d+)", name)
        p = os.path.join(d, name, "metrics.jsonl")
        if m and os.path.isfile(p):
            runs[(m.group(1), int(m.group(2)))] = read_run(p)
    if not runs:
        usage("%s: no <self|cross|reinit|reseedk>-s<seed>/metrics.jsonl" % d)
    os.makedirs(out, exist_ok=True)
    res = {"command": command, "fields": "src/train/routing_diag.h", "runs": []}
    md = ["# Recall diagnosis of GMA's routing", "",
          "Written by scripts/routing_diag.py%s. Fields: src/train/routing_diag.h and docs/routing.md; "
          "lookup/unif = lookup_weight / lookup_uniform (1: the recall value gets the weight of uniform attention); "
          "grad live/dead: mean norm of a live / dead component's centre gradient." % (
              " from `%s`" % command if command else ""), ""]
    gp = ["# written by scripts/routing_diag.py; cd to this directory and run: gnuplot routing_diag.gp",
          "set terminal pngcairo size 1200,1500 font ',9'; set key top left font ',8'; set grid; set format y '%g'"]
    pngs = []
    for kind in ("self", "cross", "reinit", "reseedk"):
        keys = sorted(k for k in runs if k[0] == kind)
        if not keys:
            continue
        blocks, names = [], []
        vblocks = []
        for key in keys:
            valid, test, diag = runs[key]
            seed = key[1]
            layers = sorted(l for (p, l) in diag if p == PART[kind])
            acc = test.get("acc") if test else None
            entry = {"kind": kind, "seed": seed, "test_acc": acc, "valid_acc": [[s, a] for s, a in valid], "layers": {}}
            vblocks.append(("seed %d" % seed, ["%d %s" % (s, a) for s, a in valid if a is not None]))
            md += ["## %s, seed %d: test accuracy %s" % (HEAD[kind], seed, fmt(acc, 5)), ""]
            for l in layers:
                rows = diag[(PART[kind], l)]
                entry["layers"][str(l)] = [{k: r.get(k) for k in ["step", "pairs"] + FIELDS + [
                    "match_by_offset", "lookup_by_offset", "share_by_offset", "distinct_by_offset"]}
                    for r in rows if r["step"] % 100 == 0 or r is rows[-1]]
                lines = []
                for r in rows:
                    vals = [r["step"]] + [r.get(k) for k in FIELDS] + [ratio(r)] + offsets(r)
                    lines.append(" ".join("NaN" if v is None else repr(v) for v in vals))
                blocks.append(lines)
                names.append("s%d" % seed if kind != "cross" else "s%d-L%d" % (seed, l))
                steps = [r["step"] for r in rows]
                pick = sorted(set(s for s in (steps[0], 100, 250, 500, 1000, 1500, 2000, 3000, steps[-1]) if s in steps))
                md += ["%s layer %d:" % (PART[kind], l), "",
                       "| step | q used | k used | q ent | k ent | match j-1 / j / j+1 | lookup/unif j-1 / j / j+1 | "
                       "slot share j-1 / j / j+1 | distinct j-1 / j / j+1 | live | grad live | grad dead |",
                       "|" + "---:|" * 12]
                for r in rows:
                    if r["step"] not in pick:
                        continue
                    ov = offsets(r)
                    three = lambda base, nd: " / ".join(fmt(ov[base + k], nd) for k in (0, 1, 2))
                    md.append("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                        r["step"], fmt(r["q_used"], 1), fmt(r["k_used"], 1), fmt(r.get("q_entropy")),
                        fmt(r.get("k_entropy")), three(0, 3), three(5, 2), three(10, 3), three(15, 3),
                        fmt(r["live"], 1),
                        fmt(r.get("grad_centre_live")), fmt(r.get("grad_centre_dead"))))
                md.append("")
            res["runs"].append(entry)
        with open(os.path.join(out, kind + ".dat"), "w") as f:
            f.write("# step " + " ".join(FIELDS) + " lookup_ratio " + " ".join(
                "%s%+d" % (w, o) for w in ("match", "lookup_ratio", "share", "distinct") for o in OFFS) + "; blocks: " + ", ".join(
                names) + "\n")
            for b in blocks:
                f.write("\n".join(b) + "\n\n\n")
        with open(os.path.join(out, kind + ".valid.dat"), "w") as f:
            f.write("# step valid_acc; blocks: " + ", ".join(n for n, _ in vblocks) + "\n")
            for _, b in vblocks:
                f.write("\n".join(b) + "\n\n\n")
        col = {k: i + 2 for i, k in enumerate(FIELDS)}
        col["lookup_ratio"] = len(FIELDS) + 2
        for wi, w in enumerate(("match", "lookup_ratio", "share", "distinct")):
            for oi, o in enumerate(OFFS):
                col["%s%+d" % (w, o)] = len(FIELDS) + 3 + wi * len(OFFS) + oi
        nb = len(blocks)
        dat, vdat = kind + ".dat", kind + ".valid.dat"
        nm = 'names = "%s"; vnames = "%s"' % (" ".join(names), " ".join("s%d" % k[1] for k in keys))

        def panel(title, ylabel, series, extra=""):
            plots = []
            for fld, tag, dash in series:
                plots.append("for [i=0:%d] '%s' index i using 1:%d with lines lc i + 1 dt %d title word(names, i + 1).' %s'" % (
                    nb - 1, dat, col[fld], dash, tag))
            return ["set title '%s'; set ylabel '%s'; %s" % (title, ylabel, extra), "plot " + ", ".join(plots),
                    "unset logscale y"]
        gp += ["set output '%s.png'" % kind, nm,
               "set multiplot layout 4,2 title '%s'" % TITLE[kind],
               "set xlabel 'step'",
               "set title 'validation accuracy (no lookup: 0.25)'; set ylabel 'accuracy'; set yrange [0:1]",
               "plot for [i=0:%d] '%s' index i using 1:2 with linespoints title word(vnames, i + 1), 0.25 with lines dt 3 lc 'black' title '1/P'" % (len(keys) - 1, vdat),
               "set yrange [*:*]"]
        gp += panel("components in use (argmax of some row)", "components",
                    [("q_used", "queries", 1), ("k_used", "keys", 2)])
        gp += panel("responsibility entropy (nats)", "nats", [("q_entropy", "queries", 1), ("k_entropy", "keys", 2)])
        gp += panel("mass of the query on the slot of key row j+o (j: the recall value)", "mass",
                    [("match-1", "o=-1", 3), ("match+0", "o=0", 1), ("match+1", "o=+1", 2)], "set yrange [0:1]")
        gp += panel("that row share of its slot when the query reads", "share",
                    [("share-1", "o=-1", 3), ("share+0", "o=0", 1), ("share+1", "o=+1", 2)], "set yrange [0:1]")
        gp += ["set yrange [*:*]"]
        gp += panel("weight of row j+o in the output over uniform attention", "ratio",
                    [("lookup_ratio-1", "o=-1", 3), ("lookup_ratio+0", "o=0", 1), ("lookup_ratio+1", "o=+1", 2)],
                    "set logscale y")
        gp += panel("centre gradient norm per component", "norm",
                    [("grad_centre_live", "live", 1), ("grad_centre_dead", "dead", 2)], "set logscale y")
        gp += ["unset logscale y; set yrange [0:1.05]"]
        gp += panel("rows j+o of the recall keys of a sequence in distinct slots (fraction)", "fraction",
                    [("distinct-1", "o=-1", 3), ("distinct+0", "o=0", 1), ("distinct+1", "o=+1", 2)])
        gp += ["set yrange [*:*]", "unset multiplot"]
        pngs.append(kind + ".png")
    with open(os.path.join(out, "routing_diag.gp"), "w") as f:
        f.write("\n".join(gp) + "\n")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    md[4:4] = ["<!-- gen:diag-summary -->", summary(res), "<!-- /gen:diag-summary -->", ""]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("tables: %s" % os.path.join(out, "results.md"))
    gnuplot = os.environ.get("GNUPLOT", "gnuplot")
    if not shutil.which(gnuplot):
        print("gnuplot not found: plots skipped (apt-get install gnuplot-nox)")
        return
    r = subprocess.run([gnuplot, "routing_diag.gp"], cwd=out, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("routing_diag.py: gnuplot failed on %s: %s" % (os.path.join(out, "routing_diag.gp"), r.stderr.strip()))
    print("plots: " + " ".join(os.path.join(out, p) for p in pngs))


if __name__ == "__main__":
    main()
