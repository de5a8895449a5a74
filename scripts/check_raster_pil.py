#!/usr/bin/env python3
"""check_raster_pil.py: compares the Pathfinder generator's drawing (src/data/cls/raster.c)
with PIL's on the calls the release makes (docs/lra.md, Pathfinder, Rendering): a
Pathfinder-32 paddle at each of the 360 whole-degree orientations (the width-1 line in a
17 x 17 box, its Lanczos resize to 9 x 9 as a float image, its mask dilated by the disk of
radius 2 and resized as an 8-bit image), lines of widths 2-4 at the same orientations, and a
marker (a disk of radius 3 in 64 x 64 resized to 32 x 32 as an 8-bit image).

  scripts/check_raster_pil.py      (after `make`; compiles scripts/raster_dump.c with cc)

Prints the mismatches per kind and exits 1 when any drawn pixel differs, the resized line
differs by more than 1e-3 or a mask or marker value differs. Needs numpy and PIL (Debian:
python3-numpy, python3-pil); not part of the build or the tests."""
import math, os, subprocess, sys, tempfile

import numpy as np
from PIL import Image, ImageDraw

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
lib = os.path.join(root, "build", "libgma.a")
if not os.path.exists(lib):
    sys.exit("check_raster_pil: build/libgma.a missing: run make first")
exe = os.path.join(tempfile.mkdtemp(), "raster_dump")
subprocess.run(["cc", "-O2", "-std=c11", "-I" + os.path.join(root, "src"), os.path.join(root, "scripts", "raster_dump.c"),
                lib, "-lm", "-fopenmp", "-lpthread", "-o", exe], check=True)
out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout.splitlines()


def disk_dilate(img, r):
    k = [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1) if dy * dy + dx * dx <= r * r]
    h, w = img.shape
    res = np.zeros_like(img)
    for y in range(h):
        for x in range(w):
            res[y, x] = max(img[y + dy, x + dx] for dy, dx in k if 0 <= y + dy < h and 0 <= x + dx < w)
    return res


bad = {"line drawn": 0, "line resized": 0, "mask": 0, "wide": 0, "marker": 0}
worst = 0.0
for ln in out:
    f = ln.split()
    if f[0] == "L":
        deg = int(f[1])
        drawn = np.array(f[2:291], float).reshape(17, 17)
        resized = np.array(f[291:372], float).reshape(9, 9)
        mask = np.array(f[372:453], float).reshape(9, 9)
        a = deg * math.pi / 180
        hy, hx = int(math.ceil(8 + 4 * math.sin(a))), int(math.ceil(8 + 4 * math.cos(a)))
        im = Image.new("F", (17, 17), "black")
        ImageDraw.Draw(im).line([(8, 8), (hx, hy)], fill="white", width=1)
        ref = np.array(im)
        bad["line drawn"] += int(not np.array_equal(ref, drawn))
        diff = np.abs(np.array(im.resize((9, 9), Image.LANCZOS)) - resized).max()
        worst = max(worst, diff)
        bad["line resized"] += int(diff > 1e-3)
        ref_mask = np.array(Image.fromarray(disk_dilate(ref, 2).astype(np.uint8)).resize((9, 9), Image.LANCZOS), float)
        bad["mask"] += int(not np.array_equal(ref_mask, mask))
    elif f[0] == "W":
        w, deg, hy, hx = map(int, f[1:5])
        ours = np.array(f[5:], int).reshape(41, 41)
        im = Image.new("F", (41, 41), "black")
        ImageDraw.Draw(im).line([(20, 20), (hx, hy)], fill="white", width=w)
        bad["wide"] += int(not np.array_equal((np.array(im) > 0).astype(int), ours))
    elif f[0] == "M":
        ours = np.array(f[1:], float).reshape(32, 32)
        big = np.zeros((64, 64))
        y, x = np.ogrid[-20:44, -26:38]
        big[x ** 2 + y ** 2 <= 9] = 1
        ref = np.array(Image.fromarray((big * 255).astype(np.uint8)).resize((32, 32), Image.LANCZOS), float)
        bad["marker"] += int(not np.array_equal(ref, ours))
import PIL
print(f"check_raster_pil: PIL {PIL.__version__}: mismatching cases " + ", ".join(f"{k} {v}" for k, v in bad.items())
      + f" (of 360 paddles, 1,080 wide lines, 1 marker); resized line max |diff| {worst:.2g}")
sys.exit(1 if any(bad.values()) else 0)
