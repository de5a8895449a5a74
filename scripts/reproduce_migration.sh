#!/usr/bin/env bash
# reproduce_migration.sh: the evidence of docs/migration.md ("## Migration evidence"). On the
# State of the Union split of scripts/sotu_split.sh (4096-token BPE, data/sotu8-bpe4k):
# a 4-layer sdpa teacher (configs/small_sdpa.json, model.n_layers 4), migrated by
# scripts/migrate.sh through the three phases with distillation and again without; beside them
# a 4-layer GMA model (configs/small_gma.json) trained from scratch for the teacher's steps
# plus the three phases' (the same total number of steps). Every run keeps going past a failed
# gate (migrate.sh --keep-going) so that every phase is measured; the table says which gates pass.
# The gates and the table are measured on data/sotu8-ev<E>-bpe4k: the same train split, and the
# first E speeches of data/sotu8's valid and test splits (every evaluation is a whole split, and
# the 8 speeches of each take minutes a pass on a loaded 2-core machine).
#   scripts/reproduce_migration.sh [--sotu DIR] [--steps N] [--steps-per-phase N] [--seeds N]
#                                  [--eval-speeches E] [--threads N] [--bench-seq LIST] [--out DIR]
#                                  [--phases P] [--no-scratch] [--force] [--write-docs] [--help]
#   --sotu DIR           the State of the Union corpus (also SOTU=DIR; needed until data/sotu8 is made)
#   --steps N            the teacher's training steps (default 400)
#   --steps-per-phase N  each phase's fine-tuning steps (default 33)
#   --eval-speeches E    speeches of the valid and of the test split the gates read (default 2)
#   --seeds N            seeds 1337.. of every run (default 1)
#   --threads N          threads of every run (default 2)
#   --bench-seq LIST     migrate.sh's speed lengths, with --quick (default 1K,4K,16K)
#   --out DIR            where the runs go (default runs/migration-evidence)
#   --phases P           the first P phases of each migration only (migrate.sh --phases; default 3)
#   --no-scratch         no GMA model from scratch (its row says so)
#   --force              train again a run made with other options (also migrate.sh --force)
#   --write-docs         write the section into docs/migration.md (else OUT/evidence.md only)
# Every step whose output is there is skipped, a run stopped part way resumed (a rerun
# continues: docs/reproducing.md, "Reruns").
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
steps=400; psteps=33; nev=2; seeds=1; threads=2; bseq=1K,4K,16K; out=runs/migration-evidence; docs=0; nph=3; scratch=1
usage="[--sotu DIR] [--steps N] [--steps-per-phase N] [--seeds N] [--eval-speeches E] [--threads N] [--bench-seq LIST] [--out DIR] [--phases P] [--no-scratch] [--force] [--write-docs] [--help]"
while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h) script_help; exit 0;;
    --write-docs) docs=1; shift; continue;;
    --no-scratch) scratch=0; shift; continue;;
    --force) force=1; shift; continue;;
    --sotu|--steps|--steps-per-phase|--seeds|--eval-speeches|--threads|--bench-seq|--out|--phases) ;;
    *) unknown_option "$1" "$usage";;
  esac
  need_value "$@"
  case "$1" in
    --sotu) SOTU="$2";;
    --steps) steps="$2";;
    --steps-per-phase) psteps="$2";;
    --seeds) seeds="$2";;
    --eval-speeches) nev="$2";;
    --threads) threads="$2";;
    --bench-seq) bseq="$2";;
    --out) out=$(from_start "$2");;
    --phases) nph="$2";;
    *) unknown_option "$1" "$usage --help";;
  esac
  shift 2
done
positive_ints "steps:$steps" "steps-per-phase:$psteps" "seeds:$seeds" "threads:$threads" "eval-speeches:$nev"
prepare_sotu8
tdata=data/sotu8-bpe4k # the teacher's
ev=data/sotu8-ev$nev; data=$ev-bpe4k # the same train split; E speeches of valid and of test
if [ ! -f "$data/meta.json" ]; then
  mkdir -p "$ev"
  ln -sfn ../sotu8/train.txt "$ev/train.txt"
  for sp in valid test; do awk 'NF' data/sotu8/$sp.txt | head -n "$nev" | sed '$!G' > "$ev/$sp.txt"; done
  bin/gmadata prepare "$ev" --tokenizer bpe:data/bpe4k-sotu8 --out "$data" --quiet
