#!/usr/bin/env bash
# sotu_split.sh: a State of the Union split with more than two speeches per evaluation split.
# Reads the corpus (SOTU=DIR, no default: one speech per line, a blank line between
# speeches, year order over DIR/train.txt, valid.txt, test.txt) and writes OUT (default
# data/sotu8) with train.txt, valid.txt, test.txt in the same layout: the last NTEST (8)
# speeches are the test split, the NVALID (8) before them the valid split, all earlier ones
# train. Prints one line per split (speeches, words, years). Deterministic; does nothing when
# OUT/test.txt exists.
#   scripts/sotu_split.sh [OUT]
# Environment: SOTU=DIR (needed unless OUT is there; unset or incomplete: one line, exit 2),
# NVALID=N, NTEST=N.
set -euo pipefail
case "${SOTU:-}" in ''|/*) ;; *) SOTU=$PWD/$SOTU;; esac # relative: from where the script was started
cd "$(dirname "$0")/.."
OUT=${1:-data/sotu8}
NVALID=${NVALID:-8}; NTEST=${NTEST:-8}
[ -f "$OUT/test.txt" ] && exit 0
[ -n "${SOTU:-}" ] || { echo "$0: no State of the Union corpus: set SOTU=DIR (or --sotu DIR), the folder of its train.txt, valid.txt, test.txt" >&2; exit 2; }
for f in train valid test; do
  [ -f "$SOTU/$f.txt" ] || { echo "$0: $SOTU/$f.txt: missing (SOTU=DIR or --sotu DIR: the folder of train.txt, valid.txt, test.txt)" >&2; exit 2; }
done
mkdir -p "$OUT"
tmp="$OUT/.split.$$"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp"
# one speech per line, year order; empty lines are the separators
cat "$SOTU/train.txt" "$SOTU/valid.txt" "$SOTU/test.txt" | grep -v '^$' > "$tmp/all" || true
n=$(wc -l < "$tmp/all")
ntrain=$((n - NVALID - NTEST))
[ "$ntrain" -gt 0 ] || { echo "$0: $SOTU: only $n speeches, need more than $((NVALID + NTEST))" >&2; exit 1; }
split_to() { sed -n "$1,$2p" "$tmp/all" | sed '$!G' > "$tmp/$3.txt"; }
split_to 1 "$ntrain" train
split_to $((ntrain + 1)) $((ntrain + NVALID)) valid
split_to $((ntrain + NVALID + 1)) "$n" test
mv "$tmp/train.txt" "$tmp/valid.txt" "$OUT/"
mv "$tmp/test.txt" "$OUT/"
years() { [ -f "$SOTU/manifest.tsv" ] && awk -F'\t' -v a="$1" -v b="$2" 'NR==a{f=$2} NR==b{l=$2} END{printf " (%s-%s)", f, l}' "$SOTU/manifest.tsv"; }
first=1
for s in train valid test; do
  k=$(grep -vc '^$' "$OUT/$s.txt"); w=$(wc -w < "$OUT/$s.txt")
  echo "$OUT/$s.txt: $k speeches, $w words$(years $first $((first + k - 1)))"
  first=$((first + k))
done
