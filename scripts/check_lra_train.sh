#!/usr/bin/env bash
# check_lra_train.sh: train the small spam classifier profile (configs/small_spam_gma.json,
# the generic TSV loader on the SpamAssassin corpus) on real data and report the test
# accuracy of its best-validation checkpoint, checked again with gmaeval.
#
#   scripts/check_lra_train.sh [extra gmatrain options, e.g. --set train.steps=100]
#
# Data: data/spam (a link to ../shared/data/spam or $SPAM_DIR is made when missing).
# Needs `make` first. Prints the summary line; exits non-zero when training fails or the
# accuracy does not beat the majority class (ham, 415 of 605 test messages = 0.686).
set -euo pipefail
cd "$(dirname "$0")/.."
SPAM_DIR=${SPAM_DIR:-../shared/data/spam}
[ -d "$SPAM_DIR" ] || SPAM_DIR=/work/shared/data/spam
[ -x bin/gmatrain ] || { echo "check_lra_train: bin/gmatrain missing: run make first"; exit 1; }
if [ ! -e data/spam ]; then ln -s "$(cd "$SPAM_DIR" && pwd)" data/spam; fi
RUN=${RUN:-runs/check_lra_train}
rm -rf "$RUN"
t0=$(date +%s)
bin/gmatrain --config configs/small_spam_gma.json --out "$RUN" "$@"
t1=$(date +%s)
bin/gmaeval --checkpoint "$RUN/best" --data test --json "$RUN/eval_test_best.json"
acc=$(python3 -c "import json;print(json.load(open('$RUN/summary.json'))['test_acc_at_best'])")
vacc=$(python3 -c "import json;print(json.load(open('$RUN/summary.json'))['best_valid_acc'])")
echo "check_lra_train: spam (tsv) gma: best valid acc $vacc, test acc at best $acc, train+eval $((t1 - t0)) s"
python3 -c "import sys; sys.exit(0 if $acc > 0.686 else 1)" || { echo "check_lra_train: no better than the majority class"; exit 1; }
