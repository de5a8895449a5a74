#!/usr/bin/env bash
# check_lra_train.sh: train a small classifier profile on CPU and report the test accuracy
# of its best-validation checkpoint, checked again with gmaeval.
#
#   scripts/check_lra_train.sh [spam|listops|pathfinder] [extra gmatrain options, e.g. --set train.steps=100]
#
# spam (default): configs/small_spam_gma.json, the generic TSV loader on the SpamAssassin
#   corpus in data/spam (a link to SPAM_DIR=DIR, the folder of its {train,valid,test}.tsv.gz,
#   is made when data/spam is missing; docs/lra.md); must beat the majority class (ham, 415 of 605 test messages = 0.686).
# listops: configs/small_lra_listops_gma.json on a small generated ListOps set in
#   data/listops_small (generated when missing: 2000/200/200 expressions of 20-256 tokens,
#   depth <= 6); must beat the most frequent value's share (0.25 is a generous bound).
# pathfinder: configs/small_lra_pathfinder_stem.json on easy Pathfinder-32 in
#   data/pathfinder32_100k (generated when missing: 100,000 images of seed 7, split 80,000 /
#   10,000 / 10,000 as the release does; about a minute on 2 cores): a gma block of width 32
#   behind a convolutional stem (model.stem, 7 dilated 3 x 3 convolutions with batch norm),
#   the embedding started as a ramp of the grey level (model.embed_init), max pooling, batch
#   64, lr 1e-3, 1500 steps (96,000 images); must reach 0.6 (chance is 0.5; docs/lra.md,
#   "CPU check"). The sequence models without the stem stay at chance on this budget.
# Needs `make` first. Prints one summary line; exits non-zero when training fails or the
# accuracy is not above the bound.
set -euo pipefail
case "${SPAM_DIR:-}" in ''|/*) ;; *) SPAM_DIR=$PWD/$SPAM_DIR;; esac # relative: from the start directory
cd "$(dirname "$0")/.."
[ -x bin/gmatrain ] || { echo "check_lra_train: bin/gmatrain missing: run make first"; exit 1; }
what=spam
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then what=$1; shift; fi
case "$what" in
spam)
    if [ ! -e data/spam ]; then
      [ -d "${SPAM_DIR:-}" ] || { echo "check_lra_train: no data/spam: set SPAM_DIR=DIR, the folder of the SpamAssassin split's {train,valid,test}.tsv.gz (docs/lra.md)" >&2; exit 2; }
      ln -s "$(cd "$SPAM_DIR" && pwd)" data/spam
    fi
    config=configs/small_spam_gma.json bound=0.686 ;;
listops)
    [ -f data/listops_small/basic_test.tsv ] || bin/gmadata generate listops --out data/listops_small --train 2000 \
        --valid 200 --test 200 --min-len 20 --max-len 256 --max-depth 6
    config=configs/small_lra_listops_gma.json bound=0.25 ;;
pathfinder)
    [ -f data/pathfinder32_100k/curv_baseline/metadata/99.npy ] || bin/gmadata generate pathfinder \
        --out data/pathfinder32_100k --res 32 --difficulty easy --n 100000 --seed 7
    config=configs/small_lra_pathfinder_stem.json bound=0.6 ;;
*) echo "check_lra_train: unknown profile $what (spam, listops or pathfinder)"; exit 2 ;;
esac
RUN=${RUN:-runs/check_lra_train_$what}
rm -rf "$RUN"
t0=$(date +%s)
bin/gmatrain --config "$config" --out "$RUN" "$@"
t1=$(date +%s)
bin/gmaeval --checkpoint "$RUN/best" --data test --json "$RUN/eval_test_best.json"
acc=$(python3 -c "import json;print(json.load(open('$RUN/summary.json'))['test_acc_at_best'])")
vacc=$(python3 -c "import json;print(json.load(open('$RUN/summary.json'))['best_valid_acc'])")
echo "check_lra_train: $what ($config): best valid acc $vacc, test acc at best $acc, train+eval $((t1 - t0)) s"
python3 -c "import sys; sys.exit(0 if $acc > $bound else 1)" || { echo "check_lra_train: not above $bound"; exit 1; }
