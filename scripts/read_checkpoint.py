#!/usr/bin/env python3
"""read_checkpoint.py: read a gma checkpoint with the standard library and numpy.

    python3 scripts/read_checkpoint.py RUN|RUN/ckpt_N|model.safetensors [--values] [--config]

lists every tensor (name, shape, dtype, number of values), the number of parameters (the
values of every tensor) and the run's configuration summary; --values adds under each tensor
one line: min, max, mean and std (population) of its finite values, the count of non-finite
ones and its first 8 values (%.9g, enough to give float32 back exactly); --config prints the
resolved configuration as JSON. A closed pipe (| head) ends it quietly.

As a module (scripts/ on sys.path):

    import read_checkpoint as rc
    ck = rc.load("runs/quickstart")          # a run, a checkpoint directory or a file
    ck.tensors["tok_emb.weight"]             # numpy arrays, name -> np.ndarray
    ck.config["model"]["d_model"]            # the run's config (the checkpoint's metadata)

The format (src/core/safetensors.h, src/model/checkpoint.h): 8-byte little-endian header
length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, then
the raw little-endian data; gma writes F32 tensors, the metadata "format" "gma-ckpt-1"
and "config" (the resolved config as JSON). read_header() needs no numpy (the PyTorch
reference, scripts/torch_gma.py, uses it).
"""
import json
import math
import os
import signal
import struct
import sys

# safetensors dtype -> (numpy type name, bytes per value); BF16 is widened to float32
DTYPES = {
    "F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2),
    "I64": ("<i8", 8), "I32": ("<i4", 4), "I16": ("<i2", 2), "I8": ("i1", 1),
    "U64": ("<u8", 8), "U32": ("<u4", 4), "U16": ("<u2", 2), "U8": ("u1", 1), "BOOL": ("?", 1),
}
FORMAT = "gma-ckpt-1"
FIRST = 8  # values shown by --values


class CheckpointError(ValueError):
    """a file that is not a readable checkpoint: the message names the file and the tensor"""


def resolve(path):
    """as gma's ckpt_resolve: a model.safetensors, a checkpoint directory or a run (its latest)"""
    for p in (path, os.path.join(path, "model.safetensors"), os.path.join(path, "latest", "model.safetensors")):
        if os.path.isfile(p):
            return p
    raise CheckpointError(f"{path}: no such checkpoint (no model.safetensors here or under latest/)")


def read_header(path):
    """(entries, metadata, raw bytes, data offset): entries maps each name to (dtype, shape,
    begin, end) with begin/end relative to the data offset, every range checked"""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        (n,) = struct.unpack_from("<Q", raw, 0)
        if 8 + n > len(raw):
            raise ValueError(f"header length {n} at offset 0 is past the end of the file ({len(raw)} bytes)")
        header = json.loads(raw[8:8 + n].decode("utf-8"))
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
    except (struct.error, ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path}: not a safetensors file ({e})")
    meta = header.pop("__metadata__", {}) or {}
    size, entries = len(raw) - 8 - n, {}
    for name, e in header.items():
        try:
            dtype, shape, (a, b) = e["dtype"], [int(s) for s in e["shape"]], e["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(f"{path}: tensor {name}: missing dtype, shape or data_offsets")
        if dtype not in DTYPES:
            raise CheckpointError(f"{path}: tensor {name}: dtype {dtype} is not one of {', '.join(DTYPES)}")
        if not (0 <= a <= b <= size) or b - a != DTYPES[dtype][1] * math.prod(shape):
            raise CheckpointError(f"{path}: tensor {name}: dtype {dtype}, shape {shape}, bytes {a}-{b} do not fit "
                                  f"(data section {size} bytes)")
        entries[name] = (dtype, shape, a, b)
    return entries, meta, raw, 8 + n


class Checkpoint:
    """tensors (name -> np.ndarray), metadata (str -> str), config (dict), path"""

    def __init__(self, path, tensors, metadata):
        self.path, self.tensors, self.metadata = path, tensors, metadata
        self.config = json.loads(metadata["config"]) if "config" in metadata else {}

    def parameters(self):
        """number of values in every tensor (buffers such as EMA statistics included)"""
        return sum(int(t.size) for t in self.tensors.values())


def load(path, check_format=True):
    """the checkpoint at path (a run, RUN/ckpt_N, or a model.safetensors) as numpy arrays"""
    import numpy as np
    file = resolve(path)
    entries, meta, raw, off = read_header(file)
    if check_format and meta.get("format") != FORMAT:
        raise CheckpointError(f"{file}: not a gma checkpoint (metadata format {meta.get('format')!r}, want {FORMAT!r})")
    out = {}
    for name, (dtype, shape, a, b) in entries.items():
        arr = np.frombuffer(raw, dtype=np.dtype(DTYPES[dtype][0]), count=(b - a) // DTYPES[dtype][1], offset=off + a)
        if dtype == "BF16":  # the high half of a float32
            arr = (arr.astype(np.uint32) << 16).view(np.float32)
        out[name] = arr.reshape(shape).copy()
    return Checkpoint(file, out, meta)


def summary(t):
    """the --values line of tensor t: statistics of its finite values, the non-finite count,
    the first FIRST values"""
    import numpy as np
    a = t.reshape(-1)
    f = a.astype(np.float64)
    f = f[np.isfinite(f)]
    st = ("min %.6g max %.6g mean %.6g std %.6g" % (f.min(), f.max(), f.mean(), f.std()) if f.size
          else "min - max - mean - std -")
    first = " ".join("%.9g" % v for v in a[:FIRST].tolist())
    return "%s non-finite %d | first %d of %d: %s" % (st, a.size - f.size, min(FIRST, a.size), a.size, first)


def describe(ck, values=False, out=sys.stdout):
    """the listing the command line prints"""
    cfg = ck.config
    m = cfg.get("model", {})
    if m:
        mixer = m.get("mixer")
        mixer = ",".join(mixer) if isinstance(mixer, list) else mixer
        print(f"{ck.path}: {cfg.get('name', '?')} | mixer {mixer} | d_model {m.get('d_model')} | n_layers "
              f"{m.get('n_layers')} | n_heads {m.get('n_heads')} | vocab {m.get('vocab_size')} | max_seq_len "
              f"{m.get('max_seq_len')}", file=out)
    w = max([len(n) for n in ck.tensors] + [4])
    for name, t in ck.tensors.items():
        print(f"{name:<{w}}  {str(list(t.shape)):<16} {str(t.dtype):<8} {t.size:>10,}", file=out)
        if values:
            print("  " + summary(t), file=out)
    print(f"{len(ck.tensors)} tensors, {ck.parameters():,} parameters", file=out)


def main(argv):
    if hasattr(signal, "SIGPIPE"):  # a closed pipe (| head) ends the program quietly, as it does cat
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = [a for a in argv if not a.startswith("--")]
    flags = {a for a in argv if a.startswith("--")}
    if "--help" in flags or "-h" in argv or len(args) != 1 or flags - {"--values", "--config", "--help"}:
        print(__doc__.split("\n\n")[1], file=sys.stdout if "--help" in flags else sys.stderr)
        return 0 if "--help" in flags else 2
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("read_checkpoint: numpy is needed (apt-get install python3-numpy, or pip install numpy)", file=sys.stderr)
        return 1
    try:
        ck = load(args[0])
    except (CheckpointError, OSError) as e:
        print(f"read_checkpoint: {e}", file=sys.stderr)
        return 2
    if "--config" in flags:
        print(json.dumps(ck.config, indent=2))
    else:
        describe(ck, values="--values" in flags)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
