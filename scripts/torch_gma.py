#!/usr/bin/env python3
"""torch_gma.py: the gma decoder language model (docs/model.md §1, §3.1, §3.2, §3.5 sdpa)
written in PyTorch eager mode, the reference that the GPU throughput target is set against.

  torch_gma.py --check CKPT [--batch B] [--seq N] [--tol 1e-4] [--device cpu|cuda] [--double]
      loads a gma checkpoint (RUN, RUN/ckpt_N or a model.safetensors), writes B*N+1 random
      token ids as a token shard, runs bin/gmaeval on that shard (B windows of N tokens,
      --stride 0) and this model's forward on the same B x N tokens and targets, and compares
      the two mean losses and, with GMA layers, every query responsibility (gmaeval
      --dump-responsibilities); exit 1 when the relative loss difference or the largest
      responsibility difference exceeds --tol. The model's config is the checkpoint's;
      --config/--set override it on the torch side only (gmaeval reads the checkpoint's).
  torch_gma.py --bench --config FILE [--set k=v ...] [--device cuda] [--dtype fp32|tf32|bf16]
               [--batch B] [--seq N] [--steps S] [--warmup W] [--repeat R] [--json FILE]
      times training steps (forward, backward, clipping as train.grad_clip, torch AdamW).
  torch_gma.py --check-defaults REF   REF = output of `bin/gmatrain --config-reference` ('-' =
      stdin): every default this script uses must equal the C programs' (gmatrain --config-reference).
Needs torch (1.13 or 2.x) and the standard library only. Exit: 0 ok, 1 mismatch or failure,
2 bad input (one line on stderr)."""
import argparse, inspect, json, math, os, statistics, struct, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import read_checkpoint  # noqa: E402  (scripts/read_checkpoint.py: the safetensors header)

import torch
import torch.nn as nn
import torch.nn.functional as F

# Every config key this script reads, with the default the C programs give it
# (src/core/config.c for the generic keys; each mixer's own file for its section,
# e.g. gma_keys in src/nn/mixers/gma.c).
DEFAULTS = {
    "seed": 1337, "model.task": "lm", "model.vocab_size": 0, "model.d_model": 256, "model.n_layers": 4,
    "model.n_heads": 4, "model.d_ff": 0, "model.max_seq_len": 256, "model.mixer": "gma", "model.causal": -1,
    "model.pos": "learned", "model.mlp": True, "model.init_std": 0.02, "model.short_conv": 0,
    "model.norm": "layernorm", "model.mlp_act": "gelu", "model.tie_embeddings": True, "sdpa.window": 0,
    "gma.n_components": 64, "gma.routing": "gaussian", "gma.temperature": 1.0, "gma.var_floor": 0.0001,
    "gma.eps": 1e-06, "gma.chunk": 64, "gma.shared_components": False, "gma.init_mean_scale": 0.0,
    "gma.memory": "none", "gma.div_weight": 0.0,
    "train.batch_size": 8, "train.seq_len": 256, "train.optimizer": "adamw", "train.lr": 0.0003,
    "train.beta1": 0.9, "train.beta2": 0.95, "train.adam_eps": 1e-08, "train.weight_decay": 0.1,
    "train.grad_clip": 1.0, "train.decay_embeddings": False, "train.decay_norms": False,
    "train.decay_biases": False, "train.decay_mixture": False,
}
MIXERS = ("gma", "sdpa")


class InputError(Exception):
    pass


def parse_value(key, v, src):
    """v (JSON value or --set text) as the type of DEFAULTS[key]"""
    d = DEFAULTS[key]
    if key == "model.mixer":
        if isinstance(v, str) and v.startswith("["):
            v = json.loads(v)
        names = v.split(",") if isinstance(v, str) else v
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InputError(f"{src}: key model.mixer: expected a name or a list of names")
        return names
    if isinstance(d, bool) and (isinstance(v, bool) or v in ("true", "1", "false", "0")):
        return v if isinstance(v, bool) else v in ("true", "1")
    if isinstance(d, str) and isinstance(v, str):
        return v
    if isinstance(d, (int, float)) and not isinstance(d, bool) and not isinstance(v, bool):
        try:
            x = float(v)
            if isinstance(d, float) or x == int(x):
                return x if isinstance(d, float) else int(x)
        except (TypeError, ValueError, OverflowError):
            pass
    raise InputError(f"{src}: key {key}: {v!r} is not a valid {type(d).__name__}")


