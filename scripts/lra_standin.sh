#!/usr/bin/env bash
# lra_standin.sh: stand-in data for every LRA task, at the full shapes and in the real file
# formats, so that each paper-profile config runs through its own loader where the real
# data is not at hand. The contents are random: the stand-ins measure what a run costs
# (time per step, memory), never accuracy.
#
#   scripts/lra_standin.sh DIR [--n N] [--seed S] [--tasks LIST] [--no-pathx]
#
# Writes, under DIR, the part of each task in --tasks (default every task: "listops text
# retrieval image pathfinder32 pathx"; pathfinder is pathfinder32; --no-pathx drops pathx)
# and nothing else (each part skipped when already there):
#   listops/basic_{train,val,test}.tsv   `gmadata generate listops`: 64 / 4 / 4
#                                         expressions of 1,900-2,000 tokens (full length)
#   aclImdb_v1.tar.gz                     aclImdb/{train,test}/{pos,neg}/ID_RATING.txt: per class
#                                         N train reviews (IDs 0..N-1), 2 held out as valid
#                                         (IDs 900, 901), 2 test; each TEXT_LEN (1000) random bytes
#   lra_release/tsv_data/new_aan_pairs.{train,eval,test}.tsv
#                                         2N / 4 / 4 pairs "label id1 id2 b'...' b'...'", each
#                                         document DOC_LEN (4000) random bytes as a bytes literal
#   cifar-10-binary.tar.gz                cifar-10-batches-bin/data_batch_1..5.bin, test_batch.bin:
#                                         N records each of 3,073 bytes (label 0-9, 3,072 pixels)
#   pathfinder32/curv_contour_length_14   `gmadata generate pathfinder --res 32`, 40 images
#   pathfinder128/curv_contour_length_14  the same at --res 128 (Path-X), 40 images (about
#                                         4 minutes on one core; --no-pathx leaves it out)
# Defaults: --n 16 --seed 0. Valid and test are kept small: a run ends by evaluating both
# whole, which a dry run does not want to time. The random text is drawn by awk from --seed (the same bytes on
# one awk); labels alternate so every class occurs. Environment: TEXT_LEN, DOC_LEN, GMADATA
# (default bin/gmadata). Prints one line per part written.
set -euo pipefail
. "$(dirname "$0")/lib_reproduce.sh"
[ "${1:-}" = --help ] || [ "${1:-}" = -h ] && { script_help; exit 0; }
usage="usage: $0 DIR [--n N] [--seed S] [--tasks LIST] [--no-pathx]"
[ $# -ge 1 ] && [ "${1#--}" = "$1" ] || { echo "$usage" >&2; exit 2; }
dir=$1; shift
n=16; seed=0; pathx=1; tasks="listops text retrieval image pathfinder32 pathx"
while [ $# -gt 0 ]; do
  case "$1" in
    --n) need_value "$@"; n="$2"; shift 2;;
    --seed) need_value "$@"; seed="$2"; shift 2;;
    --tasks) need_value "$@"; tasks="$2"; shift 2;;
    --no-pathx) pathx=0; shift;;
    *) unknown_option "$1" "$usage --help";;
  esac
done
case "$n$seed" in *[!0-9]*) echo "$0: --n and --seed take whole numbers" >&2; exit 2;; esac
# want TASK: TASK is one of --tasks
tasks=" $(echo $tasks) "; tasks=${tasks// pathfinder / pathfinder32 }; [ "$pathx" = 1 ] || tasks=${tasks// pathx / }
for t in $tasks; do
  case "$t" in listops|text|retrieval|image|pathfinder32|pathx) ;;
    *) echo "$0: --tasks: unknown task '$t' (listops text retrieval image pathfinder32 pathx)" >&2; exit 2;; esac
done
want() { [[ "$tasks" == *" $1 "* ]]; }
[ "$n" -ge 2 ] || { echo "$0: --n must be at least 2 (valid is the second half of data_batch_5)" >&2; exit 2; }
TEXT_LEN=${TEXT_LEN:-1000}; DOC_LEN=${DOC_LEN:-4000}; GMADATA=${GMADATA:-bin/gmadata}
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.standin.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# random printable text (letters, digits, spaces, punctuation; no backslash or quote, so
# the bytes literal needs no escapes): rtext(len) inside awk
AWK_RTEXT='function rtext(len,   s, i) { s = ""; for (i = 0; i < len; i++) s = s substr(A, 1 + int(rand() * length(A)), 1); return s }
BEGIN { A = "abcdefghijklmnopqrstuvwxyz     ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?-()"; srand(seed) }'

