"""future_results.py: the command line of scripts/write_future_results.sh (see its --help)."""
from future_common import *
from future_section import section, sub_section
from future_part import part, put_part
from results_common import read_page, write

def main(argv):
    paths, out, notes, i, title = [], "docs/results/future.md", [], 0, None
    while i < len(argv):
        a = argv[i]
        if a in ("--out", "--note", "--part"):
            if i + 1 >= len(argv): die("%s needs a value (see --help)" % a)
            if a == "--out": out = argv[i + 1]
            elif a == "--part": title = argv[i + 1]
            else: notes.append(argv[i + 1])
            i += 2; continue
        if a.startswith("--"): die("unknown option %s (see --help)" % a)
        paths.append(a); i += 1
    if not paths:
        c = sorted(glob.glob("runs/future-*.json"))
        if not c: die("no runs/future-*.json (run scripts/reproduce_future.sh first)")
        paths = [c[-1]]
    docs, mpaths, lpaths, ldocs = [], [], [], []
    for path in paths:
        try:
            d = json.load(open(path))
        except (OSError, ValueError) as e:
            die("%s: %s" % (path, e))
        if not isinstance(d, dict) or "runs" not in d or "steps" not in d or "threads" not in d:
            die("%s: not a reproduce_future.sh JSON (fields runs, steps, threads)" % path)
        if any("long_len" in r for r in d["runs"]):
            lpaths.append(path); ldocs.append(d)
        d = dict(d, runs=[r for r in d["runs"] if "long_len" not in r])
        if d["runs"]: docs.append(d); mpaths.append(path)
    old = read_page(out) or ""
    page, mnotes = old, [] if ldocs else notes
    if docs and title:
        page = put_part(page, part(docs, mpaths, mnotes, title), title)
    elif docs:
        # the main table is rewritten; the section's "### " parts are kept
        at = ("\n" + page).find("\n" + HEAD)  # where the heading starts (also at the page's start)
        sec, before = (page[at:], page[:at]) if at >= 0 else ("", page)
        sa = sec.find("\n### ")
        kept = sec[sa:].rstrip("\n") if sa >= 0 else ""
        before = before.rstrip("\n") + "\n\n" if before.strip() else ""
        page = before + section(docs, mpaths, mnotes).rstrip("\n") + kept + "\n"
    if ldocs:
        if page.find("\n" + HEAD) < 0 and not page.startswith(HEAD):
            page = page.rstrip("\n") + "\n\n" + HEAD + "\n"
        page = put_part(page, sub_section(ldocs, lpaths, notes).rstrip("\n") + "\n", SUB[4:])
    write(out, page.lstrip("\n") if not old else page)
    print("%s: wrote %s" % (ME, out))

main(sys.argv[1:])
