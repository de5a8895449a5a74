#!/usr/bin/env bash
# write_future_results.sh: the section "## Future work: per-layer K, adaptive K, gated
# hybrid" of docs/results/future.md from the JSON of scripts/reproduce_future.sh (python3,
# standard library only).
#   scripts/write_future_results.sh [FILE.json]... [--out FILE] [--note TEXT]... [--part TITLE]
#       FILE.json: one or more (their runs in order, each with its own steps); default the
#       newest runs/future-*.json; --out: default docs/results/future.md.
#       The section replaces the file's own from its heading to the end (else it is
#       appended); scripts/write_results.sh keeps it when it rewrites the page. Each
#       --note TEXT a paragraph after the generated one.
#       --part TITLE: instead, a subsection "### TITLE" of that section (replacing its own,
#       up to the next heading, else added at the end): the runs' table with the K per
#       layer at the start and the end, their commands (data and overrides in them), and a
#       paragraph comparing every variant with fixed K 256 and K 32 (the adaptive-K runs
#       of scripts/reproduce_future.sh --variants "gma32 gma64 gma256 kad256 kdir256").
# The table: per variant the mixers, K per GMA layer at the start and the end (the
# Dirichlet prior's last "components" rows), valid and test ppl, training tokens/s,
# parameters; the gated layers' gates; then one paragraph comparing each variant with
# gma K 32 (the config) and sdpa, from the numbers.
# Runs with a long window (reproduce_future.sh's gma_np, sdpa_np, auto_np, auto_distill:
# field long_len) go to their own subsection "### auto with both paths trained" at the
# section's end instead: ppl at the training length and at long_len, tokens/s, the gap
# between auto's two paths (gmaeval --analyze) at both lengths, one paragraph from the
# numbers. Each part is rewritten only when the inputs hold runs of it; the other is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in --help|-h) sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0;; esac
command -v python3 > /dev/null || { echo "$0: python3 not found (apt-get install python3)" >&2; exit 1; }
exec python3 -B scripts/future_results.py "$@"  # scripts/future_*.py