if want listops && [ ! -f "$dir/listops/basic_test.tsv" ]; then
  "$GMADATA" generate listops --out "$dir/listops" --train 64 --valid 4 --test 4 --min-len 1900 --max-len 2000 \
    --seed "$seed" > /dev/null
  echo "lra_standin: $dir/listops (64 / 4 / 4 expressions, 1,900-2,000 tokens)"
fi

if want text && [ ! -f "$dir/aclImdb_v1.tar.gz" ]; then
  mkdir -p "$tmp"/aclImdb/{train,test}/{pos,neg}
  LC_ALL=C awk -v seed="$seed" -v n="$n" -v len="$TEXT_LEN" -v root="$tmp/aclImdb" "$AWK_RTEXT"'
    END {
      for (c = 0; c < 2; c++) {
        cls = c ? "pos" : "neg"
        for (i = 0; i < n; i++) {
          f = root "/train/" cls "/" i "_" (c ? 8 : 2) ".txt"; printf "%s", rtext(len) > f; close(f)
        }
        for (i = 0; i < 2; i++) {
          f = root "/train/" cls "/" (900 + i) "_" (c ? 9 : 1) ".txt"; printf "%s", rtext(len) > f; close(f)
          f = root "/test/" cls "/" i "_" (c ? 7 : 3) ".txt"; printf "%s", rtext(len) > f; close(f)
        }
      }
    }' < /dev/null
  tar -C "$tmp" -czf "$tmp/imdb.tar.gz" aclImdb
  mv "$tmp/imdb.tar.gz" "$dir/aclImdb_v1.tar.gz"
  echo "lra_standin: $dir/aclImdb_v1.tar.gz ($((2 * n)) train, 4 valid, 4 test reviews of $TEXT_LEN bytes)"
fi

if want retrieval && [ ! -f "$dir/lra_release/tsv_data/new_aan_pairs.test.tsv" ]; then
  mkdir -p "$tmp/tsv_data"
  LC_ALL=C awk -v seed="$seed" -v n="$n" -v len="$DOC_LEN" -v out="$tmp/tsv_data" "$AWK_RTEXT"'
    END {
      split("train eval test", name, " "); count[1] = 2 * n; count[2] = 4; count[3] = 4
      for (s = 1; s <= 3; s++) {
        f = out "/new_aan_pairs." name[s] ".tsv"
        for (i = 0; i < count[s]; i++)
          printf "%d\t%d\t%d\tb'"'"'%s'"'"'\tb'"'"'%s'"'"'\n", i % 2, 2 * i, 2 * i + 1, rtext(len), rtext(len) > f
        close(f)
      }
    }' < /dev/null
  mkdir -p "$dir/lra_release"
  rm -rf "$dir/lra_release/tsv_data"
  mv "$tmp/tsv_data" "$dir/lra_release/tsv_data"
  echo "lra_standin: $dir/lra_release/tsv_data ($((2 * n)) / 4 / 4 pairs of $DOC_LEN-byte documents)"
fi

if want image && [ ! -f "$dir/cifar-10-binary.tar.gz" ]; then
  mkdir -p "$tmp/cifar-10-batches-bin"
  LC_ALL=C awk -v seed="$seed" -v n="$n" -v out="$tmp/cifar-10-batches-bin" '
    BEGIN {
      srand(seed)
      split("data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch", name, " ")
      for (k = 1; k <= 6; k++) {
        f = out "/" name[k] ".bin"
        for (r = 0; r < n; r++) {
          printf "%c", r % 10 > f
          for (p = 0; p < 3072; p++) printf "%c", int(rand() * 256) > f
        }
        close(f)
      }
    }'
  tar -C "$tmp" -czf "$tmp/cifar.tar.gz" cifar-10-batches-bin
  mv "$tmp/cifar.tar.gz" "$dir/cifar-10-binary.tar.gz"
  echo "lra_standin: $dir/cifar-10-binary.tar.gz ($n records in each of the six batches)"
fi

pf() { # pf RES: 40 hard images at RES x RES
  if [ ! -f "$dir/pathfinder$1/curv_contour_length_14/metadata/0.npy" ]; then
    "$GMADATA" generate pathfinder --out "$tmp/pathfinder$1" --res "$1" --difficulty hard --n 40 --seed "$seed" > /dev/null
    mkdir -p "$dir/pathfinder$1"
    rm -rf "$dir/pathfinder$1/curv_contour_length_14"
    mv "$tmp/pathfinder$1/curv_contour_length_14" "$dir/pathfinder$1/"
    echo "lra_standin: $dir/pathfinder$1/curv_contour_length_14 (40 images, $1 x $1)"
  fi
}
want pathfinder32 && pf 32
want pathx && pf 128
exit 0
