#!/usr/bin/env python3
"""gen_docs.py: the documentation's generated sections, each from the one file that holds its
facts, written between the markers <!-- gen:NAME --> and <!-- /gen:NAME --> of its page.

  scripts/gen_docs.py           rewrite every section in place
  scripts/gen_docs.py --check   write nothing; exit 1 with one line per section that differs
                                from what its sources give (run by `make test`)

Sections (page: NAME <- source):
  README.md: test-counts         <- tests/test_*.c, tests/test64_*.c, tests/*.sh
  README.md: headline            <- the tables of docs/results/{small,longctx,mqar,migration}.md,
                                   docs/results/cross/xmqar_long_seed*.json
  docs/programs.md: synopsis     <- `bin/PROGRAM --help` of the six programs (built first)
  docs/testing.md: test-map      <- the suites' header comments and #include lines
  docs/benchmarks.md: bench-summary <- the gmabench outputs under docs/results/gpu_h200/ and
                                   docs/results/scaling/
  docs/results/routing_diag/results.md: diag-summary <- its results.json (scripts/routing_diag.py --summary)
  docs/quickstart.md: quickstart-table <- docs/results/quickstart/results.json (scripts/quickstart_table.py)
  docs/lra.md: lra-small         <- docs/results/lra/small.txt (scripts/reproduce_lra.sh's table, as its md_table)
Results pages whose JSON is committed, each rewritten by the script that measured it (the
page's "## What it shows" and other sections kept):
  docs/results/mqar.md           <- scripts/write_results.sh mqar docs/results/mqar/results.json
  docs/results/cross.md          <- scripts/reproduce_cross.sh write CROSS_JSON (below, the page's order)
The configuration reference (docs/config.md) is written by scripts/config_reference.sh and
checked by tests/test_configs.c. Python 3 standard library only; run from anywhere.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = ["gmatrain", "gmaeval", "gmasample", "gmadata", "gmabench", "gmacheck"]


class Bad(Exception):
    pass


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


# ---- tests: counts and map ----

def suites():
    """(name, path) of every Check suite and script check, in make test's order"""
    c = sorted(glob.glob(os.path.join(ROOT, "tests", "test_*.c"))) + \
        sorted(glob.glob(os.path.join(ROOT, "tests", "test64_*.c")))
    sh = sorted(glob.glob(os.path.join(ROOT, "tests", "test_*.sh")))
    return [(os.path.basename(p).rsplit(".", 1)[0], os.path.relpath(p, ROOT)) for p in c + sh]


def case_count(path, text):
    """the test cases of a Check suite (START_TEST blocks); None for a script check"""
    if path.endswith(".c"):
        return len(re.findall(r"^START_TEST\(", text, re.M))
    return None


def header_sentence(name, path, text):
    """the header comment's first sentence up to its first colon (outside brackets and code),
    without the leading 'name.c:'"""
    if path.endswith(".c"):
        m = re.match(r"\s*/\*(.*?)\*/", text, re.S)
        if not m:
            raise Bad("%s: no header comment" % path)
        body = " ".join(l.strip().lstrip("*").strip() for l in m.group(1).splitlines())
    else:
        lines = [l[1:].strip() for l in text.splitlines()[1:] if l.startswith("#")]
        body = " ".join(lines[:6])
    body = re.sub(r"\s+", " ", body).strip()
    body = re.sub(r"^%s\.(c|sh):\s*" % re.escape(name), "", body)
    depth, code, s = 0, False, body
    for i, ch in enumerate(body):
        depth += (ch in "([") - (ch in ")]")
        code ^= ch == "`"
        if depth == 0 and not code and ch in ".;:" and (i + 1 == len(body) or body[i + 1] == " "):
            s = body[:i]
            break
    if len(s) > 160:
        s = s[:157].rsplit(" ", 1)[0] + " ..."
    return s.replace("|", "\\|")


def rooms(path, text):
    if path.endswith(".sh"):
        return "scripts/"
    inc = re.findall(r'^#include "([a-z0-9_]+)/', text, re.M)
    return ", ".join("src/%s/" % r for r in sorted(set(inc))) or "bin/ (the programs)"


