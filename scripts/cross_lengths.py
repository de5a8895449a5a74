"""cross_lengths.py: the arithmetic of scripts/reproduce_cross.sh lengths.
  seconds FILE.json             prints the evaluation's "seconds"
  over LAST_S N LAST_W MAX_S    exit 0 when LAST_S x 4.5 x N / LAST_W passes MAX_S (the next length skipped)"""
import json, sys

if sys.argv[1] == "seconds":
    print(json.load(open(sys.argv[2]))["seconds"])
elif sys.argv[1] == "over":
    last_s, n, last_w, maxs = (float(x) for x in sys.argv[2:6])
    sys.exit(0 if last_s * 4.5 * n / last_w > maxs else 1)
else:
    sys.exit("cross_lengths.py: unknown command " + sys.argv[1])
