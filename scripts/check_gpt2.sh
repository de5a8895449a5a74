#!/usr/bin/env bash
# check_gpt2.sh: compare bin/gmadata's gpt2 encoder with reference GPT-2 ids (tiktoken
# 'gpt2'), using the real tokenizer files. Optional: needs a directory holding
# encoder.json, vocab.bpe and pairs TEXT.txt / TEXT.ids (little-endian uint32 ids), given
# as DIR or GPT2_REF=DIR (no default; wikitext2_valid.ids is matched to
# DIR/../wikitext2-eval/valid.txt). Each text is encoded single-threaded and with 2
# threads; every id must match. Exit status 0 only if all match.
#   scripts/check_gpt2.sh [DIR]
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
ref=${1:-${GPT2_REF:-}}
[ -n "$ref" ] || { echo "check_gpt2: no reference directory: scripts/check_gpt2.sh DIR (or GPT2_REF=DIR), DIR holding encoder.json, vocab.bpe and TEXT.txt / TEXT.ids pairs"; exit 2; }
bin=$here/bin/gmadata
[ -x "$bin" ] || { echo "check_gpt2: build first (make)"; exit 2; }
[ -f "$ref/encoder.json" ] || { echo "check_gpt2: no encoder.json in $ref"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; checked=0
for ids in "$ref"/*.ids; do
  name=$(basename "$ids" .ids)
  txt="$ref/$name.txt"
  [ "$name" = wikitext2_valid ] && txt="$ref/../wikitext2-eval/valid.txt"
  [ -f "$txt" ] || { echo "skip $name: no text"; continue; }
  od -An -tu4 -v "$ids" | tr -s ' \n' '\n\n' | grep -v '^$' > "$tmp/ref"
  for th in 1 2; do
    "$bin" encode --tokenizer gpt2 --vocab "$ref" --threads $th "$txt" | tr ' ' '\n' | grep -v '^$' > "$tmp/got" || { echo "FAIL $name: encode failed"; fail=1; continue; }
    n=$(wc -l < "$tmp/ref")
    if cmp -s "$tmp/ref" "$tmp/got"; then
      echo "ok   $name ($n ids, $th thread(s))"
    else
      first=$(diff <(cat -n "$tmp/ref") <(cat -n "$tmp/got") | head -3 | tr '\n' ' ')
      echo "FAIL $name ($th thread(s)): $(wc -l < "$tmp/got") ids vs $n; first difference: $first"; fail=1
    fi
    checked=$((checked + 1))
  done
done
[ $checked -gt 0 ] || { echo "check_gpt2: no reference ids found in $ref"; exit 2; }
[ $fail -eq 0 ] && echo "check_gpt2: all ids match" || echo "check_gpt2: MISMATCH"
exit $fail
