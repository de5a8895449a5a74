#!/usr/bin/env bash
# quickstart.sh: train and evaluate the embedded default (configs/quickstart.json: a
# 2-layer GMA model on the multi-query associative recall task, no download), then print
# the test result. Each call writes a new run directory runs/quickstart[-N].
set -euo pipefail
cd "$(dirname "$0")/.."
out=runs/quickstart
n=1
while [ -e "$out" ]; do n=$((n + 1)); out="runs/quickstart-$n"; done
echo "== training configs/quickstart.json into $out"
bin/gmatrain --config configs/quickstart.json --out "$out"
echo "== evaluating $out/latest on the held-out test split"
bin/gmaeval --checkpoint "$out" --data test --json "$out/eval_test.json"
echo "== read the accuracy against the two rules printed above, which match no key (chance, 1/32, is no"
echo "   yardstick: docs/quickstart.md); the figures with every digit are in $out/eval_test.json"
