#!/usr/bin/env bash
# reproduce_migration.sh: the migration experiment of docs/results/migration.md. A teacher
# trained long on the State of the Union split (configs/small_sdpa.json with 4 layers, its
# cost stated: sunk cost for a practitioner), then, with one conversion budget B (steps of
# training after the teacher, the attention transfer's included) and the same data, every
# arm over several seeds:
#   full        scripts/migrate.sh --all-at-once: attention transfer (X steps), then B - X
#               steps of distillation, every layer GMA with an exact local window W
#   notransfer  the same without the transfer (B steps of distillation)
#   nowindow    the same without the window (gma.window 0)
#   control     the teacher itself fine-tuned B steps on the same data (migrate.sh --control
#               of the full arm): how much of a difference is the extra steps
#   scratch     configs/small_gma.json with 4 layers, B steps from random weights
#   long        the same for the teacher's steps + B (the upper reference: all the compute)
# On data/sotu8-bpe4k (scripts/sotu_split.sh, 4096-token BPE): perplexity on the whole valid
# and test splits, the gates migrate.sh passed, the smallest component utilisation, and (first
# seed of the full arm and the teacher) prefill and decoding speed at --bench-seq.
#   scripts/reproduce_migration.sh [--teacher RUN | --teacher-steps T] [--budget B]
#                                  [--transfer-steps X] [--window W] [--seeds N] [--threads N]
#                                  [--bench-seq LIST] [--arms LIST] [--out DIR] [--sotu DIR]
#                                  [--gpt2-shape DIR] [--force] [--write-docs] [--help]
#   --teacher RUN      a trained teacher (4 sdpa layers on data/sotu8-bpe4k); default: train one
#                      in OUT/teacher for --teacher-steps T (default 3000)
#   --budget B         conversion steps of every arm (default 300)
#   --transfer-steps X the full and nowindow arms' attention transfer, inside B (default 100)
#   --window W         the exact local window of the migrated layers (default 16: an eighth of
#                      the 128-token context, as LoLCATs' 64 of its longer contexts)
#   --seeds N          seeds 1337.. of every arm (default 3; the teacher is one run)
#   --threads N        threads of every run (default 1)
#   --bench-seq LIST   prefill and decoding speed lengths of the first seed's full arm (default 1K,4K,16K)
#   --arms LIST        the arms to run (default "full notransfer nowindow scratch long"; the
#                      control comes with full)
#   --out DIR          where the runs go (default runs/migration)
#   --sotu DIR         the State of the Union corpus (also SOTU=DIR; until data/sotu8 is made)
#   --gpt2-shape DIR   the folder of scripts/migrate_gpt2_shape.sh: its cost table goes on the page
#   --force            train again a run made with other options (also migrate.sh --force)
#   --write-docs       write docs/results/migration.md (else OUT/results.md only)
# A rerun continues: finished runs are kept, stopped ones resumed (docs/reproducing.md,
# "Reruns"). The table: scripts/migration_table.py from OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
teacher=""; tsteps=3000; budget=300; xsteps=100; window=16; seeds=3; threads=1; bseq=1K,4K,16K
arms="full notransfer nowindow scratch long"; out=runs/migration; docs=0; gpt2=""
usage="[--teacher RUN | --teacher-steps T] [--budget B] [--transfer-steps X] [--window W] [--seeds N] [--threads N] [--bench-seq LIST] [--arms LIST] [--out DIR] [--sotu DIR] [--gpt2-shape DIR] [--force] [--write-docs] [--help]"
while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h) script_help; exit 0;;
    --write-docs) docs=1; shift; continue;;
    --force) force=1; shift; continue;;
    --teacher|--teacher-steps|--budget|--transfer-steps|--window|--seeds|--threads|--bench-seq|--arms|--out|--sotu|--gpt2-shape) ;;
    *) unknown_option "$1" "$usage";;
  esac
  need_value "$@"
  case "$1" in
    --teacher) teacher=$(from_start "$2");;
    --teacher-steps) tsteps="$2";;
    --budget) budget="$2";;
    --transfer-steps) xsteps="$2";;
    --window) window="$2";;
    --seeds) seeds="$2";;
    --threads) threads="$2";;
    --bench-seq) bseq="$2";;
    --arms) arms="$2";;
    --out) out=$(from_start "$2");;
    --sotu) SOTU="$2";;
    --gpt2-shape) gpt2=$(from_start "$2");;
  esac
  shift 2
