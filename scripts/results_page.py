"""results_page.py: docs/results/small.md and routing_remedies.md from the JSON of scripts/reproduce_small.sh and reproduce_routing.sh, and the commands of scripts/write_results.sh (see its --help)."""
from results_common import *
from results_small import combine_small, small_md, verdict_lines
from results_routing import combine_routing, routing_md
from mqar_section import mqar_main

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

def header(title, script):
    return ["# " + title, "",
            "Written by `scripts/write_results.sh` from the JSON output of `%s`;" % script,
            "do not edit by hand, rerun the script (with `--write-docs` it writes this page).", "",
            "Machine: %s. Written %s." % (machine(), time.strftime("%Y-%m-%d")), ""]

def figure_lines(figs, kind, rel):
    L = []
    for f in figs:
        if f[0] == kind:
            L += ["![%s](%s)" % (f[1], rel(f[2])), "", "%s: `%s`" % (f[1][0].upper() + f[1][1:], shell(f[3])), ""]
    return L

def footer(out_path, notes, do_plots, figs):
    L = kept_section(out_path, "## What it shows")  # the page's reading, written by hand, stays
    if notes:
        L += ["## Notes on these runs", ""]
        for n in notes:
            L += [n, ""]
    if do_plots and not figs:
        L += ["(No figures: scripts/plot_runs.sh is not there or drew nothing.)", ""]
    return L

def small_page(small, small_path, out_path, figs, do_plots, notes):
    rel = lambda p: os.path.relpath(p, os.path.dirname(out_path) or ".")
    splits = split_lines("data/sotu8-bpe4k/meta.json")
    L = header("Small language model: the mixers over seeds", "scripts/reproduce_small.sh")
    L += ["Command: `%s` (%s; JSON `%s`)." % (small["command"], small["date"], small_path), "",
          "Data: the State of the Union corpus split by `scripts/sotu_split.sh` (the last 8 speeches test,",
          "the 8 before valid, the rest train), a 4096-token byte-level BPE trained on its train split;",
          "configs `configs/small_<mixer>.json` with `train.steps` %d, evaluated on the full valid and test splits." % small["steps"], ""]
    if splits:
        L += ["Splits (`data/sotu8-bpe4k/meta.json`): " + "; ".join(splits) + ".", ""]
    L += [small_md(small).rstrip(), "",
          "Training tokens/s is the speed at the time of each run; on a machine shared with other jobs",
          "it measures the load as much as the mixer.", "",
          "Which differences against gma exceed the spread (%s):" % small["spread_rule"], ""]
    L += ["* " + l for l in verdict_lines(small)] + [""]
    L += figure_lines(figs, "small", rel) + footer(out_path, notes, do_plots, figs)
    write(out_path, "\n".join(L))
    print("%s: wrote %s" % (ME, out_path))

def routing_page(routing, routing_path, out_path, figs, do_plots, notes):
    rel = lambda p: os.path.relpath(p, os.path.dirname(out_path) or ".")
    L = header("Routing remedies at Kc 128 (small language model)", "scripts/reproduce_routing.sh")
    L += ["Command: `%s` (%s; JSON `%s`); `configs/small_gma.json` with `gma.n_components` 128 and" % (
              routing["command"], routing["date"], routing_path),
          "`train.steps` %d on the data of [the small profile](small.md), seed 1337, one run per variant;" % routing["steps"],
          "figures from `gmaeval --data test --analyze-json` pooled over layers and heads; collapse alerts",
          "are the `collapse_alert` rows of each run's metrics.jsonl (docs/routing.md).", "",
          routing_md(routing).rstrip(), "",
          "Distance: " + routing["distance_rule"] + ".", ""]
    L += figure_lines(figs, "routing", rel) + footer(out_path, notes, do_plots, figs)
    write(out_path, "\n".join(L))
    print("%s: wrote %s" % (ME, out_path))

def results_md(small_path, routing_path, out_path, routing_out, figdir, do_plots, notes=()):
    small = load(small_path) if small_path else None
    routing = load(routing_path) if routing_path else None
    if not small and not routing:
        die("no runs/small-*.json or runs/routing-*.json (run scripts/reproduce_small.sh first)")
    figs = plots(figdir, small, routing) if do_plots else []
    if small:
        small_page(small, small_path, out_path, figs, do_plots, notes)
    if routing:
        routing_page(routing, routing_path, routing_out, figs, do_plots, notes)

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
    out, routing_out, figdir, do_plots, notes = "docs/results/small.md", "docs/results/routing_remedies.md", "docs/results", True, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--no-plots":
            do_plots = False; i += 1; continue
        if a not in ("--small", "--routing", "--out", "--routing-out", "--figures", "--note"):
            sys.stderr.write("usage: %s [--small FILE] [--routing FILE] [--out FILE] [--routing-out FILE] [--figures DIR] [--note TEXT]... [--no-plots]\n" % ME)
            sys.exit(2)
        if i + 1 >= len(argv) or argv[i + 1].startswith("--"):  # as need_value of lib_reproduce.sh
            sys.stderr.write("%s: %s needs a value (see --help)\n" % (ME, a))
            sys.exit(2)
        v = argv[i + 1]
        if a == "--note": notes.append(v)
        elif a == "--small": small = v
        elif a == "--routing": routing = v
        elif a == "--out": out = v
        elif a == "--routing-out": routing_out = v
        else: figdir = v
        i += 2
    if not small and not routing:  # neither named: the newest of each
        small, routing = newest("runs/small-*.json"), newest("runs/routing-*.json")
    results_md(small, routing, out, routing_out, figdir, do_plots, notes)

main(sys.argv[1:])
