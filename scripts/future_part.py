"""future_part.py: a subsection "### TITLE" of the future-work section (scripts/write_future_results.sh --part)."""
from future_common import *

def part(docs, paths, notes, title):
    runs = [r for d in docs for r in d["runs"]]
    by = {}
    for r in runs: by.setdefault(r["variant"], r)
    L = ["### " + title, "",
         "Written by `%s --part` from %s (`scripts/reproduce_future.sh`, %s); machine: %s, shared with" % (
             ME, ", ".join("`%s` (`--steps %d --warmup %s --threads %d`)" % (p, x["steps"], x.get("warmup", 100), x["threads"])
                           for p, x in zip(paths, docs)), time.strftime("%Y-%m-%d"), machine()),
         "other jobs (load far above the core count), so tokens/s are loose. One seed (1337); the data and the",
         "overrides of every run are in its command below. ppl: gmatrain's closing evaluation on the whole valid",
         "and test splits. K: components per head of each GMA layer at the start and the end (the structural",
         "adaptation's last `adapt` rows, docs/model.md §4.2).", "",
         "| variant | steps | K start | K end | valid ppl | test ppl | tokens/s | params |",
         "|---|---:|---|---|---:|---:|---:|---:|"]
    for r in runs:
        L.append("| %s | %d | %s | %s | %.1f | %.1f | %.0f | %d |" % (
            NAMES.get(r["variant"], r["variant"]), r["steps"], fmt_k(r["k_start"]), fmt_k(r["k_end"]),
            r["valid_ppl"], r["test_ppl"], r["tokens_per_s"], r["params"]))
    L += ["", "Commands (one per run):", ""]
    L += ["    " + r["command"] for r in runs]
    L.append("")
    said = []
    for base_v in ("gma256", "gma32"):
        base = by.get(base_v)
        if not base: continue
        for r in runs:
            if r is base or r["variant"] == "gma32" and base_v == "gma256": continue
            if base_v == "gma32" and r["variant"] not in ("kad256", "kdir256"): continue
            sp = r["tokens_per_s"] / base["tokens_per_s"] if base["tokens_per_s"] else float("nan")
            said.append("%s: test ppl %+.1f against %s, at %.2fx its tokens/s, K %s -> %s" % (
                NAMES.get(r["variant"], r["variant"]), r["test_ppl"] - base["test_ppl"], NAMES[base_v], sp,
                fmt_k(r["k_start"]), fmt_k(r["k_end"])))
    if said:
        L += ["From the table: " + "; ".join(said) + ". One seed: small differences are not findings.", ""]
    for n in notes: L += [n, ""]
    return "\n".join(L)

def put_part(old, text, title):
    return put_part_nl("\n" + old, text, title)[1:]  # the heading found also at the page's start

def put_part_nl(old, text, title):
    at = old.find("\n" + HEAD)
    if at < 0: die("no section '%s' to put the part into (write it first)" % HEAD)
    sub = old.find("\n### " + title + "\n", at)
    if sub < 0:
        return old.rstrip("\n") + "\n\n" + text + "\n"
    nxt = [i for i in (old.find("\n### ", sub + 1), old.find("\n## ", sub + 1)) if i >= 0]
    end = min(nxt) if nxt else len(old)
    return old[:sub] + "\n" + text + old[end:]