def flatten(obj, prefix=""):
    out = {}
    for k, v in obj.items():
        out.update(flatten(v, prefix + k + ".") if isinstance(v, dict) else {prefix + k: v})
    return out


def resolve_config(base, config_file, sets):
    """defaults <- base (a checkpoint's config) <- --config FILE <- --set; keys this script
    does not read are ignored in files and refused in --set"""
    cfg = {k: parse_value(k, v, "defaults") for k, v in DEFAULTS.items()}
    layers = [(base, "checkpoint config")] if base else []
    if config_file:
        try:
            with open(config_file) as f:
                layers.append((json.load(f), config_file))
        except (OSError, ValueError) as e:
            raise InputError(f"{config_file}: cannot read the config: {e}")
    for obj, src in layers:
        for k, v in flatten(obj).items():
            if k in DEFAULTS:
                cfg[k] = parse_value(k, v, src)
    for s in sets:
        k, eq, v = s.partition("=")
        if not eq or k not in DEFAULTS:
            raise InputError(f"--set {s}: expected key=value with a key this script reads ({', '.join(DEFAULTS)})")
        cfg[k] = parse_value(k, v, "--set")
    L, D, H = cfg["model.n_layers"], cfg["model.d_model"], cfg["model.n_heads"]
    mix = cfg["model.mixer"] * L if len(cfg["model.mixer"]) == 1 else cfg["model.mixer"]
    for m in mix:
        if m not in MIXERS:
            raise InputError(f"key model.mixer: mixer \"{m}\" is not written here (only {', '.join(MIXERS)})")
    refuse = [("model.task", "lm"), ("gma.routing", "gaussian"), ("gma.memory", "none")]
    for k, ok in refuse:
        if cfg[k] != ok and (k == "model.task" or "gma" in mix):
            raise InputError(f"key {k}: \"{cfg[k]}\" is not written here (only \"{ok}\")")
    # the block recipe and the short convolutions are not written here: a checkpoint or
    # config that sets them is refused rather than read as the plain block
    for k in ("model.short_conv", "model.norm", "model.mlp_act", "model.tie_embeddings", "sdpa.window"):
        if cfg[k] != DEFAULTS[k]:
            raise InputError(f"key {k}: {json.dumps(cfg[k])} is not written here (only {json.dumps(DEFAULTS[k])})")
    if len(mix) != L or D % H:
        raise InputError(f"key model.mixer/model.d_model: {len(mix)} mixers for {L} layers, D={D}, H={H}")
    cfg["mixers"] = mix
    cfg["causal"] = cfg["model.causal"] != 0  # -1: causal for the LM task
    cfg["d_ff"] = cfg["model.d_ff"] or 4 * D
    return cfg


