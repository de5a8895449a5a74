"""future_collect.py: OUT.json STEPS THREADS WARMUP LONG ROW...: the JSON of scripts/reproduce_future.sh from its runs (summary.json, config.json, metrics.jsonl, the analyses), merged with an earlier call of the same stamp."""
import json, os, sys
out, steps, threads, warmup, long, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6:]
res = []
for r in rows:
    v, cmd, run, gates, longs = r.split("|")
    summ = json.load(open(run + "/summary.json"))
    cfg = json.load(open(run + "/config.json"))
    kc = cfg["gma"]["n_components"]
    mix = cfg["model"]["mixer"]
    mix = mix if isinstance(mix, list) else [mix] * cfg["model"]["n_layers"]
    gl = [l for l, m in enumerate(mix) if m in ("gma", "auto", "gated")]
    k_start = {l: (kc[i] if isinstance(kc, list) else kc) for i, l in enumerate(gl)}
    k_end, k_adapt = dict(k_start), {}
    div_first = div_last = None
    for line in open(run + "/metrics.jsonl"):
        o = json.loads(line)
        if o.get("event") == "components":
            k_end[o["layer"]] = o["k_active"]
        if o.get("event") == "adapt":
            k_adapt[o["layer"]] = o["n_components"]
        if "div_loss" in o and "split" not in o:
            div_first = o["div_loss"] if div_first is None else div_first
            div_last = o["div_loss"]
    k_end.update(k_adapt)
    row = {"variant": v, "command": cmd + " --out " + run, "run": run, "steps": steps, "threads": threads,
           "mixer": mix, "k_start": [k_start[l] for l in gl], "k_end": [k_end[l] for l in gl],
           "valid_ppl": summ["valid"]["ppl"], "test_ppl": summ["test"]["ppl"],
           "tokens_per_s": summ["tokens_per_s"], "params": summ["parameters"]}
    if gates != "null":
        row["gates"] = json.load(open(gates)).get("gates", [])
    if div_last is not None:  # the logged auxiliary loss (auto.distill_weight: w x the distillation loss)
        row["aux_loss_first"], row["aux_loss_last"] = div_first, div_last
    if longs != "null":
        row["long_len"] = long
        for split in ("valid", "test"):
            row["long_%s_ppl" % split] = json.load(open("%s/%s.json" % (longs, split)))["ppl"]
        for tag in ("train_len", "long"):
            a = "%s/analysis_%s.json" % (longs, tag)
            if os.path.exists(a):
                row["auto_%s" % tag] = json.load(open(a)).get("auto", [])
    res.append(row)
# an earlier call of the same stamp: the rows of its other runs kept before this call's
try:
    old = [r for r in json.load(open(out))["runs"] if r["run"] not in {x["run"] for x in res}]
except (OSError, ValueError, KeyError, TypeError):
    old = []
res = old + res
json.dump({"steps": steps, "warmup": warmup, "threads": threads, "runs": res}, open(out, "w"), indent=1)
print(out)
