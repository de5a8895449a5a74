#!/usr/bin/env python3
"""gpt2_reference.py: the fixtures of tests/test_import_gpt2.c (docs/data.md, "Importing GPT-2").

Makes a tiny random GPT-2 (2 layers, n_embd 16, 2 heads, vocabulary 61, 16 positions) and
writes it twice, in the two layouts `gmadata import gpt2` reads:

  OUT/hf/config.json, OUT/hf/model.safetensors   a Hugging Face folder: the Conv1D weights
      [in, out], names without the "transformer." prefix, the attention mask buffers
      h.{i}.attn.bias [1, 1, T, T] as in the published files (the importer ignores them);
      the safetensors file is written from the format's definition (8-byte little-endian
      header length, the JSON header, the raw float32 data).
  OUT/gpt2_tiny.bin                              llm.c's checkpoint: 256 int32 of header
      (magic 20240326, version 3 = float32, maxT, V, L, H, C, padded V), then the
      parameters in llm.c's fixed order, the weights [out, in], wte padded to a multiple
      of 128 rows with zeros.
  OUT/reference.txt                              the tokens of a fixed sequence and their
      logits from a float64 forward written from the Hugging Face module (GPT2Model +
      the tied head), on the float32 weights the two files hold.

Only numpy is needed. Usage: scripts/gpt2_reference.py [--out tests/fixtures/gpt2]
"""
import argparse
import json
import math
import os
import struct

import numpy as np

L, D, H, V, T = 2, 16, 2, 61, 16
TOKENS = [3, 17, 60, 0, 42, 42, 7, 25, 58, 11, 1, 33]
PAD_MULTIPLE = 128  # llm.c pads the vocabulary rows of wte to a multiple of 128


def make_params(seed=20240326):
    """HF GPT-2 tensors (Conv1D layout [in, out]), float32 values."""
    r = np.random.default_rng(seed)

    def n(*shape, s=0.3):
        return (r.standard_normal(shape) * s).astype(np.float32)

    p = {"wte.weight": n(V, D), "wpe.weight": n(T, D, s=0.1)}
    for i in range(L):
        h = "h.%d." % i
        p[h + "ln_1.weight"] = (1 + n(D, s=0.1)).astype(np.float32)
        p[h + "ln_1.bias"] = n(D, s=0.1)
        p[h + "attn.c_attn.weight"] = n(D, 3 * D)
        p[h + "attn.c_attn.bias"] = n(3 * D, s=0.1)
        p[h + "attn.c_proj.weight"] = n(D, D)
        p[h + "attn.c_proj.bias"] = n(D, s=0.1)
        p[h + "ln_2.weight"] = (1 + n(D, s=0.1)).astype(np.float32)
        p[h + "ln_2.bias"] = n(D, s=0.1)
        p[h + "mlp.c_fc.weight"] = n(D, 4 * D)
        p[h + "mlp.c_fc.bias"] = n(4 * D, s=0.1)
        p[h + "mlp.c_proj.weight"] = n(4 * D, D)
        p[h + "mlp.c_proj.bias"] = n(D, s=0.1)
    p["ln_f.weight"] = (1 + n(D, s=0.1)).astype(np.float32)
    p["ln_f.bias"] = n(D, s=0.1)
    return p


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    js = json.dumps(header, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)))
        f.write(js)
        for b in blobs:
            f.write(b)


def write_hf(folder, p):
    os.makedirs(folder, exist_ok=True)
    t = dict(p)
    mask = np.tril(np.ones((T, T), dtype=np.float32)).reshape(1, 1, T, T)
    for i in range(L):
        t["h.%d.attn.bias" % i] = mask
    write_safetensors(os.path.join(folder, "model.safetensors"), t)
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": V, "n_positions": T,
           "n_ctx": T, "n_embd": D, "n_layer": L, "n_head": H, "n_inner": None,
           "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05, "scale_attn_weights": True,
           "scale_attn_by_inverse_layer_idx": False, "reorder_and_upcast_attn": False,
           "tie_word_embeddings": True}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")


def write_llmc(path, p):
    Vp = (V + PAD_MULTIPLE - 1) // PAD_MULTIPLE * PAD_MULTIPLE
    header = np.zeros(256, dtype="<i4")
    header[:8] = [20240326, 3, T, V, L, H, D, Vp]
    wte = np.zeros((Vp, D), dtype=np.float32)
    wte[:V] = p["wte.weight"]
    order = [("ln_1.weight", 0), ("ln_1.bias", 0), ("attn.c_attn.weight", 1), ("attn.c_attn.bias", 0),
             ("attn.c_proj.weight", 1), ("attn.c_proj.bias", 0), ("ln_2.weight", 0), ("ln_2.bias", 0),
             ("mlp.c_fc.weight", 1), ("mlp.c_fc.bias", 0), ("mlp.c_proj.weight", 1), ("mlp.c_proj.bias", 0)]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for a in [wte, p["wpe.weight"]]:
            f.write(a.astype("<f4").tobytes())
        for name, transpose in order:  # each tensor for every layer, then the next tensor
            for i in range(L):
                a = p["h.%d.%s" % (i, name)]
                f.write(np.ascontiguousarray(a.T if transpose else a).astype("<f4").tobytes())
        for name in ["ln_f.weight", "ln_f.bias"]:
            f.write(p[name].astype("<f4").tobytes())


def layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def forward(p, tokens):
    """GPT2LMHeadModel's logits in float64 (dropout off, no attention mask beyond causal)."""
    g = {k: v.astype(np.float64) for k, v in p.items()}
    n, d = len(tokens), D // H
    x = g["wte.weight"][tokens] + g["wpe.weight"][:n]
    causal = np.tril(np.ones((n, n), dtype=bool))
    for i in range(L):
        h = "h.%d." % i
        a = layer_norm(x, g[h + "ln_1.weight"], g[h + "ln_1.bias"])
        qkv = a @ g[h + "attn.c_attn.weight"] + g[h + "attn.c_attn.bias"]
        q, k, v = qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:]
        heads = []
        for hh in range(H):
            s = slice(hh * d, (hh + 1) * d)
            w = q[:, s] @ k[:, s].T / math.sqrt(d)
            w = np.where(causal, w, -np.inf)
            w = np.exp(w - w.max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            heads.append(w @ v[:, s])
        o = np.concatenate(heads, axis=1)
        x = x + o @ g[h + "attn.c_proj.weight"] + g[h + "attn.c_proj.bias"]
        m = layer_norm(x, g[h + "ln_2.weight"], g[h + "ln_2.bias"])
        f = gelu_new(m @ g[h + "mlp.c_fc.weight"] + g[h + "mlp.c_fc.bias"])
        x = x + f @ g[h + "mlp.c_proj.weight"] + g[h + "mlp.c_proj.bias"]
    x = layer_norm(x, g["ln_f.weight"], g["ln_f.bias"])
    return x @ g["wte.weight"].T


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/gpt2")
    out = ap.parse_args().out
    p = make_params()
    write_hf(os.path.join(out, "hf"), p)
    write_llmc(os.path.join(out, "gpt2_tiny.bin"), p)
    logits = forward(p, TOKENS)
    with open(os.path.join(out, "reference.txt"), "w") as f:
        f.write("tokens %d %s\n" % (len(TOKENS), " ".join(map(str, TOKENS))))
        f.write("logits %d %d\n" % logits.shape)
        for row in logits:
            f.write(" ".join("%.12e" % v for v in row) + "\n")


if __name__ == "__main__":
    main()