# ---------------------------------------------------------------- the model
def linmix(phq, phk, v, causal, C, eps):
    """docs/model.md §3.1: O_i = phq_i^T S / (phq_i . z + eps), S = sum_j phk_j v_j^T, z = sum_j phk_j
    over j <= i (causal) or all j. phq, phk [..., N, F] >= 0, v [..., N, d] -> [..., N, d].
    v gets a column of ones, so numerator and denominator come out of the same products.
    Causal: chunks of C rows; inside a chunk the masked C x C product, across chunks the
    state S_c = sum of the earlier chunks' phk^T [v 1], formed for all chunks at once as one
    batched GEMM and an exclusive cumulative sum over the chunk axis. Eager PyTorch pays per
    kernel launch and per autograd node, so a handful of large batched kernels (this form:
    about 8 forward, independent of N) beats a Python loop over chunks (5 or so per chunk
    and layer, forward and backward); memory stays O(N (F + d) + (N/C) F d), no N x N."""
    d = v.shape[-1]
    v1 = torch.cat((v, torch.ones_like(v[..., :1])), -1)
    if not causal:
        num = torch.matmul(phq, torch.matmul(phk.transpose(-1, -2), v1))
        return num[..., :d] / (num[..., d:] + eps)
    N, Fk = phq.shape[-2], phq.shape[-1]
    nc = -(-N // C)
    if nc * C != N:  # zero rows: padded keys add nothing, padded query rows are dropped below
        pad = (0, 0, 0, nc * C - N)
        phq, phk, v1 = F.pad(phq, pad), F.pad(phk, pad), F.pad(v1, pad)
    lead = phq.shape[:-2]
    q, k = phq.reshape(*lead, nc, C, Fk), phk.reshape(*lead, nc, C, Fk)
    vv = v1.reshape(*lead, nc, C, d + 1)
    A = torch.tril(torch.matmul(q, k.transpose(-1, -2)))           # [.., nc, C, C], j <= i
    kv = torch.matmul(k.transpose(-1, -2), vv)                     # [.., nc, F, d+1]
    S = torch.cumsum(F.pad(kv[..., :-1, :, :], (0, 0, 0, 0, 1, 0)), -3)  # state before chunk c
    num = torch.matmul(q, S) + torch.matmul(A, vv)
    out = num[..., :d] / (num[..., d:] + eps)
    return out.reshape(*lead, nc * C, d)[..., :N, :]


class Mixer(nn.Module):
    """q, k, v, o projections (names as the checkpoint) and GMA (3.2) or softmax attention"""

    def __init__(self, cfg, kind):
        super().__init__()
        D, self.H = cfg["model.d_model"], cfg["model.n_heads"]
        self.kind, self.causal, self.d = kind, cfg["causal"], D // self.H
        self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))
        if kind == "gma":
            Hp, Kc = 1 if cfg["gma.shared_components"] else self.H, cfg["gma.n_components"]
            self.tau, self.floor = cfg["gma.temperature"], cfg["gma.var_floor"]
            self.eps, self.chunk = cfg["gma.eps"], cfg["gma.chunk"]
            self.gma = nn.Module()
            self.gma.mu = nn.Parameter(torch.zeros(Hp, Kc, self.d))
            self.gma.var_raw = nn.Parameter(torch.zeros(Hp, Kc, self.d))
            self.gma.prior_logits = nn.Parameter(torch.zeros(Hp, Kc))
            self.keep_resp, self.resp = False, None  # --check: keep the query responsibilities

    def route(self, x):
        """responsibilities [..., H, N, Kc] of rows x [..., H, N, d]: softmax_k(l_k(x) / tau) with
        l = -1/2 (x*x) P^T + x (mu P)^T + log pi - 1/2 sum(mu^2 P + log sigma2), P = 1/sigma2"""
        g = self.gma
        s2 = F.softplus(g.var_raw) + self.floor
        P = 1 / s2
        cst = torch.log_softmax(g.prior_logits, -1) - 0.5 * (g.mu * g.mu * P + torch.log(s2)).sum(-1)
        l = torch.matmul(x, (g.mu * P).transpose(-1, -2)) + torch.matmul(x * x, -0.5 * P.transpose(-1, -2))
        l = l + cst.unsqueeze(-2)
        return torch.softmax(l if self.tau == 1 else l / self.tau, -1)

    def forward(self, h):
        B, N, D = h.shape
        # one GEMM for Q, K, V (the weights are concatenated per step, a D x 3D copy)
        w = torch.cat((self.q.weight, self.k.weight, self.v.weight))
        b = torch.cat((self.q.bias, self.k.bias, self.v.bias))
        qkv = F.linear(h, w, b).view(B, N, 3, self.H, self.d).permute(2, 0, 3, 1, 4)  # [3,B,H,N,d]
        if self.kind == "sdpa":
            q, k, v = qkv[0], qkv[1], qkv[2]
            if hasattr(F, "scaled_dot_product_attention"):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
            else:  # torch 1.x: the plain masked softmax
                s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
                if self.causal:
                    s = s.masked_fill(torch.ones(N, N, dtype=torch.bool, device=h.device).triu(1), float("-inf"))
                o = torch.matmul(torch.softmax(s, -1), v)
        else:
            # gma's bf16 mode keeps routing and the mixing core in fp32 (docs/cuda.md): so here
            with torch.autocast(h.device.type, enabled=False):
                x = qkv.to(self.gma.mu.dtype)
                g = self.route(x[:2])  # queries and keys together: [2,B,H,N,Kc]
                self.resp = g[0].detach() if self.keep_resp else None
                o = linmix(g[0], g[1], x[2], self.causal, self.chunk, self.eps)
        return self.o(o.transpose(1, 2).reshape(B, N, D))