def gen_test_counts():
    c32 = c64 = sh = 0
    cases = 0
    for name, path in suites():
        t = read(path)
        n = case_count(path, t)
        if path.endswith(".sh"):
            sh += 1
        else:
            cases += n
            if name.startswith("test64_"):
                c64 += 1
            else:
                c32 += 1
    return ("%d Check suites (%d float32, %d float64 gradient-check suites) with %d test cases, "
            "and %d script checks under tests/; the suite by suite map: "
            "[docs/testing.md](docs/testing.md#test-map)." % (c32 + c64, c32, c64, cases, sh))


def gen_test_map():
    rows = ["| suite | covers | source rooms | cases |", "|---|---|---|---:|"]
    for name, path in suites():
        t = read(path)
        n = case_count(path, t)
        rows.append("| [%s](../%s) | %s | %s | %s |" % (name, path, header_sentence(name, path, t),
                                                     rooms(path, t), "-" if n is None else n))
    return "\n".join(rows)


# ---- headline results ----

def md_section(text, heading, page):
    """the text of the section '## heading' of page (to the next '## ')"""
    m = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % re.escape(heading), text, re.M | re.S)
    if not m:
        raise Bad("%s: no section '## %s'" % (page, heading))
    return m.group(1)


def table_rows(section, first_col_header):
    """rows (lists of cells) of the first table in section whose header starts with first_col_header"""
    lines = section.splitlines()
    for i, l in enumerate(lines):
        if l.startswith("| %s |" % first_col_header):
            head = [c.strip() for c in l.strip("|").split("|")]
            rows = []
            for r in lines[i + 2:]:
                if not r.startswith("|"):
                    break
                rows.append(dict(zip(head, [c.strip() for c in r.strip("|").split("|")])))
            return rows
    raise Bad("docs/results/: no table with first column '%s'" % first_col_header)


def row(rows, key, value, page):
    for r in rows:
        if r[key] == value:
            return r
    raise Bad("%s: no row '%s'" % (page, value))


def best_other(rows, col, key=lambda v: v, lower=False, skip=("gma", "sdpa")):
    """'name value' of the row of rows, other than skip, with the best col (highest, or lowest)"""
    rs = [r for r in rows if r["mixer"] not in skip and r.get(col, "-") not in ("-", "")]
    if not rs:
        return "-"
    pick = (min if lower else max)(rs, key=lambda r: key(r[col]))
    return "%s %s" % (pick["mixer"], pick[col])


