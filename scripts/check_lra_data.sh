#!/usr/bin/env bash
# check_lra_data.sh: end-to-end check of the classification loaders on real data.
#
# Loads the three splits of the SpamAssassin corpus (SPAM_DIR=DIR, no default: the folder of
# its {train,valid,test}.tsv.gz; docs/lra.md) with the generic "tsv" task and checks the
# counts and label balance published with that split (train 4836 = 3320 ham + 1516 spam, valid and test 605 = 415 +
# 190) and the number of messages longer than 4096 bytes (truncated at max_len 4096:
# 1798 / 205 / 222). Then generates a small ListOps set through lra_generate_main and
# loads it back. Needs `make` first (links build/libgmacli.a and build/libgma.a). Exits non-zero on a mismatch.
set -euo pipefail
case "${SPAM_DIR:-}" in ''|/*) ;; *) SPAM_DIR=$PWD/$SPAM_DIR;; esac # relative: from the start directory
cd "$(dirname "$0")/.."
[ -n "${SPAM_DIR:-}" ] || { echo "check_lra_data: set SPAM_DIR=DIR, the folder of the SpamAssassin split's {train,valid,test}.tsv.gz (docs/lra.md)" >&2; exit 2; }
[ -d "$SPAM_DIR" ] || { echo "check_lra_data: SPAM_DIR=$SPAM_DIR: no such directory" >&2; exit 2; }
for lib in build/libgmacli.a build/libgma.a; do
  [ -f $lib ] || { echo "check_lra_data: $lib missing: run make first"; exit 1; }
done
mkdir -p build/scripts
cat > build/scripts/check_lra_data.c <<'C'
/* check_lra_data.c: written by scripts/check_lra_data.sh; prints one summary line. */
#include "core/common.h"
#include "data/cls/clsdata.h"
#include "cli/args/lra_generate.h"
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "generate") == 0) return lra_generate_main(argc - 1, argv + 1);
    if (argc < 4) return fprintf(stderr, "usage: check_lra_data TASK PATH SPLIT [max_len] [strip]\n"), 2;
    ClsOptions o = clsdata_default_options();
    if (argc > 4) o.max_len = atoi(argv[4]);
    if (argc > 5) o.strip_headers = atoi(argv[5]);
    ClsDataset d;
    double t0 = gma_now();
    if (clsdata_load(&d, argv[1], argv[2], argv[3], &o) < 0) {
        fprintf(stderr, "check_lra_data: %s\n", gma_error());
        return 1;
    }
    long count[16] = {0};
    for (int i = 0; i < d.n; i++) count[d.label[i] & 15]++;
    printf("n=%d classes=%d labels=", d.n, d.n_classes);
    for (int k = 0; k < d.n_classes && k < 16; k++) printf(k ? ",%ld" : "%ld", count[k]);
    printf(" tokens=%llu truncated=%ld vocab=%u seconds=%.2f\n",
           (unsigned long long)d.off[(size_t)d.n * d.n_seq], d.truncated, d.vocab, gma_now() - t0);
    clsdata_free(&d);
    return 0;
}
C
CC=${CC:-gcc}
$CC -O2 -std=c11 -D_GNU_SOURCE -Isrc build/scripts/check_lra_data.c build/libgmacli.a build/libgma.a \
    $(pkg-config --libs libcjson zlib 2>/dev/null || echo -lcjson -lz) -fopenmp -lm -o build/scripts/check_lra_data
bin=build/scripts/check_lra_data
fail=0
expect() { # expect WHAT GOT WANT
  if [ "$2" = "$3" ]; then echo "ok   $1: $2"; else echo "FAIL $1: got '$2', want '$3'"; fail=1; fi
}
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
for split in train valid test; do
  case $split in
    train) want_n=4836; want_lab=3320,1516; want_tr=1798 ;;
    valid) want_n=605;  want_lab=415,190;   want_tr=205 ;;
    test)  want_n=605;  want_lab=415,190;   want_tr=222 ;;
  esac
  out=$($bin tsv "$SPAM_DIR" $split 4096)
  echo "spam $split: $out"
  expect "spam $split examples" "$(field "$out" n)" $want_n
  expect "spam $split ham,spam" "$(field "$out" labels)" $want_lab
  expect "spam $split truncated at 4096" "$(field "$out" truncated)" $want_tr
  out=$($bin tsv "$SPAM_DIR" $split 4096 1)
  echo "spam $split, headers stripped: $out"
  expect "spam $split examples (stripped)" "$(field "$out" n)" $want_n
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
$bin generate listops --out "$tmp/listops" --train 2000 --valid 100 --test 100 --seed 1
for split in train valid test; do
  out=$($bin listops "$tmp/listops" $split)
  echo "listops $split: $out"
done
expect "listops train examples" "$(field "$($bin listops "$tmp/listops" train)" n)" 2000
[ $fail -eq 0 ] && echo "check_lra_data: all ok" || echo "check_lra_data: FAILED"
exit $fail
