"""cross_common.py: what the results of scripts/reproduce_cross.sh share: the kinds, their labels, errors, numbers."""
import json, os, platform, sys, time

ME = "scripts/reproduce_cross.sh"
HEAD = "## Cross-attention"
KINDS = ("gma", "sdpa", "gma_causal", "sdpa_causal", "gma_sdpaenc", "sdpa_gmaenc", "none")
LABEL = {"none": "none (decoder over the window)", "gma_causal": "gma, causal encoder", "sdpa_causal": "sdpa, causal encoder",
         "gma_sdpaenc": "gma cross, causal sdpa encoder", "sdpa_gmaenc": "sdpa cross, causal gma encoder"}

def die(msg, code=1):
    sys.stderr.write(ME + ": " + msg + "\n")
    sys.exit(code)

def value(args, i):
    if i + 1 >= len(args): die(args[i] + " needs a value (see --help)", 2)
    return args[i + 1]

def fmt(x, p=3): return "n/a" if x is None else ("%.*f" % (p, x))