def gen_headline():
    page = lambda name: ("docs/results/%s.md" % name, read("docs/results/%s.md" % name))
    out = ["| study | measure | GMA | softmax attention (sdpa) | strongest other mixer | page |", "|---|---|---|---|---|---|"]
    name, res = page("small")
    small = table_rows(res, "mixer")  # the page is the one study
    g, s = row(small, "mixer", "gma", name), row(small, "mixer", "sdpa", name)
    cut = lambda v: v.split(" [")[0]
    first = lambda v: float(v.split()[0])
    small = [dict(r, **{"test ppl": cut(r["test ppl"])}) for r in small]
    out.append("| small language model, State of the Union, 3 seeds | test perplexity (mean ± std) | %s | %s | %s | "
               "[results](docs/results/small.md) |" % (cut(g["test ppl"]), cut(s["test ppl"]),
                                                                           best_other(small, "test ppl", first, lower=True)))
    name, res = page("longctx")
    lc = table_rows(md_section(res, "Long context", name), "mixer")
    col = [k for k in lc[0] if k.endswith("(16x)")][0]
    g, s = row(lc, "mixer", "gma", name), row(lc, "mixer", "sdpa", name)
    out.append("| passkey, read at 16x the training length | exact (per-digit) accuracy at %s | %s | %s | %s | "
               "[results](docs/results/longctx.md) |" % (col.split()[0], g[col], s[col], best_other(lc, col, first)))
    # MQAR in Zoology's build (a baseconv layer, the mixer, no positions): GMA's best setting
    # there against attention in the same build and the best other token
    name, res = page("mqar")
    mq = table_rows(md_section(res, "Associative recall (MQAR, Zoology protocol)", name), "mixer")
    gs = [r for r in mq if r["width"] == "64" and "gma" in r["mixer"] and r["mixer"].startswith("bc-")]
    if not gs:
        raise Bad("%s: no bc-gma row at width 64 in the MQAR table" % name)
    g = max(gs, key=lambda r: first(r["acc@64"]))
    s = [r for r in mq if r["mixer"] == "bc-sdpa" and r["width"] == "64"][0]
    others = [r for r in mq if r["width"] == "64" and "gma" not in r["mixer"] and "sdpa" not in r["mixer"]]
    out.append("| associative recall (MQAR), Zoology's build (a baseconv layer, then the mixer), width 64 | test accuracy at "
               "64 tokens (no lookup: 0.25), mean (range) over seeds | %s %s | %s | %s | "
               "[results](docs/results/mqar.md) |"
               % (g["mixer"], g["acc@64"], s["acc@64"], best_other(others, "acc@64", first, skip=())))
    # migration of a converged teacher at one budget: the full arm, the control (the teacher
    # fine-tuned alike) and GMA from scratch on the same budget
    name, res = page("migration")
    mg = table_rows(res, "arm")
    pick = lambda prefix: [r for r in mg if r["arm"].startswith(prefix)][0]
    try:
        m, c, z = pick("migrated: "), pick("control"), pick("GMA from scratch, the budget")
    except IndexError:
        raise Bad("%s: the migration table lacks the full arm, the control or GMA from scratch on the budget" % name)
    out.append("| migrating a converged softmax teacher to GMA, one budget, %s seeds | valid perplexity (mean ± std) | "
               "migrated %s | the teacher fine-tuned alike %s | GMA from scratch, the same budget %s | "
               "[results](docs/results/migration.md) |" % (m["seeds"], cut(m["valid ppl"]), cut(c["valid ppl"]),
                                                           cut(z["valid ppl"])))
    acc = {"gma_causal": [], "sdpa_causal": []}
    sec = {"gma_causal": [], "sdpa_causal": []}
    files = sorted(glob.glob(os.path.join(ROOT, "docs/results/cross/xmqar_long_seed*.json")))
    if not files:
        raise Bad("docs/results/cross/: no xmqar_long_seed*.json")
    runs = [r for p in files for r in json.load(open(p))["runs"] if r["kind"] in acc]
    # the longest context every run was read at
    n = min(max(x["ctx_len"] for x in r["lengths"]) for r in runs)
    for r in runs:
        last = [x for x in r["lengths"] if x["ctx_len"] == n][0]
        acc[r["kind"]].append(last["acc"])
        sec[r["kind"]].append(last["seconds"])
    f = lambda xs: " / ".join("%.3f" % x for x in xs)
    out.append("| cross-attention recall, trained at 32, read at %dK context | test accuracy, seed by seed | %s | %s | - | "
               "[results](docs/results/cross.md) |" % (n // 1024, f(acc["gma_causal"]), f(acc["sdpa_causal"])))
    out.append("| the same, CPU evaluation time at %dK (2 cores) | seconds, seed by seed | %s | %s | - | [results](docs/results/cross.md) |"
               % (n // 1024, " / ".join("%.1f" % x for x in sec["gma_causal"]),
                  " / ".join("%.1f" % x for x in sec["sdpa_causal"])))
    return "\n".join(out)


# ---- program synopses ----

def gen_synopsis():
    out = []
    for p in PROGRAMS:
        exe = os.path.join(ROOT, "bin", p)
        if not os.access(exe, os.X_OK):
            raise Bad("bin/%s: not built (make binaries)" % p)
        r = subprocess.run([exe, "--help"], capture_output=True, text=True)
        if r.returncode != 0:
            raise Bad("bin/%s --help: exit %d" % (p, r.returncode))
        keep = []
        for i, l in enumerate(r.stdout.splitlines()):
            if i > 0 and (not l.strip() or not l.startswith(" ")):
                break
            keep.append(l.rstrip())
        out.append("`%s` (all options: `bin/%s --help`):\n\n" % (p, p) + "\n".join("    " + l for l in keep))
    return "\n\n".join(out)


# ---- benchmark summary ----

def gmabench_rows(path, first):
    """rows of a gmabench text table: the lines after the header line starting with `first`"""
    rows, head = [], None
    for l in read(path).splitlines():
        if l.startswith(first + " "):
            head = l.split()
            continue
        if head and l.strip() and not l.startswith("#"):
            rows.append(l.split())
    if not rows:
        raise Bad("%s: no gmabench rows" % path)
    return head, rows


def gen_bench_summary():
    out = ["One GMA layer against one sdpa layer, forward + backward (causal, D 256, H 4, Kc 64, batch 1)",
           "on an NVIDIA H200 in fp32 ([mixer.txt](results/gpu_h200/mixer.txt), its command in",
           "[docs/results/gpu_h200/README.md](results/gpu_h200/README.md)):", "",
           "| N | sdpa ms | gma ms | gma / sdpa | sdpa peak MiB | gma peak MiB |", "|---:|---:|---:|---:|---:|---:|"]
    head, rows = gmabench_rows("docs/results/gpu_h200/mixer.txt", "mixer")
    by = {}
    for r in rows:
        by.setdefault(int(r[1]), {})[r[0]] = r
    for n in sorted(by):
        s, g = by[n]["sdpa"], by[n]["gma"]
        out.append("| %dK | %s | %s | %.3f | %s | %s |" % (n // 1024, s[2], g[2], float(g[2]) / float(s[2]), s[4], g[4]))
    out += ["", "Whole-model training step on the H200 (L 8, D 512, H 8, V 50257, batch 16 x 512 tokens, Kc 256;",
            "[model_fp32.txt](results/gpu_h200/model_fp32.txt), [model_bf16.txt](results/gpu_h200/model_bf16.txt)):", "",
            "| precision | mixer | step ms | tokens/s | peak MiB |", "|---|---|---:|---:|---:|"]
    for prec in ("fp32", "bf16"):
        head, rows = gmabench_rows("docs/results/gpu_h200/model_%s.txt" % prec, "mixer")
        for r in rows:
            if r[0] in ("gma", "sdpa"):
                out.append("| %s | %s | %s | %s | %s |" % (prec, r[0], r[2], r[4], r[5]))
    out += ["", "Whole training step on a 2-core x86_64 CPU, heavily loaded (times loose by a factor of several,",
            "memory exact), from [docs/results/scaling/](results/scaling/) (`model.dat`: N, ms, peak MiB):", ""]
    blocks = {}
    name = None
    for l in read("docs/results/scaling/model.dat").splitlines():
        if l.startswith("# "):
            name = l[2:].strip()
        elif l.strip() and name:
            n, ms, mib = l.split()
            blocks.setdefault(int(n), {})[name] = (float(ms), float(mib))
    mixers = list(dict.fromkeys(m for n in blocks for m in blocks[n]))
    out.append("| N | " + " | ".join(mixers) + " |")
    out.append("|---:|" + "---:|" * len(mixers))
    for n in sorted(blocks):
        out.append("| %dK: ms (peak MiB) | " % (n // 1024) +
                   " | ".join("%.1f (%.1f)" % blocks[n][m] if m in blocks[n] else "-" for m in mixers) + " |")
    return "\n".join(out)


def script_output(page, script, args):
    """the stdout of scripts/SCRIPT ARGS (a table writer run on its committed JSON)"""
    r = subprocess.run([sys.executable, "-B", os.path.join(ROOT, "scripts", script)] + args, cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        raise Bad("%s: %s failed: %s" % (page, script, r.stderr.strip()))
    return r.stdout.rstrip("\n")


def gen_diag_summary():
    """the diagnosis' summary tables, as scripts/routing_diag.py writes them, from its committed JSON"""
    return script_output("docs/results/routing_diag/results.md", "routing_diag.py",
                         ["--summary", "docs/results/routing_diag/results.json"])


def gen_quickstart_table():
    """docs/quickstart.md's table from the JSON of scripts/reproduce_quickstart.sh"""
    return script_output("docs/quickstart.md", "quickstart_table.py", ["table", "docs/results/quickstart/results.json"])


def gen_lra_small():
    """docs/lra.md's small-profile table: reproduce_lra.sh's own table file, as its Markdown"""
    r = subprocess.run(["bash", "-c", '. scripts/lib_reproduce.sh && md_table "$LRA_TXT" /dev/stdout'], cwd=ROOT,
                       env=dict(os.environ, LRA_TXT="docs/results/lra/small.txt"), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise Bad("docs/lra.md: the table of docs/results/lra/small.txt: %s" % (r.stderr.strip() or "empty"))
    return r.stdout.rstrip("\n")


SECTIONS = [
    ("README.md", "test-counts", gen_test_counts),
    ("README.md", "headline", gen_headline),
    ("docs/programs.md", "synopsis", gen_synopsis),
    ("docs/testing.md", "test-map", gen_test_map),
    ("docs/benchmarks.md", "bench-summary", gen_bench_summary),
    ("docs/results/routing_diag/results.md", "diag-summary", gen_diag_summary),
    ("docs/quickstart.md", "quickstart-table", gen_quickstart_table),
    ("docs/lra.md", "lra-small", gen_lra_small),
]


# the JSON of docs/results/cross.md's tables, in the page's order
CROSS_JSON = ["docs/results/cross/%s.json" % n for n in (
    "xmqar_long_seed1", "xmqar_long_seed2", "xmqar_long_seed3", "xmqar_v256_p4_encoders",
    "xmqar_v256_p4_gma_kc64", "xmqar_v256_p16_m64", "xmqar_v256_p4_seed2",
    "xmqar_v256_p4_gma_kc64_seed2", "xmqar_v256", "xmqar_v64", "xmqar_v256_p4", "xmqar_v64_p4")]
RESULT_PAGES = [
    ("docs/results/mqar.md", ["scripts/write_results.sh", "mqar", "docs/results/mqar/results.json"]),
    ("docs/results/cross.md", ["scripts/reproduce_cross.sh", "write"] + CROSS_JSON),
]


def gen_result_page(page, cmd):
    """the page as its writer makes it from the committed JSON: the writer run on a copy"""
    tmp = tempfile.mkdtemp()
    try:
        out = os.path.join(tmp, os.path.basename(page))
        shutil.copyfile(os.path.join(ROOT, page), out)
        r = subprocess.run(cmd + ["--out", out], cwd=ROOT, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, universal_newlines=True)
        if r.returncode != 0:
            raise Bad("%s: %s failed: %s" % (page, " ".join(cmd[:2]), r.stderr.strip()))
        with open(out, encoding="utf-8") as f:
            return f.read()
    finally:
        shutil.rmtree(tmp)


def splice(text, name, body, page):
    a, b = "<!-- gen:%s -->" % name, "<!-- /gen:%s -->" % name
    i, j = text.find(a), text.find(b)
    if i < 0 or j < i:
        raise Bad("%s: no markers %s ... %s" % (page, a, b))
    return text[:i + len(a)] + "\n" + body + "\n" + text[j:]


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        print("usage: scripts/gen_docs.py [--check]", file=sys.stderr)
        return 2
    pages, stale = {}, []
    try:
        for page, cmd in RESULT_PAGES:
            new = gen_result_page(page, cmd)
            if new != read(page):
                stale.append("%s: the page" % page)
            pages[page] = new
        for page, name, fn in SECTIONS:
            text = pages.get(page) or read(page)
            new = splice(text, name, fn(), page)
            if new != text:
                stale.append("%s: section %s" % (page, name))
            pages[page] = new
    except (Bad, OSError, ValueError, KeyError, IndexError) as e:
        print("gen_docs.py: %s" % e, file=sys.stderr)
        return 2
    if check:
        for s in stale:
            print("gen_docs.py: %s is out of date: run scripts/gen_docs.py" % s)
        if not stale:
            print("gen_docs.py: %d generated sections and %d results pages current" % (len(SECTIONS), len(RESULT_PAGES)))
        return 1 if stale else 0
    for page, text in pages.items():
        with open(os.path.join(ROOT, page), "w", encoding="utf-8") as f:
            f.write(text)
    for s in stale:
        print("written: %s" % s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
