"""longctx_table.py: RESULTS DIR DOCS: the long-context table of scripts/reproduce_longctx.sh (DIR/results.md, the .dat files, longctx.gp) and, with DOCS 1, its section "## Long context" of docs/results/longctx.md."""
import json, math, os, sys
res, d, docs = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
try:
    with open(res) as f:
        R = json.load(f)
    runs = R["runs"]
    lens = R["test_lengths"]
except (OSError, ValueError, KeyError, TypeError) as e:
    sys.stderr.write("%s: %s: not a results.json of reproduce_longctx.sh (%s)\n" % ("scripts/reproduce_longctx.sh", res, e))
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
