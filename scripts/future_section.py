"""future_section.py: the section "## Future work: per-layer K, adaptive K, gated hybrid" and its long-window subsection."""
from future_common import *

def sub_section(docs, paths, notes):
    runs = [r for d in docs for r in d["runs"] if "long_len" in r]
    by = {}
    for r in runs: by.setdefault(r["variant"], r)
    n = runs[0]["long_len"]
    L = [SUB, "",
         "Written by `%s` from %s (`scripts/reproduce_future.sh --variants \"sdpa_np gma_np auto_np auto_distill auto_distill001\"`, %s);" % (
             ME, ", ".join("`%s` (`--steps %d --threads %d`)" % (p, x["steps"], x["threads"]) for p, x in zip(paths, docs)),
             time.strftime("%Y-%m-%d")),
         "machine: %s, shared with other jobs (tokens/s loose)." % machine(),
         "`configs/small_gma.json` / `configs/small_sdpa.json` with `model.pos: \"none\"` (so that a window longer",
         "than the training one can be evaluated), trained at 128 tokens, one seed (1337), short runs far from",
         "converged. auto's threshold is 2048: at the training length only its sdpa path runs, at %d only its GMA path." % n,
         "ppl at 128: gmatrain's closing evaluation; at %d: `gmaeval --seq-len %d --batch 1` on the whole splits." % (n, n),
         "Gap: per auto layer, the path taken and |oh_gma - oh_sdpa|^2 / |oh_sdpa|^2 of the heads' outputs",
         "(`gmaeval --analyze` on the valid split; 0: GMA reproduces sdpa).", "",
         "| variant | steps | valid ppl 128 | test ppl 128 | valid ppl %d | test ppl %d | tokens/s | gap at 128 | gap at %d |" % (n, n, n),
         "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in runs:
        L.append("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.0f | %s | %s |" % (
            NAMES.get(r["variant"], r["variant"]), r["steps"], r["valid_ppl"], r["test_ppl"], r["long_valid_ppl"],
            r["long_test_ppl"], r["tokens_per_s"], gaps(r, "train_len"), gaps(r, "long")))
    L += ["", "Commands (one per run; then the gmaeval calls above):", ""]
    L += ["    " + r["command"] for r in runs]
    L.append("")
    said = []
    a, g, s = (by.get(v) for v in ("auto_np", "gma_np", "sdpa_np"))
    for v in ("auto_distill", "auto_distill001"):
        d = by.get(v)
        if not (a and d): continue
        said.append("%s: at %d tokens (GMA path) test ppl %.1f against the old auto's %.1f, at 128 (sdpa path) %.1f against %.1f"
                    % (NAMES[v], n, d["long_test_ppl"], a["long_test_ppl"], d["test_ppl"], a["test_ppl"]))
        if "aux_loss_last" in d:
            said.append("its distillation loss w |oh_gma - oh_sdpa|^2 / |oh_sdpa|^2 (summed over the layers) went %.4g -> %.4g"
                        " over the logged steps" % (d["aux_loss_first"], d["aux_loss_last"]))
        said.append("its tokens/s %.2fx the old auto's" % (d["tokens_per_s"] / a["tokens_per_s"] if a["tokens_per_s"] else float("nan")))
    d = None
    if g and s:
        said.append("gma alone: %.1f at 128, %.1f at %d; sdpa alone: %.1f at 128, %.1f at %d" % (
            g["test_ppl"], g["long_test_ppl"], n, s["test_ppl"], s["long_test_ppl"], n))
    if said:
        L += ["From the table: " + "; ".join(said) + ". One seed: a difference within the small table's seed spread"
              " (about 5-10 test ppl at 128 tokens) is not a finding.", ""]
    for t in notes: L += [t, ""]
    return "\n".join(L)

def section(docs, paths, notes):
    runs = [r for d in docs for r in d["runs"]]
    d = docs[0]
    by = {}
    for r in runs: by.setdefault(r["variant"], r)  # the comparisons: each variant's first run
    for r in runs:
        for key in ("variant", "command", "valid_ppl", "test_ppl", "tokens_per_s", "params", "k_start", "k_end", "steps"):
            if key not in r: die("%s: run %s: no field %s" % (", ".join(paths), r.get("variant", "?"), key))
    L = [HEAD, "",
         "Written by `%s` from %s (`scripts/reproduce_future.sh`, %s); machine: %s," % (
             ME, ", ".join("`%s` (`--steps %d --threads %d`)" % (p, x["steps"], x["threads"]) for p, x in zip(paths, docs)),
             time.strftime("%Y-%m-%d"), machine()),
         "shared with other jobs, so tokens/s are loose. `configs/small_gma.json` / `configs/small_sdpa.json` on the",
         "State of the Union split of `scripts/reproduce_small.sh`, `train.steps` as in the table (warmup 100), one seed (1337):",
         "short runs, far from converged; the seed spread of the small profile's table (docs/results/small.md)",
         "is the yardstick for differences. ppl: gmatrain's closing evaluation on the whole valid and test splits.",
         "K: components per head of each GMA layer at the start and the end (the Dirichlet prior's live components,",
         "the mean over heads). K pi: the range of K pi_k over the layers' routing heads in the final checkpoint",
         "(pi = softmax(prior_logits) over the live components; 1 = uniform), read from each run's",
         "`latest/model.safetensors`.", "",
         "| variant | steps | mixers | K start | K end | K pi min-max | valid ppl | test ppl | tokens/s | params |",
         "|---|---:|---|---|---|---|---:|---:|---:|---:|"]
    for r in runs:
        pr = pi_range(r.get("run", ""))
        L.append("| %s | %d | %s | %s | %s | %s | %.1f | %.1f | %.0f | %d |" % (
            NAMES.get(r["variant"], r["variant"]), r["steps"], ",".join(r.get("mixer", [])) or "-", fmt_k(r["k_start"]), fmt_k(r["k_end"]),
            "%.3f-%.3f" % pr if pr else "-", r["valid_ppl"], r["test_ppl"], r["tokens_per_s"], r["params"]))
    L.append("")
    for r in runs:
        for g in r.get("gates", []):
            L.append("Gates of %s, layer %d (the sdpa path's share g per head, initial 0.5): %s." % (
                NAMES.get(r["variant"], r["variant"]), g["layer"], ", ".join("%.3f" % x for x in g["gate"])))
    if any(r.get("gates") for r in runs): L.append("")
    L += ["Commands (one per run):", ""]
    L += ["    " + r["command"] for r in runs]
    L.append("")
    # what helped: against gma K 32 and sdpa, by the test ppl and the speed
    base = by.get("gma32")
    said = []
    if base:
        for v in ("gma64", "gma64_32", "dir64", "gated"):
            r = by.get(v)
            if not r: continue
            dp = r["test_ppl"] - base["test_ppl"]
            sp = r["tokens_per_s"] / base["tokens_per_s"] if base["tokens_per_s"] else float("nan")
            s = "%s: test ppl %+.1f against gma K 32 (%s), at %.2fx its tokens/s" % (
                NAMES[v], dp, "lower" if dp < 0 else "higher" if dp > 0 else "equal", sp)
            if v == "dir64":
                s += "; K went %s -> %s" % (fmt_k(r["k_start"]), fmt_k(r["k_end"]))
            said.append(s)
        if by.get("sdpa"):
            s = by["sdpa"]
            said.append("sdpa: test ppl %+.1f against gma K 32" % (s["test_ppl"] - base["test_ppl"]))
        for r in runs:  # further runs of a variant (another budget)
            if by.get(r["variant"]) is not r:
                said.append("%s at %d steps: test ppl %.1f, K %s -> %s" % (
                    NAMES.get(r["variant"], r["variant"]), r["steps"], r["test_ppl"], fmt_k(r["k_start"]), fmt_k(r["k_end"])))
    L += ["From the table (runs of %d steps): " % base["steps"] + "; ".join(said) + ". With one seed a difference within the small table's seed"
          " spread (about 5-10 test ppl) is not a finding.", ""] if said else []
    for n in notes: L += [n, ""]
    return "\n".join(L)

