#!/usr/bin/env python3
"""The page of scripts/reproduce_migration.sh (docs/results/migration.md) from its output
folder: the teacher (steps, training seconds, perplexities), then per arm the mean, sample
std, min and max over the seeds of the whole valid and test splits' perplexity, the
difference against the teacher, the control (the teacher fine-tuned the same steps) and GMA
from scratch at the same budget, the gates migrate.sh passed and the smallest component
utilisation; the first seed's speeds. A "## What it shows" section already in the page (the
reading, by hand) is kept. With GPT2_DIR (scripts/migrate_gpt2_shape.sh's folder) its cost
table goes on the page too.
  migration_table.py OUT TEACHER COMMAND PAGE [GPT2_DIR]"""
import os
import sys

from results_common import kept_section, load, stats, write

ARMS = [("full", "migrated: transfer + window + distillation"),
        ("notransfer", "migrated without the transfer"),
        ("nowindow", "migrated without the window"),
        ("control", "control: the teacher fine-tuned alike"),
        ("scratch", "GMA from scratch, the budget"),
        ("long", "GMA from scratch, the teacher's steps + the budget")]


def closing(run):
    """valid and test perplexity of a run's closing evaluations (summary.json)."""
    s = load(os.path.join(run, "summary.json"))
    return {"valid": s["valid"]["ppl"], "test": s["test"]["ppl"], "seconds": s.get("train_seconds")}


def seed_dirs(out):
    return sorted(d for d in os.listdir(out) if d.startswith("s") and d[1:].isdigit())


def collect(out):
    """arm -> list of {seed, valid, test, gates, util, transfer} over the seeds run."""
    rows = {a: [] for a, _ in ARMS}
    for sd in seed_dirs(out):
        seed = int(sd[1:])
        for arm in ("full", "notransfer", "nowindow"):
            mj = os.path.join(out, sd, arm, "migration.json")
            if not os.path.exists(mj):
                continue
            m = load(mj)
            p = m["phases"][-1]
            util = min((u["utilised_fraction"] for u in p.get("utilisation", [])), default=None)
            rows[arm].append({"seed": seed, "valid": p["valid_ppl"], "test": p["test_ppl"],
                              "gates": p["gate_passed"], "gate_lines": p["gates"], "util": util,
                              "transfer": p.get("transfer"), "speeds": p.get("speeds"), "m": m})
            if arm == "full" and "control_valid_ppl" in p:
                rows["control"].append({"seed": seed, "valid": p["control_valid_ppl"], "test": p["control_test_ppl"]})
        for arm in ("scratch", "long"):
            run = os.path.join(out, sd, arm)
            if os.path.exists(os.path.join(run, "summary.json")):
                r = closing(run)
                rows[arm].append({"seed": seed, "valid": r["valid"], "test": r["test"]})
    return rows


def stat(xs):
    return stats(xs) if xs else None


def cell(s):
    if s is None:
        return "not run"
    if s["n"] == 1:
        return "%.1f" % s["mean"]
    return "%.1f ± %.1f [%.1f, %.1f]" % (s["mean"], s["std"], s["min"], s["max"])


def pct(a, b):
    return "%+.1f %%" % (100 * (a / b - 1)) if a is not None and b else ""


