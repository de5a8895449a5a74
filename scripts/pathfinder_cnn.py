#!/usr/bin/env python3
"""pathfinder_cnn.py: a learnability check of a generated Pathfinder set with a model that
has the task's locality built in: a small convolutional network (7 dilated 3 x 3
convolutions of 32 channels with batch norm and ReLU, global max pooling, a linear layer)
trained with Adam in PyTorch on the CPU. It tells whether the images carry their labels in a
form a learner picks up, apart from what the sequence models of gma make of them
(docs/lra.md, Pathfinder, "CPU check").

  pathfinder_cnn.py DIR [--seconds 420] [--threads 2] [--batch 64] [--lr 1e-3] [--seed 0]
                        [--eval-every 250] [--eval-images 2000] [--limit N]
                        [--norm batch|instance|group|none]

--norm is the normalisation after each convolution: batch (BatchNorm2d, the default: batch
statistics in training, running ones in evaluation), instance (GroupNorm with one group per
channel: each image's own statistics per channel), group (GroupNorm with one group: each
image's statistics over all channels and pixels) or none.

DIR is a difficulty's directory as `gmadata generate pathfinder` writes it (DIR/metadata/*.npy
text lines, DIR/imgs/B/sample_I.png). The split is the loader's: the first 80% train, the
next 10% valid, the last 10% test (src/data/cls/lra_pathfinder.c); this script trains on
the first 80% for --seconds of wall time (evaluations included), prints the accuracy on
the first --eval-images test images every --eval-every steps (`step S images I loss L
test_acc A seconds T`) and at the end on the whole test split (`final ... test_acc A`).
Needs torch and PIL (Debian: python3-torch, python3-pil); not part of the build or the tests.
Exit: 0, or 2 on bad input (one line on stderr)."""
import argparse, os, sys, time

import numpy as np
import torch
import torch.nn as nn
from PIL import Image


def die(msg):
    print(f"pathfinder_cnn: {msg}", file=sys.stderr)
    sys.exit(2)


def load(root, limit):
    meta = os.path.join(root, "metadata")
    if not os.path.isdir(meta):
        die(f"{root}: no metadata directory (a difficulty's directory is expected)")
    names = sorted((f for f in os.listdir(meta) if f.endswith(".npy")), key=lambda f: int(f.split(".")[0]))
    xs, ys = [], []
    for name in names:
        for k, line in enumerate(open(os.path.join(meta, name))):
            f = line.split()
            if len(f) < 4:
                die(f"{meta}/{name}: line {k + 1}: fewer than 4 fields")
            png = os.path.join(root, f[0], f[1])
            try:
                xs.append(np.asarray(Image.open(png), dtype=np.uint8))
            except OSError as e:
                die(f"{meta}/{name}: line {k + 1}: {png}: {e}")
            ys.append(int(f[3]))
            if limit and len(xs) >= limit:
                return np.stack(xs), np.array(ys)
    return np.stack(xs), np.array(ys)


NORMS = {"batch": nn.BatchNorm2d, "instance": lambda c: nn.GroupNorm(c, c), "group": lambda c: nn.GroupNorm(1, c),
         "none": lambda c: nn.Identity()}


def block(cin, cout, dilation, norm):
    return [nn.Conv2d(cin, cout, 3, padding=dilation, dilation=dilation), NORMS[norm](cout), nn.ReLU()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--seconds", type=float, default=420)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--eval-images", type=int, default=2000)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--norm", choices=sorted(NORMS), default="batch")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    x, y = load(a.dir, a.limit)
    n = len(x)
    b1, b2 = (n * 80 + 50) // 100, (n * 90 + 50) // 100
    X = torch.tensor(x, dtype=torch.float32).unsqueeze(1) / 255.0
    Y = torch.tensor(y, dtype=torch.int64)
    Xtr, Ytr, Xte, Yte = X[:b1], Y[:b1], X[b2:], Y[b2:]
    print(f"pathfinder_cnn: {n} images {x.shape[1]} x {x.shape[2]}, train {b1}, test {n - b2} "
          f"({Yte.float().mean().item():.3f} positive)", flush=True)
    layers = []
    for i, d in enumerate((1, 1, 2, 2, 4, 4, 8)):
        layers += block(1 if i == 0 else 32, 32, d, a.norm)
    model = nn.Sequential(*layers, nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(32, 2))
    opt = torch.optim.Adam(model.parameters(), a.lr)
    def accuracy(X, Y):
        model.eval()
        with torch.no_grad():
            right = sum((model(X[i:i + 1000]).argmax(1) == Y[i:i + 1000]).sum().item() for i in range(0, len(X), 1000))
        model.train()
        return right / len(X)

    t0, step = time.time(), 0
    while time.time() - t0 < a.seconds:
        idx = torch.randint(0, b1, (a.batch,))
        loss = nn.functional.cross_entropy(model(Xtr[idx]), Ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % a.eval_every == 0:
            acc = accuracy(Xte[:a.eval_images], Yte[:a.eval_images])
            print(f"step {step} images {step * a.batch} loss {loss.item():.3f} test_acc {acc:.4f} "
                  f"seconds {time.time() - t0:.0f}", flush=True)
    print(f"final step {step} images {step * a.batch} test_acc {accuracy(Xte, Yte):.4f} on {len(Xte)}", flush=True)

if __name__ == "__main__":
    main()
