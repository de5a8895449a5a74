"""results_small.py: the seed table of scripts/reproduce_small.sh (combine-small; its text and markdown)."""
from results_common import *

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

