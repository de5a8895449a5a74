#!/usr/bin/env bash
# quickstart.sh: train and evaluate the embedded default (configs/quickstart.json: a
# 2-layer GMA model on the multi-query associative recall task, no download), then print
# the test result and what to expect of it. Each call writes a new run directory
# runs/quickstart[-N]. GMA_BIN: the programs' folder (default bin; the tests use stand-ins).
set -euo pipefail
cd "$(dirname "$0")/.."
out=runs/quickstart
n=1
while [ -e "$out" ]; do n=$((n + 1)); out="runs/quickstart-$n"; done
echo "== training configs/quickstart.json into $out"
"${GMA_BIN:-bin}"/gmatrain --config configs/quickstart.json --out "$out"
echo "== evaluating $out/latest on the held-out test split"
"${GMA_BIN:-bin}"/gmaeval --checkpoint "$out" --data test --json "$out/eval_test.json"
echo "== what to expect: at the first query, where no answer can be ruled out, an accuracy well above both rules"
echo "   printed above (most frequent value, most frequent not yet answered): the model matches keys; over all"
echo "   queries above both too, short of softmax attention's 1.0 (docs/quickstart.md; chance, 1/32, is no yardstick)."
echo "   Every digit is in $out/eval_test.json"