class Block(nn.Module):
    def __init__(self, cfg, kind):
        super().__init__()
        D = cfg["model.d_model"]
        self.ln1, self.mixer = nn.LayerNorm(D, eps=1e-5), Mixer(cfg, kind)
        if cfg["model.mlp"]:
            self.ln2 = nn.LayerNorm(D, eps=1e-5)
            self.mlp = nn.ModuleDict({"fc": nn.Linear(D, cfg["d_ff"]), "proj": nn.Linear(cfg["d_ff"], D)})

    def forward(self, x):
        x = x + self.mixer(self.ln1(x))
        if hasattr(self, "mlp"):  # MLP(h) = proj(gelu_tanh(fc(h)))
            x = x + self.mlp.proj(F.gelu(self.mlp.fc(self.ln2(x)), approximate="tanh"))
        return x


class GPT(nn.Module):
    """docs/model.md §1: tok (+ learned pos) embedding, pre-LN blocks, ln_f, tied logits, mean CE"""

    def __init__(self, cfg, V):
        super().__init__()
        D = cfg["model.d_model"]
        self.tok_emb = nn.Embedding(V, D)
        if cfg["model.pos"] == "learned":
            self.pos_emb = nn.Embedding(cfg["model.max_seq_len"], D)
        self.blocks = nn.ModuleList(Block(cfg, kind) for kind in cfg["mixers"])
        self.ln_f = nn.LayerNorm(D, eps=1e-5)

    def forward(self, tok, tgt):
        x = self.tok_emb(tok)
        if hasattr(self, "pos_emb"):
            x = x + self.pos_emb.weight[: tok.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        logits = F.linear(self.ln_f(x), self.tok_emb.weight)
        if logits.dtype == torch.bfloat16:
            logits = logits.float()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-1)


def init_like_gma(model, cfg):
    """gma's default initialisation (docs/model.md); the check loads weights instead"""
    std, L = cfg["model.init_std"], cfg["model.n_layers"]
    for name, p in model.named_parameters():
        leaf = name.rsplit(".", 1)[-1]
        with torch.no_grad():
            if name.endswith((".o.weight", ".proj.weight")):
                p.normal_(0, std / math.sqrt(2 * L))
            elif name.startswith(("tok_emb", "pos_emb")) or (leaf == "weight" and p.dim() == 2):
                p.normal_(0, std)
            elif leaf == "mu":
                p.normal_(0, cfg["gma.init_mean_scale"] or (2 * p.shape[-1]) ** -0.25)
            elif leaf == "var_raw":
                p.fill_(math.log(math.expm1(1 - cfg["gma.var_floor"])))
            elif name.startswith(("blocks", "ln_f")) and leaf == "weight":
                p.fill_(1)
            else:
                p.zero_()


def gemm_flops_per_step(cfg, V, B, N):
    """the matrix-product FLOPs that `gmabench model` counts in one training step: its
    instrumented matmul / matmul_strided calls, 2 M N K each. For gma (Gaussian routing) and
    the tiled sdpa these are the linear layers and the tied logits, forward (2 R I O) plus
    backward (dX and dW): 6 R (L (4 D^2 + 2 D d_ff) + V D), R = B N. The routing, the mixing
    core and the attention run inside fused ops that gmabench does not count."""
    D, L = cfg["model.d_model"], cfg["model.n_layers"]
    per_row = L * (4 * D * D + (2 * D * cfg["d_ff"] if cfg["model.mlp"] else 0)) + V * D
    return 6.0 * B * N * per_row


# ---------------------------------------------------------------- checkpoints and shards
def resolve_checkpoint(path):
    """as ckpt_resolve: a model.safetensors, a checkpoint directory or a run (its latest)"""
    try:
        return read_checkpoint.resolve(path)
    except read_checkpoint.CheckpointError as e:
        raise InputError(str(e))