done
positive_ints "teacher-steps:$tsteps" "budget:$budget" "seeds:$seeds" "threads:$threads"
case "$xsteps" in ''|*[!0-9]*) echo "$0: --transfer-steps: want an integer >= 0, got '$xsteps'" >&2; exit 2;; esac
case "$window" in ''|*[!0-9]*) echo "$0: --window: want an integer >= 0, got '$window'" >&2; exit 2;; esac
[ "$xsteps" -lt "$budget" ] || { echo "$0: --transfer-steps $xsteps: must be below --budget $budget (the transfer is part of it)" >&2; exit 2; }
for a in $arms; do
  case " full notransfer nowindow scratch long " in *" $a "*) ;; *) echo "$0: --arms: unknown arm '$a' (full notransfer nowindow scratch long)" >&2; exit 2;; esac
done
[ -z "$gpt2" ] || [ -f "$gpt2/cost.md" ] || { echo "$0: --gpt2-shape $gpt2: no cost.md there (scripts/migrate_gpt2_shape.sh --out DIR)" >&2; exit 2; }
[ -z "$teacher" ] || [ -f "$teacher/config.json" ] || { echo "$0: --teacher $teacher: no config.json there (a gmatrain run folder)" >&2; exit 2; }
prepare_sotu8
data=data/sotu8-bpe4k
mkdir -p "$out"
train() { # CONFIG OUT STEPS SEED: unless done before (lib_reproduce.sh run_train)
  echo "training $1 ($3 steps, seed $4) -> $2" >&2
  run_train "$2" bin/gmatrain --config "$1" --out "$2" --quiet --threads "$threads" --set data.path="$data" \
    --set model.n_layers=4 --set seed="$4" --set train.steps="$3"
}
if [ -z "$teacher" ]; then
  teacher="$out/teacher"
  train configs/small_sdpa.json "$teacher" "$tsteps" 1337
fi
tsteps=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["train"]["steps"])' "$teacher/config.json")
mf=(); [ "$force" = 1 ] && mf=(--force)
migrate() { # NAME SEED OPTIONS...: migrate.sh, every layer at once, the gates run to the end
  local name=$1 s=$2
  shift 2
  echo "migrating ($name, seed $s) -> $out/s$s/$name" >&2
  scripts/migrate.sh --teacher "$teacher" --data "$data" --all-at-once --seed "$s" --threads "$threads" \
    --out "$out/s$s/$name" --keep-going "$@" "${mf[@]+"${mf[@]}"}" || [ $? = 3 ]
}
has() { case " $arms " in *" $1 "*) return 0;; esac; return 1; }
for ((i = 0; i < seeds; i++)); do
  s=$((1337 + i))
  bench=(--no-bench); [ $i = 0 ] && bench=(--bench-seq "$bseq")
  if has full; then migrate full $s --total-steps $((budget - xsteps)) --transfer-steps "$xsteps" --window "$window" --control "${bench[@]}"; fi
  if has notransfer; then migrate notransfer $s --total-steps "$budget" --window "$window" --no-bench; fi
  if has nowindow; then migrate nowindow $s --total-steps $((budget - xsteps)) --transfer-steps "$xsteps" --window 0 --no-bench; fi
  if has scratch; then train configs/small_gma.json "$out/s$s/scratch" "$budget" $s; fi
  if has long; then train configs/small_gma.json "$out/s$s/long" $((tsteps + budget)) $s; fi
done
cmd="scripts/reproduce_migration.sh --teacher-steps $tsteps --budget $budget --transfer-steps $xsteps --window $window --seeds $seeds --threads $threads --bench-seq $bseq"
page="$out/results.md"; [ $docs = 1 ] && page=docs/results/migration.md
python3 -B scripts/migration_table.py "$out" "$teacher" "$cmd" "$page" ${gpt2:+"$gpt2"}
echo "wrote $page" >&2
