#!/usr/bin/env bash
# config_key_files.sh: for every key of the generated configuration reference (the table of
# docs/config.md between <!-- config-reference --> and <!-- /config-reference -->), the number of
# files under src/ that mention it, and a histogram of those numbers. A source and its header
# (model/model.c, model/model.h) count as one file, as a room of farm-studio's plan.
#
# A file mentions a dotted key "model.pos" when it holds the text model.pos as a word (the
# schema row, a message, or a read through Config: c->model.pos); a stored section's key
# "gma.chunk" is then found only where its name is written (its owner reads the field of its
# own struct) and where its row {"chunk", CFGT_...} stands. A top-level key "seed" is mentioned by "seed" in quotes or by a read
# c->seed / cfg.seed / conf.seed / config->seed. A read through a pointer to the struct
# (mc = &c->model; mc->pos) is seen too. Approximate by design (comments count, a read
# through a section's accessor in another file does not): a guide, not an exact figure.
#
#   scripts/config_key_files.sh            histogram: files -> keys
#   scripts/config_key_files.sh --keys     one line per key: files key [file ...]
set -euo pipefail
cd "$(dirname "$0")/.."
keys=$(awk '/<!-- config-reference -->/ {on = 1; next} /<!-- \/config-reference -->/ {on = 0}
  on && /^\| `/ { split($0, f, "`"); print f[2] }' docs/config.md)
[ -n "$keys" ] || { echo "config_key_files.sh: no config reference table in docs/config.md" >&2; exit 2; }
files() {
  local k=$1 re
  if [[ $k == *.* ]]; then
    re="\\b${k//./\\.}\\b|\\{\"${k#*.}\", CFGT_"
  else
    re="\"$k\"|\\b(c|cfg|conf|config)(->|\\.)$k\\b"
  fi
  { grep -rlE --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' "$re" src
    aliased "$k"; } | sed 's/\.[a-z]*$//' | sort -u
}
# the files that read model.X, train.X or data.X through a pointer to its struct
# (const ModelCfg *mc = &c->model; ... mc->X)
aliased() {
  local sec=${1%%.*} field=${1#*.} type f v
  case $sec in model) type=ModelCfg ;; train) type=TrainCfg ;; data) type=DataCfg ;; *) return 0 ;; esac
  for f in $(grep -rlE "$type \*[a-z_]+ = " src); do
    for v in $(grep -ohE "$type \*[a-z_]+ = " "$f" | sed -E 's/.*\*([a-z_]+) = /\1/' | sort -u); do
      grep -qE "\b$v->$field\b" "$f" && { echo "$f"; break; }
    done
  done
  return 0
}
if [ "${1:-}" = --keys ]; then
  for k in $keys; do f=$(files "$k"); echo "$(printf '%s\n' "$f" | grep -c .) $k" $f; done
  exit 0
fi
for k in $keys; do files "$k" | grep -c . || true; done | sort -n | uniq -c |
  awk '{ printf "%3d keys in %d file(s)\n", $1, $2; n += $1 } END { printf "%3d keys\n", n }'