def read_safetensors(path):
    """the tensors (F32, as torch tensors) and metadata of a gma checkpoint file; the header
    is parsed and checked by scripts/read_checkpoint.py (standard library only here)"""
    try:
        entries, meta, raw, off = read_checkpoint.read_header(path)
    except read_checkpoint.CheckpointError as e:
        raise InputError(str(e))
    data, out = bytearray(raw[off:]), {}
    for name, (dtype, shape, a, b) in entries.items():
        if dtype != "F32":
            raise InputError(f"{path}: tensor {name}: dtype {dtype}, gma writes F32")
        t = torch.frombuffer(data, dtype=torch.float32, count=(b - a) // 4, offset=a) if b > a else torch.zeros(0)
        out[name] = t.reshape(shape).clone()
    return out, meta


def read_resp_dump(path):
    """gmaeval --dump-responsibilities (docs/analysis.md): layer indices, tokens [W,N] and
    query responsibilities [L,W,H,N,Kc]"""
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    if raw[:8] != b"GMARESP1":
        raise InputError(f"{path}: not a responsibilities dump")
    _, L, W, H, N, Kc = struct.unpack_from("<6I", raw, 8)
    layers = list(struct.unpack_from(f"<{L}i", raw, 32))
    tok = torch.frombuffer(raw, dtype=torch.int32, count=W * N, offset=32 + 4 * L).reshape(W, N)
    g = torch.frombuffer(raw, dtype=torch.float32, count=L * W * H * N * Kc, offset=32 + 4 * L + 4 * W * N)
    return layers, tok.clone(), g.reshape(L, W, H, N, Kc).clone()


def write_shard(path, ids, vocab):
    """gma token shard (src/data/lm/shard.h): 32-byte header, then u16 or u32 ids"""
    width = 2 if vocab <= 65536 else 4
    head = b"GMATOKS\0" + struct.pack("<IIQII", 1, width, len(ids), vocab, 0)
    with open(path, "wb") as f:
        f.write(head + struct.pack(f"<{len(ids)}{'H' if width == 2 else 'I'}", *ids))


# ---------------------------------------------------------------- modes
def run_check(args):
    path = resolve_checkpoint(args.check)
    tensors, meta = read_safetensors(path)
    if meta.get("format") != "gma-ckpt-1" or "config" not in meta:
        raise InputError(f"{path}: not a gma checkpoint (metadata format or config missing)")
    cfg = resolve_config(json.loads(meta["config"]), args.config, args.set)
    V = tensors["tok_emb.weight"].shape[0] if "tok_emb.weight" in tensors else cfg["model.vocab_size"]
    B, N = args.batch or 4, args.seq or cfg["train.seq_len"]
    if N > cfg["model.max_seq_len"]:
        raise InputError(f"--seq {N} is longer than the model's max_seq_len {cfg['model.max_seq_len']}")
    model = GPT(cfg, V)
    try:
        model.load_state_dict(tensors, strict=True)
    except RuntimeError as e:
        raise InputError(f"{path}: tensors do not fit this model: {' '.join(str(e).split())[:400]}")
    dtype, dev = torch.float64 if args.double else torch.float32, pick_device(args.device)
    model = model.to(device=dev, dtype=dtype).eval()
    ids = torch.randint(0, V, (B * N + 1,), generator=torch.Generator().manual_seed(args.seed))
    bindir = os.path.join("bin", "cuda") if args.device == "cuda" else "bin"  # `make cuda` builds bin/cuda/
    gmaeval = args.gmaeval or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", bindir, "gmaeval")
    if not os.access(gmaeval, os.X_OK):
        raise InputError(f"{gmaeval}: not found: run make (or pass --gmaeval PATH)")
    with tempfile.TemporaryDirectory(prefix="torch_gma.") as tmp:
        shard, out, dump = (os.path.join(tmp, f) for f in ("batch.bin", "eval.json", "resp.bin"))
        write_shard(shard, ids.tolist(), V)
        # B*N+1 tokens with --stride 0: window w = tokens [wN, wN+N), targets shifted by one
        cmd = [gmaeval, "--checkpoint", os.path.dirname(path), "--data", shard, "--seq-len", str(N), "--batch", str(B),
               "--stride", "0", "--json", out, "--device", args.device]
        cmd += ["--threads", str(args.threads)] if args.threads else []
        gma_layers = [i for i, m in enumerate(cfg["mixers"]) if m == "gma"]
        cmd += ["--dump-responsibilities", dump] if gma_layers else []  # per element, not only the mean
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"torch_gma: gmaeval failed (exit {r.returncode}): {r.stderr.strip()}", file=sys.stderr)
            return 2 if r.returncode == 2 else 1
        with open(out) as f:
            ev = json.load(f)
        resp = read_resp_dump(dump) if gma_layers else None
    if ev["windows"] != B or ev["tokens"] != B * N:
        print(f"torch_gma: gmaeval scored {ev['windows']} windows / {ev['tokens']} tokens, not {B} / {B * N}")
        return 1
    for i in gma_layers:
        model.blocks[i].mixer.keep_resp = True
    with torch.no_grad():
        tok, tgt = ids[:-1].view(B, N).to(dev), ids[1:].view(B, N).to(dev)
        loss = model(tok, tgt).item()
    rel = abs(loss - ev["loss"]) / abs(ev["loss"])
    rdiff = None  # max |gamma_torch - gamma_gma| over every GMA layer, window, head, position, component
    if resp:
        layers, rtok, g = resp
        if layers != gma_layers or not torch.equal(rtok, ids[:-1].view(B, N).to(torch.int32)):
            print(f"torch_gma: the responsibilities dump has layers {layers} and other tokens (expected {gma_layers})")
            return 1
        rdiff = max((model.blocks[i].mixer.resp.cpu().double() - g[j].double()).abs().max().item()
                    for j, i in enumerate(gma_layers))
    ok = rel <= args.tol and (rdiff is None or rdiff <= args.tol)
    print(f"check {path} | mixers {','.join(sorted(set(cfg['mixers'])))} | B={B} N={N} | gma loss {ev['loss']:.8f} | "
          f"torch {str(dtype)[6:]} loss {loss:.8f} | rel diff {rel:.2e}"
          + ("" if rdiff is None else f" | responsibilities max abs diff {rdiff:.2e}")
          + f" | tol {args.tol:g} | {'ok' if ok else 'MISMATCH'}")
    write_json(args.json, {"checkpoint": path, "mixers": cfg["mixers"], "batch": B, "seq": N, "gma_loss": ev["loss"],
                           "torch_loss": loss, "torch_dtype": str(dtype), "rel_diff": rel, "resp_max_abs_diff": rdiff,
                           "tol": args.tol, "ok": ok})
    return 0 if ok else 1


