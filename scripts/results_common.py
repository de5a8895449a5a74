"""results_common.py: what the results pages of scripts/write_results.sh share: reading the JSON, statistics over seeds, number formats."""
import glob, json, math, os, platform, re, shutil, subprocess, sys, time

PAPER = {"used_components": 104.0, "usage_entropy": 0.933, "nmi": 0.244}
KC = 128
METRICS = [("valid_ppl", "valid ppl", 1), ("test_ppl", "test ppl", 1),
           ("test_word_ppl", "test word ppl", 0), ("tokens_per_s", "tokens/s", 0)]
ME = "scripts/write_results.sh"

def die(msg):
    sys.stderr.write(ME + ": " + msg + "\n")
    sys.exit(1)

def load(path):
    try:
        # errors="replace": gmaeval's top_tokens texts may hold a byte-level token that is
        # only part of a UTF-8 character
        with open(path, encoding="utf-8", errors="replace") as f:
            return json.load(f)
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    except ValueError as e:
        die("%s: not JSON (%s)" % (path, e))

def number(d, key, path):
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        die("%s: field '%s' missing or not a finite number" % (path, key))
    return float(v)

def stats(xs):
    n = len(xs)
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    return {"n": n, "mean": mean, "std": std, "min": min(xs), "max": max(xs)}

def compare(a, b):
    """a against b (stats dicts): difference of means, Welch t, ranges disjoint."""
    diff = a["mean"] - b["mean"]
    se = math.sqrt(a["std"] ** 2 / a["n"] + b["std"] ** 2 / b["n"])
    t = diff / se if se > 0 else None
    if a["n"] < 2 or b["n"] < 2:
        verdict = None
    else:
        verdict = a["min"] > b["max"] or a["max"] < b["min"]
    return {"diff": diff, "welch_t": t, "exceeds_spread": verdict}

def descriptor(path):
    """the descriptor path names (/proc/self/fd/N, /dev/fd/N, /dev/stdout, /dev/stderr, as path
    or a link on the way to its file), else -1"""
    cur = path
    for _ in range(16):
        m = re.fullmatch(r"/(?:proc/self|dev)/fd/(\d+)", cur)
        if m:
            return int(m.group(1))
        if cur in ("/dev/stdout", "/dev/stderr"):
            return 1 if cur == "/dev/stdout" else 2
        if not os.path.islink(cur):
            return -1
        link = os.readlink(cur)
        cur = link if link.startswith("/") else os.path.join(os.path.dirname(cur), link)
    return -1


def read_page(path):
    """the text of the page at path, or None where there is none to keep: a missing file, or
    one that is not a regular file of its own (/dev/stdout: reading it would wait on a pipe)"""
    if descriptor(path) != -1 or not os.path.isfile(path):
        return None
    with open(path) as f:
        return f.read()


def write(path, text):
    """text into path through path.tmp and a rename, so a failure leaves the old file whole; a
    symbolic link at path keeps pointing where it did (the file it names is replaced);
    /dev/stdout and the like are written through their descriptor, another path that is there
    and not a regular file (a pipe) straight: nothing is renamed over a link or a device (as
    gma_write_file_atomic, src/core/common.c)"""
    fd = descriptor(path)
    if fd >= 0:
        sys.stdout.flush()
        sys.stderr.flush()
        data = text.encode()
        while data:
            data = data[os.write(fd, data):]
        return
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "a") as f:
            f.write(text)
        return
    path = os.path.realpath(path) if os.path.islink(path) else path
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def fmt(x, d):
    return ("%%.%df" % d) % x

def spread(st, d):
    """the sample std of a stats dict, "n/a" for one seed (it has none)"""
    return "n/a" if st["n"] < 2 else fmt(st["std"], d)

def verdict_word(v):
    return "n/a (one seed)" if v is None else ("yes" if v else "no")

MQAR_HEAD = "## Associative recall (MQAR, Zoology protocol)"


def kept_section(path, head):
    """The section `head` of the page at path as it stands (the reading, written by hand),
    so that rewriting the page keeps it; none from a path that is no regular file of its own
    (/dev/stdout: reading it would wait on the pipe)."""
    try:
        text = read_page(path)
    except OSError:
        return []
    if text is None:
        return []
    lines = text.split("\n")
    if head not in lines:
        return []
    i = lines.index(head)
    j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
    sec = lines[i:j]
    while sec and not sec[-1].strip():
        sec.pop()
    return sec + [""]
