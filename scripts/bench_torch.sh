#!/usr/bin/env bash
# bench_torch.sh: the PyTorch peer in the benchmark table. For each mixer, the same model
# in PyTorch eager mode (scripts/torch_gma.py --bench, CPU) and then `gmabench model` on
# the shapes torch_gma.py names for it (its "gma on the same shapes" line), one after the
# other with the same thread count; prints one table with both and their ratio.
#
#   scripts/bench_torch.sh [--mixers gma,sdpa] [--B 4] [--T 256] [--V 8192] [--steps 5]
#                          [--repeat 3] [--threads N] [--out DIR]
#
# Without a python3 that imports torch (PYTHON=..., else python3, else Debian's
# /usr/bin/python3 with python3-torch) it prints "torch not importable: peer skipped" and
# exits 0: torch is never needed by the build or the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
MIXERS=gma,sdpa B=4 T=256 V=8192 STEPS=5 REPEAT=3 THREADS=$(nproc) OUT=runs/bench_torch
while [ $# -gt 0 ]; do
  case "$1" in --mixers|--B|--T|--V|--steps|--repeat|--threads|--out) need_value "$@";; esac
  case "$1" in
    --help|-h) script_help; exit 0 ;;
    --mixers) MIXERS=$2 ;; --B) B=$2 ;; --T) T=$2 ;; --V) V=$2 ;; --steps) STEPS=$2 ;;
    --repeat) REPEAT=$2 ;; --threads) THREADS=$2 ;; --out) OUT=$2 ;;
    *) unknown_option "$1" "--mixers --B --T --V --steps --repeat --threads --out --help" ;;
  esac
  shift 2
done
for n in "$B" "$T" "$V" "$STEPS" "$REPEAT" "$THREADS"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench_torch.sh: \"$n\" is not a positive integer" >&2; exit 2; }
done
PY=
for p in ${PYTHON:-python3 /usr/bin/python3}; do
  if "$p" -c "import torch" 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then echo "torch not importable: peer skipped"; exit 0; fi
[ -x bin/gmabench ] || { echo "bench_torch.sh: bin/gmabench is missing (make binaries)" >&2; exit 2; }
mkdir -p "$OUT"
IFS=, read -r -a MIX <<< "$MIXERS"
for m in "${MIX[@]}"; do
  echo "== $m: torch_gma.py --bench ($PY, $THREADS threads)"
  "$PY" scripts/torch_gma.py --bench --set model.vocab_size="$V" --set model.mixer="$m" --set model.max_seq_len="$T" \
    --batch "$B" --seq "$T" --steps "$STEPS" --warmup 2 --repeat "$REPEAT" --threads "$THREADS" \
    --json "$OUT/torch_$m.json" | tee "$OUT/torch_$m.txt"
  cmd=$(sed -n 's/^# gma on the same shapes: //p' "$OUT/torch_$m.txt")
  case "$cmd" in bin/gmabench\ model*) ;; *) echo "bench_torch.sh: $m: torch_gma.py names no gmabench line ($cmd)" >&2; exit 1 ;; esac
  # the median of STEPS x REPEAT steps, as torch's median of REPEAT timings of STEPS steps
  cmd=${cmd/--steps $STEPS/--steps $((STEPS * REPEAT))}
  echo "== $m: $cmd --threads $THREADS"
  $cmd --threads "$THREADS" --json "$OUT/gma_$m.json" | tee "$OUT/gma_$m.txt"
done
"$PY" - "$OUT" "$MIXERS" "$THREADS" <<'EOF'
import json, sys
out, mixers, threads = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
print(f"\n## training step, gma (C) and PyTorch eager ({threads} threads, CPU): B x T tokens per step, median step")
print(f"{'mixer':<10} {'gma ms':>9} {'gma min-max':>17} {'gma tok/s':>10} {'torch ms':>9} {'torch min-max':>17} "
      f"{'torch tok/s':>11} {'gma/torch':>9}")
for m in mixers:
    g = next(r for r in json.load(open(f"{out}/gma_{m}.json"))["model"] if r["dropout"] == 0)
    t = json.load(open(f"{out}/torch_{m}.json"))
    print(f"{m:<10} {g['step_ms']:9.1f} {g['step_ms_min']:8.1f}-{g['step_ms_max']:<8.1f} {g['tokens_per_s']:10.0f} "
          f"{t['step_ms']:9.1f} {t['step_ms_min']:8.1f}-{t['step_ms_max']:<8.1f} {t['tokens_per_s']:11.0f} "
          f"{g['tokens_per_s'] / t['tokens_per_s']:9.2f}")
print(f"torch {t['torch']}; gmabench and torch_gma.py JSON in {out}/")
EOF