def page(out, teacher, command):
    rows = collect(out)
    full = rows["full"]
    m0 = full[0]["m"] if full else None
    t = closing(teacher)
    tcfg = load(os.path.join(teacher, "config.json"))
    tsteps = tcfg["train"]["steps"]
    tv = m0["teacher_valid_ppl"] if m0 else t["valid"]
    tt = m0["teacher_test_ppl"] if m0 else t["test"]
    st = {a: (stat([r["valid"] for r in rows[a]]), stat([r["test"] for r in rows[a]])) for a, _ in ARMS}
    ctrl = st["control"][0]["mean"] if st["control"][0] else None
    scr = st["scratch"][0]["mean"] if st["scratch"][0] else None
    seeds = sorted({r["seed"] for a, _ in ARMS for r in rows[a]})
    L = ["# Migration: a converged teacher, one conversion budget", "",
         "Written by `scripts/migration_table.py` from the runs of `scripts/reproduce_migration.sh`; do not edit",
         "the tables by hand.", "",
         "Command: `%s`." % command, "",
         "Teacher: configs/small_sdpa.json with 4 layers (d_model 128, 4 heads, context 128, batch 8) trained %d steps" % tsteps,
         "on data/sotu8-bpe4k (scripts/sotu_split.sh, 4096-token BPE) in %s s of training on this machine: valid" % (
             "%.0f" % t["seconds"] if t["seconds"] else "?"),
         "perplexity %.1f, test %.1f (the whole splits). The teacher is one run; every arm below is run" % (tv, tt),
         "for each of the seeds %s (the seed of its training; the teacher's weights are the same)." % ", ".join(map(str, seeds)), ""]
    if m0:
        tr = m0.get("transfer") or {}
        L += ["Conversion (scripts/migrate.sh --all-at-once, every layer GMA with K = %s): %s steps in all; the full arm" % (
            m0.get("n_components"), m0.get("total_steps") + (tr.get("steps") or 0)),
              "spends %s of them on the attention transfer (lr %s) and %s on distillation (weight %s, temperature %s)," % (
                  tr.get("steps", 0), tr.get("lr", "-"), m0.get("total_steps"),
                  (m0.get("distill") or {}).get("weight", "-"), (m0.get("distill") or {}).get("temperature", "-")),
              "lr %s with one schedule. Perplexities on the whole valid and test splits; gates as migrate.sh" % m0.get("lr"),
              "states them (docs/migration.md).", ""]
    L += ["| arm | seeds | valid ppl | test ppl | valid vs teacher | valid vs control | valid vs scratch | gates passed | min utilised |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for a, label in ARMS:
        v, te = st[a]
        g = [r for r in rows[a] if "gates" in r]
        gp = "%d of %d" % (sum(1 for r in g if r["gates"]), len(g)) if g else ""
        ut = [r["util"] for r in g if r.get("util") is not None]
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, v["n"] if v else 0, cell(v), cell(te), pct(v["mean"], tv) if v else "",
            pct(v["mean"], ctrl) if v and a != "control" else "", pct(v["mean"], scr) if v and a != "scratch" else "",
            gp, "%.3f" % min(ut) if ut else ""))
    L += ["", "Mean ± sample std [min, max] over the seeds; the differences are of the means.", ""]
    tl = [(r["seed"], r["transfer"]) for r in full if r.get("transfer")]
    if tl:
        L += ["Attention transfer (full arm): each layer's output-matching loss at its first and last logged step: " + "; ".join(
            "seed %d: %s" % (s, ", ".join("layer %s %.3g -> %.3g" % (x["layer"], x["first"], x["last"]) for x in tr["layers"]))
            for s, tr in tl) + ".", ""]
    sp = full[0].get("speeds") if full else None
    tsp = m0.get("teacher_speeds") if m0 else None
    if sp and tsp:
        L += ["Speeds of the first seed's full arm against the teacher (gmabench at the teacher's shape, random weights,",
              "this machine, loose): time to the first token of an N-token prompt (ms), decoding tokens/s.", "",
              "| model | " + " | ".join("ttft ms @%s | tok/s @%s" % (n, n) for n in sp) + " |",
              "|---|" + "---:|---:|" * len(sp)]
        for lab, s in (("teacher (sdpa)", tsp), ("migrated (full)", sp)):
            L.append("| %s | " % lab + " | ".join("%s | %s" % (
                "-" if s.get(n, {}).get("ttft_ms") is None else "%.1f" % s[n]["ttft_ms"],
                "-" if s.get(n, {}).get("decode_tokens_per_s") is None else "%.1f" % s[n]["decode_tokens_per_s"])
                for n in sp) + " |")
        L.append("")
    return L


def gpt2_section(d):
    """The section of scripts/migrate_gpt2_shape.sh's cost.md in folder d."""
    with open(os.path.join(d, "cost.md")) as f:
        text = f.read().strip()
    return ["## The pipeline at GPT-2 small's shape", "",
            "`scripts/migrate_gpt2_shape.sh`: a random GPT-2-shaped run exported (gmadata export gpt2), imported",
            "back (gmadata import gpt2) and migrated (migrate.sh --all-at-once, transfer, window, distillation); each",
            "stage's wall time and peak resident memory (GNU time).", "", text, ""]


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    out, teacher, command, path = sys.argv[1:5]
    L = page(out, teacher, command)
    if len(sys.argv) == 6:
        L += gpt2_section(sys.argv[5])
    L += kept_section(path, "## What it shows")
    write(path, "\n".join(L).rstrip("\n") + "\n")


if __name__ == "__main__":
    main()
