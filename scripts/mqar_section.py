"""mqar_section.py: the section "## Associative recall (MQAR, Zoology protocol)" of docs/results/mqar.md (scripts/write_results.sh mqar)."""
from results_common import *

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
        fig_dir = os.path.join(page_dir, "mqar")  # the page's figures: mqar/ beside it
        os.makedirs(fig_dir, exist_ok=True)
        for f, t in figs:
            src, dst = os.path.join(os.path.dirname(path), f + ".png"), os.path.join(fig_dir, f + ".png")
            if os.path.abspath(src) != os.path.abspath(dst):
                shutil.copyfile(src, dst)
            L += ["![%s](mqar/%s.png)" % (t, f), ""]
        L += ["Plots: `scripts/reproduce_mqar.sh --table %s` (gnuplot), copied into mqar/ beside this page." % path, ""]
    for n in notes:
        L += [n, ""]
    return L

def splice(page_path, section):
    try:
        text = read_page(page_path)
    except OSError:
        text = None
    lines = text.split("\n") if text is not None else ["# Results", ""]
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
    res, out, notes, i = argv[0], "docs/results/mqar.md", [], 1
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