def pick_device(name, dtype="fp32"):
    """the device; on cuda fp32 products stay IEEE fp32 unless dtype is tf32"""
    if name == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: torch sees no CUDA device")
    if name == "cuda":
        mm = torch.backends.cuda.matmul  # torch >= 2.9 has a new switch; do not mix it with the old one
        if hasattr(mm, "fp32_precision"):
            mm.fp32_precision = "tf32" if dtype == "tf32" else "ieee"
        else:
            mm.allow_tf32 = dtype == "tf32"
    elif dtype == "tf32":
        raise InputError("--dtype tf32 is a CUDA tensor-core mode (use --device cuda)")
    return torch.device(name)


def write_json(path, obj):
    if path:
        with open(path, "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")


def decay_of(cfg, name, p):
    """AdamW weight decay of a parameter by gma's groups (optim_decay_for)"""
    leaf = name.rsplit(".", 1)[-1]
    key = ("train.decay_embeddings" if name.startswith(("tok_emb", "pos_emb")) else "train.decay_mixture"
           if ".gma." in name else "train.decay_biases" if leaf == "bias" else "train.decay_norms" if p.dim() == 1
           else None)
    return cfg["train.weight_decay"] if key is None or cfg[key] else 0.0


def gmabench_line(cfg, V, B, N, args):
    """the same shapes for `gmabench model` (its --set for the keys that change the step)"""
    if len(set(cfg["mixers"])) > 1:
        return "none (gmabench model runs one mixer in every layer)"
    sets = "".join(f" --set {k}={str(cfg[k]).lower() if isinstance(cfg[k], bool) else cfg[k]}" for k in
                   ("model.d_ff", "model.pos", "model.mlp", "gma.chunk", "gma.eps", "gma.temperature", "gma.var_floor",
                    "gma.shared_components", "train.grad_clip") if cfg[k] != DEFAULTS[k]
                   and (cfg["mixers"][0] == "gma" or not k.startswith("gma.")))
    gmabench = "bin/cuda/gmabench" if args.device == "cuda" else "bin/gmabench"
    return (f"{gmabench} model --device {args.device} --precision {args.dtype} --mixers {cfg['mixers'][0]} "
            f"--L {cfg['model.n_layers']} --D {cfg['model.d_model']} --H {cfg['model.n_heads']} --V {V} --B {B} "
            f"--T {N} --Kc {cfg['gma.n_components']} --steps {args.steps}{sets}")


