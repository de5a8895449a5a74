"""results_routing.py: the routing-remedy table of scripts/reproduce_routing.sh (combine-routing; distance to the paper)."""
from results_common import *

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

