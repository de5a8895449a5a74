"""cross_collect.py: DIR [--command TEXT]...: DIR/results.json of scripts/reproduce_cross.sh collect (see its --help)."""
from cross_common import *

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

collect(sys.argv[1:])