fi
total=$((steps + 3 * psteps))
cmd="scripts/reproduce_migration.sh --steps $steps --steps-per-phase $psteps --seeds $seeds --eval-speeches $nev --threads $threads --bench-seq $bseq --phases $nph$([ $scratch = 1 ] || echo " --no-scratch")"
mkdir -p "$out"
train() { # CONFIG OUT STEPS SEED DATA: unless done before (lib_reproduce.sh run_train)
  echo "training $1 ($3 steps, seed $4) -> $2" >&2
  run_train "$2" nice -n 10 bin/gmatrain --config "$1" --out "$2" --quiet --threads "$threads" --set data.path="$5" \
    --set model.n_layers=4 --set seed="$4" --set train.steps="$3"
}
mf=(); [ "$force" = 1 ] && mf=(--force)
jnum() { grep -o "\"$2\":[[:space:]]*[-0-9.eE+]*" "$1" | head -n 1 | sed -E 's/.*:[[:space:]]*//'; }
for ((i = 0; i < seeds; i++)); do
  s=$((1337 + i)); d="$out/s$s"
  mkdir -p "$d"
  train configs/small_sdpa.json "$d/teacher" "$steps" "$s" "$tdata"
  nice -n 10 scripts/migrate.sh --teacher "$d/teacher" --data "$data" --steps-per-phase "$psteps" --seed "$s" \
    --threads "$threads" --out "$d/migrate-nodistill" --no-distill --no-bench --keep-going --phases "$nph" "${mf[@]+"${mf[@]}"}" || [ $? = 3 ]
  if [ $scratch = 1 ]; then
    train configs/small_gma.json "$d/scratch" "$total" "$s" "$data"
    for sp in valid test; do grep "\"split\":\"$sp\"" "$d/scratch/metrics.jsonl" | tail -n 1 > "$d/scratch/$sp.json"; done
  fi
  nice -n 10 scripts/migrate.sh --teacher "$d/teacher" --data "$data" --steps-per-phase "$psteps" --seed "$s" \
    --threads "$threads" --out "$d/migrate" --bench-seq "$bseq" --quick --keep-going --phases "$nph" "${mf[@]+"${mf[@]}"}" || [ $? = 3 ]
done