def run_bench(args):
    cfg = resolve_config(None, args.config, args.set)
    V, B, N = cfg["model.vocab_size"], args.batch or cfg["train.batch_size"], args.seq or cfg["train.seq_len"]
    if V <= 0:
        raise InputError("key model.vocab_size: 0 (from the data in gma): give it, e.g. --set model.vocab_size=50257")
    if cfg["gma.div_weight"] > 0 or cfg["train.optimizer"] != "adamw":
        raise InputError("--bench times AdamW steps without the diversity loss: needs train.optimizer adamw, "
                         "gma.div_weight 0")
    if N > cfg["model.max_seq_len"] and cfg["model.pos"] == "learned":
        raise InputError(f"--seq {N} is longer than model.max_seq_len {cfg['model.max_seq_len']}")
    dev = pick_device(args.device, args.dtype)
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = GPT(cfg, V)
    init_like_gma(model, cfg)
    model = model.to(dev).train()
    groups = {}
    for name, p in model.named_parameters():
        groups.setdefault(decay_of(cfg, name, p), []).append(p)
    # torch's fastest AdamW where it has one (fused CUDA kernels, torch >= 2.0), else its default
    fused = dev.type == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters
    opt = torch.optim.AdamW([{"params": ps, "weight_decay": wd} for wd, ps in groups.items()], lr=cfg["train.lr"],
                            betas=(cfg["train.beta1"], cfg["train.beta2"]), eps=cfg["train.adam_eps"],
                            **({"fused": True} if fused else {}))
    params = [p for ps in groups.values() for p in ps]
    tok, tgt = torch.randint(0, V, (B, N), device=dev), torch.randint(0, V, (B, N), device=dev)
    bf16 = args.dtype == "bf16"  # autocast: bf16 products, fp32 master weights, gradients and moments
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            loss = model(tok, tgt)
        loss.backward()
        if cfg["train.grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(params, cfg["train.grad_clip"])
        opt.step()

    for _ in range(args.warmup):
        step()
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.repeat):
        sync()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        sync()
        times.append((time.perf_counter() - t0) / args.steps)
    med, flops, T = statistics.median(times), gemm_flops_per_step(cfg, V, B, N), B * N
    r = {"torch": torch.__version__, "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
         "dtype": args.dtype, "adamw": "fused" if fused else "default", "mixers": cfg["mixers"], "batch": B,
         "seq": N, "steps": args.steps, "repeat": args.repeat, "warmup": args.warmup,
         "params": sum(p.numel() for p in params), "step_ms": med * 1e3,
         "step_ms_min": min(times) * 1e3, "step_ms_max": max(times) * 1e3, "tokens_per_s": T / med,
         "tokens_per_s_min": T / max(times), "tokens_per_s_max": T / min(times), "gemm_gflop_per_step": flops / 1e9,
         "achieved_gflops": flops / med / 1e9, "peak_tflops": args.peak_tflops or None,
         "mfu": flops / med / (args.peak_tflops * 1e12) if args.peak_tflops else None,
         "peak_mib": torch.cuda.max_memory_allocated() / 2**20 if dev.type == "cuda" else None}
    mix = ",".join(sorted(set(cfg["mixers"])))
    print(f"# torch_gma bench | torch {r['torch']} eager | {r['device']} | {args.dtype} | B={B} N={N} | "
          f"{args.steps} steps x {args.repeat} repeats after {args.warmup} warmup steps | AdamW {r['adamw']}")
    print(f"# L={cfg['model.n_layers']} D={cfg['model.d_model']} H={cfg['model.n_heads']} V={V} "
          f"d_ff={cfg['d_ff'] if cfg['model.mlp'] else 0} mixers {mix} (Kc={cfg['gma.n_components']}, chunk "
          f"{cfg['gma.chunk']}) | {r['params']:,} parameters")
    print(f"# FLOPs per step: {flops / 1e9:.3f} GFLOP = 6 B N (L (4 D^2 + 2 D d_ff) + V D), the matrix products that "
          "gmabench model counts (its step GF/s column; the mixers' internal products are not counted); "
          "MFU = step GF/s / --peak-tflops")
    print(f"# gma on the same shapes: {gmabench_line(cfg, V, B, N, args)}")
    print(f"{'mixers':<10} {'step ms':>9} {'min-max ms':>15} {'tokens/s':>11} {'min-max tokens/s':>19} "
          f"{'step GF/s':>10} {'MFU':>7} {'peak MiB':>9}")
    mfu, peak = r["mfu"], r["peak_mib"]
    print(f"{mix:<10} {med * 1e3:9.2f} {min(times) * 1e3:7.2f}-{max(times) * 1e3:<7.2f} {T / med:11.0f} "
          f"{T / max(times):9.0f}-{T / min(times):<9.0f} {r['achieved_gflops']:10.2f} "
          f"{'-' if mfu is None else f'{100 * mfu:.1f}%':>7} {'-' if peak is None else f'{peak:.0f}':>9}")
    write_json(args.json, r)
    return 0


