"""future_common.py: what the future-work page docs/results/future.md (scripts/write_future_results.sh) shares: names, K per layer, gates."""
import glob, json, math, os, platform, struct, subprocess, sys, time

ME = "scripts/write_future_results.sh"
HEAD = "## Future work: per-layer K, adaptive K, gated hybrid"
SUB = "### auto with both paths trained"
NAMES = {"gma32": "gma, K 32", "gma64": "gma, K 64", "gma64_32": "gma, K [64, 32]",
         "dir64": "gma from K 64, Dirichlet prior", "gated": "gated (sdpa + gma K 32)", "sdpa": "sdpa",
         "gma256": "gma, K 256", "kad256": "gma from K 256, structural adaptation",
         "kdir256": "gma from K 256, structural adaptation + Dirichlet prior",
         "gma_np": "gma, no positions", "sdpa_np": "sdpa, no positions",
         "auto_np": "auto, threshold 2048 (old: sdpa path only trains)",
         "auto_distill": "auto, threshold 2048, GMA path distilled (w 1)",
         "auto_distill001": "auto, threshold 2048, GMA path distilled (w 0.01)"}

def die(msg):
    sys.stderr.write("%s: %s\n" % (ME, msg)); sys.exit(2)

def machine():
    try:
        model = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
    except (OSError, IndexError):
        model = platform.processor() or "unknown CPU"
    return "%s, %d cores (nproc), %s %s" % (model, os.cpu_count() or 0, platform.system(), platform.machine())

def pi_range(run):
    """min and max over the GMA layers' routing heads of K pi_k (pi = softmax(prior_logits),
    live components only; 1 = uniform) in RUN/latest/model.safetensors, or None"""
    path = os.path.join(run, "latest", "model.safetensors")
    try:
        b = open(path, "rb").read()
        n = struct.unpack("<Q", b[:8])[0]
        hdr = json.loads(b[8:8 + n])
    except (OSError, ValueError, struct.error):
        return None
    lo, hi = None, None
    for name, v in hdr.items():
        if not name.endswith(".gma.prior_logits") or v.get("dtype") != "F32": continue
        s, e = v["data_offsets"]
        a = struct.unpack("<%df" % ((e - s) // 4), b[8 + n + s:8 + n + e])
        H, K = v["shape"]
        for h in range(H):
            r = [x for x in a[h * K:(h + 1) * K] if x > -5e3]
            m = max(r); z = sum(math.exp(x - m) for x in r)
            for x in r:
                q = math.exp(x - m) / z * len(r)
                lo = q if lo is None else min(lo, q); hi = q if hi is None else max(hi, q)
    return (lo, hi) if lo is not None else None

def fmt_k(ks):
    return "[" + ", ".join(("%g" % k) for k in ks) + "]" if ks else "-"

def gaps(r, tag):
    a = r.get("auto_" + tag) or []
    return ", ".join("%s %.3f" % (g["path"], g["gap_rel"]) for g in a) or "-"

