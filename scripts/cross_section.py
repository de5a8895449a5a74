"""cross_section.py: RESULTS.json... [--out FILE] [--note TEXT]...: the section "## Cross-attention" of docs/results/cross.md (scripts/reproduce_cross.sh write)."""
from cross_common import *
from results_common import read_page

def section(results, notes):
    L = [HEAD, "", "Written by `%s write` from the JSON of `%s run` and `%s bench` (docs/cross.md: the task, the model, the" % (ME, ME, ME),
         "cross layer; docs/model.md §3.8 the math). Loose timings: a 2-core x86_64 VM shared with other jobs (load average",
         "well above 2), one thread a process; the cpu ms column is the process's own CPU time, the wall ms follows the load.", ""]
    seen = {}
    def heading(t):  # every heading of the section distinct: a repeated one numbered
        seen[t] = seen.get(t, 0) + 1
        return "### " + t + ("" if seen[t] == 1 else " (%d)" % seen[t])
    def setting(res):  # what tells one results file from another: task, cross Kc, seed, kinds
        c = res["runs"][0]["config"]
        return "vocabulary %s, %s pairs in %s tokens, Kc %s, seed %s" % (c["data"].get("xmqar_vocab"), c["data"].get("xmqar_pairs"),
               c["data"].get("xmqar_ctx"), (c["cross"] or {}).get("n_components"), res["runs"][0]["seed"])
    for res in results:
        if not res["runs"]: continue
        c0 = res["runs"][0]["config"]
        dx, tr, mo = c0["data"], c0["train"], c0["model"]
        L += [heading("Cross-sequence MQAR, %s: %s" % (setting(res), ", ".join(r["kind"] for r in res["runs"]))), ""]
        for c in res["commands"]:
            if "gmabench" not in c: L.append("Command: `%s`" % c)
        L += ["", "Task: vocabulary %s, %s pairs in a context of %s tokens, %d queries after it (window %s); model width %s, %s decoder layers"
              " (self mixer %s, %s), %s encoder layer(s) (bidirectional unless the row says causal), cross Kc %s; batch %s, lr %s, %s steps, seed %s (one seed). Chance: 1/%s pairs"
              " = %.3f for a model that answers some value of the context."
              % (dx.get("xmqar_vocab"), dx.get("xmqar_pairs"), dx.get("xmqar_ctx"), tr["seq_len"] - dx.get("xmqar_ctx", 0), tr["seq_len"],
                 mo["d_model"], mo["n_layers"], mo["mixer"], "MLP" if mo["mlp"] else "no MLP", (c0["cross"] or {}).get("enc_layers"),
                 (c0["cross"] or {}).get("n_components"), tr["batch_size"], tr["lr"], tr["steps"], res["runs"][0]["seed"],
                 dx.get("xmqar_pairs"), 1.0 / max(1, dx.get("xmqar_pairs", 1))), ""]
        steps = sorted({v["step"] for r in res["runs"] for v in r["valid"]})
        L.append("| cross.mixer | " + " | ".join("valid acc @%d" % s for s in steps) + " | test acc | test loss | steps run | minutes |")
        L.append("|---|" + "---:|" * (len(steps) + 4))
        for r in res["runs"]:
            va = {v["step"]: v["acc"] for v in r["valid"]}
            t = r["test"] or {}
            ran = "%d of %d (stopped; test by gmaeval)" % (r["stopped_at"], r["steps"]) if r.get("stopped_at") else str(r["steps"])
            L.append("| %s | %s | %s | %s | %s | %s |" % (LABEL.get(r["kind"], r["kind"]),
                     " | ".join(fmt(va.get(s)) for s in steps), fmt(t.get("acc")), fmt(t.get("loss")), ran,
                     fmt(r["elapsed_s"] / 60 if r["elapsed_s"] else None, 1)))
        L.append("")
    src = next((r for r in reversed(results) if r.get("bench")), None)
    bench = src["bench"] if src else None
    cpu = {}  # (kind, M) -> the layer's cpu ms of the bench
    for r in (bench or {}).get("cross", []):
        if "cpu_ms" in r: cpu[(r["kind"], r["M"])] = r["cpu_ms"]
    for res in results:
        runs = [r for r in res["runs"] if r.get("lengths")]
        if not runs: continue
        c0 = runs[0]["config"]
        M0 = c0["data"].get("xmqar_ctx")
        L += [heading("Longer contexts than trained, %s" % setting(res)), ""]
        L += ["Command: `%s`" % c for c in res["commands"] if "gmabench" not in c]
        L += ["", "The models of the table above that have the rows (trained at a context of %s, cross.query_pos %s), each test window"
              " read by `bin/gmaeval --ctx-len M`: the same pairs and queries, zeros from the pairs to M. acc: test accuracy over the"
              " windows scored (%d queries a window); s: the evaluation's seconds; the last column the cross layer's cpu time, sdpa"
              " over gma, of the bench below at that M (width 256, Kc 64, N = M)." % (M0, (c0["cross"] or {}).get("query_pos", "window"),
              c0["train"]["seq_len"] - (M0 or 0)), ""]
        Ms = sorted({e["ctx_len"] for r in runs for e in r["lengths"]})
        L.append("| context M | " + " | ".join("%s acc | s" % LABEL.get(r["kind"], r["kind"]) for r in runs)
                 + " | windows | layer cpu sdpa / gma |")
        L.append("|---:|" + "---:|---:|" * len(runs) + "---:|---:|")
        for M in Ms:
            cells, wins = [], set()
            for r in runs:
                e = next((e for e in r["lengths"] if e["ctx_len"] == M), None)
                if e is None: cells += ["", ""]
                elif "skipped" in e: cells += ["skipped (time)", ""]
                else:
                    cells += [fmt(e["acc"]), "%.0f" % e["seconds"]]
                    wins.add(e["windows"])
            g, q = cpu.get(("gma", M)), cpu.get(("sdpa", M))
            L.append("| %d | %s | %s | %s |" % (M, " | ".join(cells), "/".join(str(w) for w in sorted(wins)) or "",
                     fmt(q / g if g and q else None, 2)))
        L.append("")
    if bench:
        rows = bench.get("cross", [])
        L += ["### Layer speed and memory against context length", "",
              "`bin/gmabench cross` (%s, %s): one cross layer, forward + backward, B 1, width 256, 4 heads, Kc 64, as many queries as"
              " context rows (N = M). Skipped points say why (a kind's next point is skipped once its last time x 4.5 passes"
              " --max-seconds 400)." % (bench.get("backend"), bench.get("blas_core")), "",
              ] + ["Command: `%s`" % c for c in src["commands"] if "gmabench" in c] + ["",
              "| M | kind | wall ms | cpu ms | cpu ms / gma's | peak MiB | planned MiB |", "|---:|---|---:|---:|---:|---:|---:|"]
        gma_cpu = {r["M"]: r.get("cpu_ms") for r in rows if r["kind"] == "gma" and "cpu_ms" in r}
        for r in rows:
            if "skipped" in r:
                L.append("| %d | %s | %s | | | | %.1f |" % (r["M"], r["kind"], r["skipped"], r["planned_mib"]))
                continue
            g = gma_cpu.get(r["M"])
            L.append("| %d | %s | %.0f | %.1f | %s | %.1f | %.1f |" % (r["M"], r["kind"], r["ms"], r["cpu_ms"],
                     fmt(r["cpu_ms"] / g if g else None, 2), r["peak_mib"], r["planned_mib"]))
        L.append("")
    for n in notes: L += [n, ""]
    return "\n".join(L).rstrip() + "\n"

def write(args):
    files, out, notes, i = [], "docs/results/cross.md", [], 0
    while i < len(args):
        a = args[i]
        if a == "--out": out = value(args, i); i += 2
        elif a == "--note": notes.append(value(args, i)); i += 2
        else: files.append(a); i += 1
    if not files: die("write: RESULTS.json missing")
    results = []
    for f in files:
        try: results.append(json.load(open(f)))
        except (OSError, ValueError) as e: die("%s: %s" % (f, e))
    sec = section(results, notes)
    page = read_page(out) or "# Cross-attention\n"
    if HEAD + "\n" in page:
        a = page.index(HEAD + "\n")
        b = page.find("\n## ", a + len(HEAD))
        page = page[:a] + sec + ("\n" + page[b + 1:] if b >= 0 else "")
    elif "\n## Notes on these runs" in page:
        a = page.index("\n## Notes on these runs")
        page = page[:a + 1] + sec + "\n" + page[a + 1:]
    else:
        page = page.rstrip() + "\n\n" + sec
    with open(out, "w") as f: f.write(page)
    print(out)

write(sys.argv[1:])
