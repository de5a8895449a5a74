#!/usr/bin/env python3
"""quickstart_table.py: the table of docs/quickstart.md (scripts/reproduce_quickstart.sh).

  scripts/quickstart_table.py collect OUT.json COMMAND [VARIANT SEED SETS TEST.json]...
      OUT.json from gmaeval's --json of each run: the test accuracy over all queries and at
      the first query, and the two key-blind rules' scores (gmaeval's "recall" block)
  scripts/quickstart_table.py table RESULTS.json
      the Markdown table and the rules' line (scripts/gen_docs.py puts them in
      docs/quickstart.md between <!-- gen:quickstart-table --> markers)
"""
import json
import sys

from results_common import write

ME = "scripts/quickstart_table.py"


def die(msg):
    sys.exit("%s: %s" % (ME, msg))


def collect(out, command, args):
    if len(args) % 4:
        die("collect: VARIANT SEED SETS TEST.json come in fours")
    runs = []
    for i in range(0, len(args), 4):
        v, seed, sets, path = args[i:i + 4]
        try:
            with open(path) as f:
                t = json.load(f)
            rc = t["recall"]
            q1 = rc["by_query"][0]
            runs.append({"variant": v, "seed": int(seed), "sets": sets.split(), "test_acc": t["acc"],
                         "first_query_acc": q1["acc"], "rule_most_frequent": rc["most_frequent"],
                         "rule_not_yet_answered": rc["most_frequent_unanswered"],
                         "rule_first_query": q1["most_frequent"]})
        except OSError as e:
            die("%s: %s" % (path, e.strerror))
        except (ValueError, KeyError, IndexError, TypeError) as e:
            die("%s: not gmaeval --json of the recall task (%s)" % (path, e))
    write(out, json.dumps({"command": command, "config": "configs/quickstart.json", "runs": runs}, indent=1) + "\n")


def cell(xs):
    m = sum(xs) / len(xs)
    return "%.3f" % m if len(xs) == 1 else "%.3f (%.3f-%.3f)" % (m, min(xs), max(xs))


def table(path):
    try:
        with open(path) as f:
            res = json.load(f)
        runs = res["runs"]
        order, by = [], {}
        for r in runs:
            if r["variant"] not in by:
                order.append(r["variant"])
            by.setdefault(r["variant"], []).append(r)
        seeds = sorted({r["seed"] for r in runs})
        L = ["Command: `%s` (%s, each run then `bin/gmaeval --data test --json`); seed%s %s." % (
            res["command"], res["config"], "s" if len(seeds) > 1 else "", ", ".join(map(str, seeds))), "",
            "| variant | changes to `configs/quickstart.json` | test acc | 1st query |", "|---|---|---|---|"]
        for v in order:
            rs = by[v]
            ch = ", ".join("`%s`" % s for s in rs[0]["sets"]) or "none"
            L.append("| %s | %s | %s | %s |" % (v, ch, cell([r["test_acc"] for r in rs]),
                                                cell([r["first_query_acc"] for r in rs])))
        r0 = runs[0]
        L += ["", "The key-blind rules (the same test split for every run): at the first query %.3f (both), over all "
              "queries %.3f (most frequent value) and %.3f (most frequent not yet answered)." % (
                  r0["rule_first_query"], r0["rule_most_frequent"], r0["rule_not_yet_answered"])]
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    except (ValueError, KeyError, IndexError, TypeError) as e:
        die("%s: not a results.json of scripts/reproduce_quickstart.sh (%s)" % (path, e))
    print("\n".join(L))


def main(argv):
    if len(argv) >= 2 and argv[0] == "collect" and len(argv) >= 3:
        collect(argv[1], argv[2], argv[3:])
    elif len(argv) == 2 and argv[0] == "table":
        table(argv[1])
    else:
        die("usage: collect OUT.json COMMAND [VARIANT SEED SETS TEST.json]... | table RESULTS.json")


main(sys.argv[1:])
