"""longctx_collect.py: ROWS RESULTS.json ...: the results.json of scripts/reproduce_longctx.sh from its runs' test_N.json, merged with an earlier one."""
import json, os, sys, time
rows, dst, tests, T, pktests, pkT, profile, pos, steps, cmd, machine, minutes = sys.argv[1:]
tests = [int(x) for x in tests.split()]
pktests = [int(x) for x in pktests.split()]
runs = []
for line in open(rows):
    task, mixer, seed, run, mins = line.split()
    by = {}
    for N in (pktests if task == "passkey" else tests):
        with open("%s/test_%d.json" % (run, N)) as f:
            j = json.load(f)
        e = {"loss": j["loss"], "ppl": j["ppl"], "acc": j["acc"], "tokens": j["tokens"]}
        if "passkey" in j:
            e.update(exact=j["passkey"]["exact"], digit=j["passkey"]["digit"], by_depth=j["passkey"]["by_depth"])
        if "position_buckets" in j:
            e["buckets"] = j["position_buckets"]["buckets"]
        by[str(N)] = e
    runs.append({"task": task, "mixer": mixer, "seed": int(seed), "run": run, "minutes": float(mins), "by_length": by})
# merged with the rows of an earlier results.json there: a row a run (by its folder's name),
# this call's row for a run it has, the earlier rows of the other runs kept before them
try:
    with open(dst) as f:
        old = json.load(f)["runs"]
except (OSError, ValueError, KeyError, TypeError):
    old = []
mine = {os.path.basename(r["run"]) for r in runs}
runs = [r for r in old if isinstance(r, dict) and os.path.basename(str(r.get("run"))) not in mine] + runs
try:
    pk = json.load(open("configs/passkey.json"))["data"]
    pkd = "%d digits, vocabulary %d, filler \"%s\", depth uniform in [%g, %g]" % (pk["passkey_digits"], pk["passkey_vocab"],
          pk["passkey_filler"], pk["passkey_depth_min"], pk["passkey_depth_max"])
except (OSError, ValueError, KeyError):
    pkd = ""
out = {"command": cmd, "date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine, "minutes": int(minutes),
       "profile": profile, "pos": pos, "steps": {"passkey": int(steps.split()[0]), "lm": int(steps.split()[1])}, "train_len": int(T), "test_lengths": tests,
       "passkey_train_len": int(pkT), "passkey_test_lengths": pktests, "passkey": pkd,
       "runs": runs}
with open(dst, "w") as f:
    json.dump(out, f, indent=1)
print("results: %s (%s minutes)" % (dst, minutes))