def check_defaults(ref):
    """compare DEFAULTS with the `gmatrain --config-reference` table: | `key` | type | `default` |"""
    text = sys.stdin.read() if ref == "-" else open(ref).read()
    table = {}
    for line in text.splitlines():
        cells = [c.strip().strip("`") for c in line.split("|")[1:4]]
        if len(cells) == 3 and cells[0] in DEFAULTS:
            table[cells[0]] = cells[2]
    bad = [k for k in DEFAULTS if k not in table or parse_value(k, table[k], ref) != parse_value(k, DEFAULTS[k], "")]
    for k in bad:
        print(f"default of {k}: here {DEFAULTS[k]!r}, gma {table.get(k, 'no such key')!r}")
    print(f"defaults: {len(DEFAULTS) - len(bad)} of {len(DEFAULTS)} keys agree with the gma schema")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawTextHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", metavar="CKPT")
    mode.add_argument("--bench", action="store_true")
    mode.add_argument("--check-defaults", metavar="REF")
    ap.add_argument("--config")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--dtype", default="fp32", choices=("fp32", "tf32", "bf16"))
    for opt, default, what in (("--batch", 0, "default: 4 (--check), train.batch_size (--bench)"),
                               ("--seq", 0, "default: train.seq_len"), ("--steps", 10, "timed steps per repeat"),
                               ("--warmup", 3, "untimed steps first"), ("--repeat", 5, "timings (median, min-max)"),
                               ("--seed", 0, "random tokens"), ("--threads", 0, "torch CPU threads (0: torch's)")):
        ap.add_argument(opt, type=int, default=default, help=what)
    ap.add_argument("--peak-tflops", type=float, default=0, help="device peak for the MFU column (not guessed)")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--double", action="store_true", help="--check: run the torch side in float64")
    ap.add_argument("--gmaeval", help="default: bin/gmaeval (bin/cuda/gmaeval for --device cuda) beside this script's "
                    "scripts/ directory")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    try:
        if min(args.batch, args.seq, args.threads, args.warmup) < 0 or min(args.steps, args.repeat) < 1:
            raise InputError("--batch, --seq, --threads, --warmup must be >= 0, --steps and --repeat >= 1")
        if args.check and args.dtype != "fp32":
            raise InputError("--check runs fp32 (or --double); --dtype is for --bench")
        if args.check_defaults:
            return check_defaults(args.check_defaults)
        return run_check(args) if args.check else run_bench(args)
    except (InputError, OSError) as e:
        print(f"torch_gma: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