# the section: per seed one table of teacher, phases (distilled and not) and scratch
sec="$out/evidence.md"
{
  echo "## Migration evidence"
  echo
  echo "Written by \`$cmd --write-docs\` (and \`--sotu DIR\`, the corpus, where data/sotu8 is not made yet),"
  echo "on a 2-core Xeon VM shared with other jobs: the timings are loose."
  echo "Teacher: configs/small_sdpa.json with model.n_layers 4 (d_model 128, 4 heads, seq 128, batch 8),"
  echo "$steps steps on the State of the Union split (data/sotu8-bpe4k). Migration: scripts/migrate.sh,"
  echo "$psteps steps a phase (lr 5e-4, warmup $((psteps / 10))), GMA K = 32, phase 2 = the last two layers (half of four)."
  if [ $scratch = 1 ]; then echo "Scratch: configs/small_gma.json with 4 layers for $total steps (= $steps + 3 x $psteps), its own schedule."
  else echo "Scratch: not run (--no-scratch); it would be configs/small_gma.json with 4 layers for $total steps (= $steps + 3 x $psteps)."; fi
  echo "Valid and test perplexity of the evaluation split $data: the first $nev speeches of data/sotu8's"
  echo "valid and of its test split ($(jnum "$data/meta.json" tokens | head -1) train tokens; $(grep -A3 '"valid"' "$data/meta.json" | jnum /dev/stdin tokens) valid and $(grep -A3 '"test"' "$data/meta.json" | jnum /dev/stdin tokens) test tokens, each scored whole); Δ against the teacher."
  [ "$seeds" = 1 ] && echo "One seed (1337): three seeds did not fit the time this machine had; no spread is claimed."
  for ((i = 0; i < seeds; i++)); do
    s=$((1337 + i)); d="$out/s$s"
    tv=$(jnum "$d/migrate/migration.json" teacher_valid_ppl); tt=$(jnum "$d/migrate/migration.json" teacher_test_ppl)
    echo
    echo "Seed $s:"
    echo
    echo "| model | GMA layers | steps | valid ppl | Δ valid % | test ppl | Δ test % | min utilised | gates |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---|"
    printf '| teacher (sdpa) | none | %d | %.2f | | %.2f | | | |\n' "$steps" "$tv" "$tt"
    for m in migrate migrate-nodistill; do
      lab=$([ $m = migrate ] && echo "distilled" || echo "no distillation")
      awk -v lab="$lab" -v st="$steps" -v ps="$psteps" -v tv="$tv" -v tt="$tt" '
        function f(s, key) { if (!match(s, "\"" key "\": [-0-9.eE+]+")) return ""; s = substr(s, RSTART, RLENGTH); sub(/.*: /, "", s); return s }
        /^  \{"phase"/ { k = f($0, "phase"); lay = $0; sub(/.*"layers_replaced": \[/, "", lay); sub(/\].*/, "", lay)
          mn = 1; s = $0; while (match(s, /"utilised_fraction": [0-9.]+/)) { v = substr(s, RSTART + 21, RLENGTH - 21) + 0; if (v < mn) mn = v; s = substr(s, RSTART + RLENGTH) }
          g = $0; sub(/.*"gates": \[/, "", g); sub(/\], "gate_passed".*/, "", g); gsub(/"/, "", g); gsub(/,(utilisation|ppl|valid_|test_)/, "; &", g); gsub(/; ,/, "; ", g)
          vp = f($0, "valid_ppl"); tp = f($0, "test_ppl")
          printf "| phase %d, %s | %s | %d | %.2f | %+.2f | %.2f | %+.2f | %.3f | %s |\n", k, lab, lay, st + k * ps, vp, 100 * (vp / tv - 1), tp, 100 * (tp / tt - 1), mn, g }' "$d/$m/migration.json"
    done
    sv=$(jnum "$d/scratch/valid.json" ppl 2> /dev/null || true); sp=$(jnum "$d/scratch/test.json" ppl 2> /dev/null || true)
    if [ -z "$sv" ] || [ -z "$sp" ]; then echo "| GMA from scratch | 0,1,2,3 | $total | not run | | | | | |"; else awk -v t="$total" -v sv="$sv" -v sp="$sp" -v tv="$tv" -v tt="$tt" 'BEGIN { printf "| GMA from scratch | 0,1,2,3 | %d | %.2f | %+.2f | %.2f | %+.2f | | |\n", t, sv, 100 * (sv / tv - 1), sp, 100 * (sp / tt - 1) }'; fi
    echo
    echo "Result of the gated migration (the last phase before the first failed gate): $(sed -n 's/.*"result": "\([^"]*\)".*/\1/p' "$d/migrate/migration.json"); without distillation: $(sed -n 's/.*"result": "\([^"]*\)".*/\1/p' "$d/migrate-nodistill/migration.json")."
    echo
    if [ -n "$sv" ] && [ -n "$sp" ]; then # the same number of steps, all four layers GMA
      p3=$(grep '^  {"phase": 3' "$d/migrate/migration.json" || true)
      if [ -n "$p3" ]; then
        awk -v sv="$sv" -v sp="$sp" -v r="$p3" 'BEGIN { v = r; sub(/.*"valid_ppl": /, "", v); sub(/,.*/, "", v); t = r; sub(/.*"test_ppl": /, "", t); sub(/,.*/, "", t)
          w = (sv < v + 0 && sp < t + 0) ? "beats" : (sv > v + 0 && sp > t + 0) ? "loses to" : "splits with"
          printf "GMA from scratch %s the all-GMA migrated model (phase 3, distilled, the same total steps): valid ppl %.2f against %.2f (%+.2f %%), test %.2f against %.2f (%+.2f %%).\n", w, sv, v, 100 * (sv / v - 1), sp, t, 100 * (sp / t - 1) }'
        echo
      fi
    fi
    sed -n '/^Speeds/,/^$/p; /^| model | ttft/,/^$/p' "$d/migrate/migration.md"
  done
} > "$sec"
if [ $docs = 1 ]; then
  f=docs/migration.md
  [ -f $f ] || printf '# Migrating a trained transformer to GMA\n\n' > $f
  # the old section (from its heading to the next "## " or the end) replaced by the new one
  awk -v sec="$sec" 'BEGIN { while ((getline l < sec) > 0) s = s l "\n" }
    /^## Migration evidence/ { skip = 1; printf "%s", s; done = 1; next }
    skip && /^## / { skip = 0 } !skip { print }
    END { if (!done) printf "\n%s", s }' $f > $f.new && mv $f.new $f
  echo "wrote the section into $f" >&2
fi
cat "$sec"
