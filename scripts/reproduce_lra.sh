#!/usr/bin/env bash
# reproduce_lra.sh: the Long Range Arena table. For each task and mixer trains
# configs/lra_<task>_<mixer>.json (the release's settings, docs/lra.md), evaluates it and
# prints the reported test accuracy (summary.json reported_test_acc: the last checkpoint,
# as the release reports, train.report) beside the best-validation one and the LRA paper's
# numbers, every accuracy in percent (also written to runs/lra-<profile>-<stamp>.txt).
#
#   scripts/reproduce_lra.sh [--profile paper|small] [--tasks "listops text retrieval image pathfinder"]
#                            [--mixers "gma sdpa linear performer linformer"] [--steps N] [--device D]
#                            [--cnn-seconds S] [--spam-dir DIR] [--dry-run N [--dry-batch SPEC]]
#                            [--stamp S] [--force] [--help]
#   --profile paper  the release's settings at full size (GPU-scale; docs/lra.md gives the cost)
#   --profile small  2 layers of width 64, sequences of at most 256 tokens, 600 steps, on the
#                    data this machine has or makes: generated ListOps (2,000 short
#                    expressions), a byte-level text task (the SpamAssassin TSV split of
#                    --spam-dir when IMDB is missing) and easy Pathfinder-32 (100,000 images in
#                    data/pathfinder32_100k, generated when missing; all 1,024 pixels, batch
#                    16, 300 steps); mixers gma and sdpa unless --mixers says otherwise.
#                    Pathfinder adds the row "gma+stem": configs/small_lra_pathfinder_stem.json,
#                    the CPU check's model (a gma block behind a convolutional stem, 1,500
#                    steps; --steps applies to it too). Minutes a run on 2 CPU cores; the
#                    stem row is the longest (docs/lra.md).
#   --cnn-seconds S  --profile small, Pathfinder: also train scripts/pathfinder_cnn.py (PyTorch)
#                    on the same images for S seconds [300] and add its test accuracy as the
#                    row "cnn(torch)", when python3 imports torch and PIL (0: no such row)
#   --spam-dir DIR   the SpamAssassin TSV split ({train,valid,test}.tsv.gz; docs/lra.md) for
#                    --profile small's text task when data/aclImdb_v1.tar.gz is missing
#                    (also SPAM_DIR=DIR; no default: without either that task is skipped)
#   --dry-run N      instead, scripts/lra_dry_run.sh --steps N: N steps of each config at its
#                    full shape on stand-in data (scripts/lra_standin.sh: only the tasks of
#                    --tasks, in data/lra_standin), peak memory (max RSS),
#                    seconds per step and the projected time of the full run (Path-X included
#                    unless --tasks says otherwise); --dry-batch SPEC measures at micro-batches b
#                    and 2b and projects the config's batch (lra_dry_run.sh --help)
#   --stamp S        the stamp of the names below (default the time of the call, printed as it
#                    starts): the stamp of an earlier call continues it, its table keeping the
#                    rows of the runs not made again (docs/reproducing.md, "Reruns")
#   --force          train again a run made with other options (or not by this script)
# Data: listops is generated into data/listops when missing (`gmadata generate listops`);
# text needs data/aclImdb_v1.tar.gz (`gmadata fetch imdb`); retrieval needs
# data/lra_release/tsv_data (`gmadata fetch lra`); image needs data/cifar-10-binary.tar.gz
# (the CIFAR-10 binary release, downloaded by hand); pathfinder uses the data.path of its
# config. A task whose data or config is missing is skipped with a line saying so.
# Environment: SPAM_DIR=DIR, as --spam-dir. Prints one line as each run starts; the table
# at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=paper; tasks="listops text retrieval image pathfinder"; mixers=""
steps=""; device=""; dry=""; cnn_seconds=300; SPAM_DIR=${SPAM_DIR:-}
. scripts/lib_reproduce.sh
dry_opts=(); dry_batch=""
extra_option() { case "$1" in --tasks|--dry-run|--dry-batch|--cnn-seconds|--spam-dir) need_value "$@";; *) return 1;; esac
                 case "$1" in --tasks) tasks="$2"; dry_opts+=(--tasks "$2");; --dry-run) dry="$2";;
                 --dry-batch) dry_batch="$2"; dry_opts+=(--dry-batch "$2");;
                 --cnn-seconds) [[ "$2" =~ ^[0-9]+$ ]] || { echo "$0: --cnn-seconds needs a whole number of seconds, got '$2'" >&2; exit 2; }
                                cnn_seconds="$2";;
                 --spam-dir) SPAM_DIR="$2";; esac; }
parse_options "[--profile paper|small] [--tasks LIST] [--mixers LIST] [--steps N] [--device D] [--cnn-seconds S] [--spam-dir DIR] [--dry-run N [--dry-batch SPEC]] [--stamp S] [--force]" "$@"
SPAM_DIR=$(from_start "$SPAM_DIR")
[ -z "$SPAM_DIR" ] || [ -d "$SPAM_DIR" ] || { echo "$0: --spam-dir / SPAM_DIR: $SPAM_DIR is not a directory" >&2; exit 2; }
if [ -z "$dry" ] && [ -n "$dry_batch" ]; then
  echo "$0: --dry-batch goes with --dry-run" >&2; exit 2
fi
if [ -n "$dry" ]; then
  [[ "$dry" =~ ^[0-9]+$ ]] && [ "$dry" -ge 2 ] || { echo "$0: --dry-run N: N must be a whole number of steps >= 2, not '$dry'" >&2; exit 2; }
  [ -n "$mixers" ] && dry_opts+=(--mixers "$mixers")
  exec scripts/lra_dry_run.sh --steps "$dry" "${dry_opts[@]}" $device
fi
[ -n "$mixers" ] || { [ "$profile" = small ] && mixers="gma sdpa" || mixers="gma sdpa linear performer linformer"; }
make -s binaries
# LRA paper (Tay et al. 2021), test accuracy %: ListOps, Text, Retrieval, Image, Pathfinder
declare -A ref=(
  [sdpa:listops]=36.37 [sdpa:text]=64.27 [sdpa:retrieval]=57.46 [sdpa:image]=42.44 [sdpa:pathfinder]=71.40
  [linear:listops]=16.13 [linear:text]=65.90 [linear:retrieval]=53.09 [linear:image]=42.34 [linear:pathfinder]=75.30
  [performer:listops]=18.01 [performer:text]=65.40 [performer:retrieval]=53.82 [performer:image]=42.77 [performer:pathfinder]=77.05
  [linformer:listops]=35.70 [linformer:text]=53.94 [linformer:retrieval]=52.27 [linformer:image]=38.56 [linformer:pathfinder]=76.34)
# --profile small, Pathfinder-32 easy: after the common small settings. 300 steps, and the
# evaluations during training on 512 valid images (the final one reads the whole split), to
# keep the profile within 40 minutes: no setting tried learns the task in a CPU budget
# (docs/lra.md, "CPU check"), and sdpa took 18 minutes there for 600 steps and their evaluations
pf_small_sets=(--set model.max_seq_len=1024 --set train.seq_len=1024 --set data.max_len=1024 --set data.truncate=false
               --set model.dropout=0 --set model.mlp_hidden_dropout=0 --set model.attn_dropout=0
               --set train.batch_size=16 --set train.lr=0.002 --set train.warmup=30 --set train.weight_decay=0
               --set train.steps=300 --set train.eval_every=100 --set train.eval_batches=32)
echo "stamp $stamp (a rerun with --stamp $stamp continues this call)" >&2
mode=$profile; made=" "
table="runs/lra-$mode-$stamp.txt"
mkdir -p runs
lra_header > "$table"
for t in $tasks; do
  cfgtask=$t; sets=(); hint=""
  case "$t" in
    listops)
      if [ "$profile" = small ]; then
        need=data/listops_small/basic_test.tsv
        [ -f "$need" ] || bin/gmadata generate listops --out data/listops_small --train 2000 --valid 200 --test 200 \
                            --min-len 20 --max-len 256 --max-depth 6
        sets+=(--set data.path=data/listops_small)
      else
        need=data/listops/basic_test.tsv
        [ -f "$need" ] || bin/gmadata generate listops --out data/listops
      fi ;;
    text) need=data/aclImdb_v1.tar.gz; hint="bin/gmadata fetch imdb"
          [ "$profile" = small ] && hint="$hint, or --spam-dir DIR"
          if [ "$profile" = small ] && [ ! -e "$need" ] && [ -n "$SPAM_DIR" ]; then
            need=$SPAM_DIR; sets+=(--set data.task=tsv --set "data.path=$SPAM_DIR" --set data.strip_headers=true)
          fi ;;
    retrieval) need=data/lra_release/tsv_data; hint="bin/gmadata fetch lra" ;;
    image) need=data/cifar-10-binary.tar.gz; hint="download the CIFAR-10 binary release to $need" ;;
    pathfinder) cfgtask=pathfinder32; need=""
      if [ "$profile" = small ] && [ -z "$dry" ]; then # easy Pathfinder-32, as scripts/check_lra_train.sh pathfinder
        need=data/pathfinder32_100k/curv_baseline
        [ -f "$need/metadata/99.npy" ] || bin/gmadata generate pathfinder --out data/pathfinder32_100k --res 32 \
                                            --difficulty easy --n 100000 --seed 7
        sets+=(--set "data.path=$need")
      fi ;;
    *) echo "$0: unknown task $t" >&2; exit 2;;
  esac
  for m in $mixers; do
    cfg="configs/lra_${cfgtask}_$m.json"
    [ -f "$cfg" ] || { echo "$t: no $cfg, skipped"; continue; }
    if [ -z "$need" ]; then need=$(grep '"path"' "$cfg" | head -1 | sed -E 's/.*"path": *"([^"]*)".*/\1/'); hint="see docs/lra.md"; fi
    if [ ! -e "$need" ]; then echo "$t: $need missing, skipped ($hint)"; continue; fi
    run_sets=("${sets[@]}")
    if [ "$profile" = small ]; then
      run_sets+=(--set model.d_model=64 --set model.n_layers=2 --set model.n_heads=2 --set model.d_ff=128
                 --set model.qkv_dim=0 --set model.head_hidden=128 --set model.max_seq_len=257 --set train.seq_len=257
                 --set data.max_len=256 --set train.batch_size=32 --set train.steps=600 --set train.warmup=50
                 --set train.schedule=cosine --set train.lr=0.001 --set train.min_lr_ratio=0.1 --set train.decay_steps=0
                 --set train.weight_decay=0.1 --set train.eval_every=100 --set train.log_every=50
                 --set train.checkpoint_every=0 --set threads=2
                 --set gma.n_components=16 --set linformer.k=16 --set performer.features=32)
      [ "$t" = retrieval ] && run_sets+=(--set model.head_hidden2=64)
      # Text on IMDB: select on the 2,400 held-out reviews, not on the 25,000 of test/ (the
      # release's split) every 100 steps, which would take most of the profile's time
      [ "$t" = text ] && run_sets+=(--set data.text_valid=heldout)
      # Pathfinder: the whole 32 x 32 image (1,024 tokens; 256 would keep its top 8 rows), the
      # config's sinusoidal positions and N(0, 1) embeddings, batch 16, lr 2e-3, no dropout or
      # weight decay, as configs/small_lra_pathfinder_gma.json (docs/lra.md, "CPU check"),
      # 300 steps (pf_small_sets above)
      [ "$t" = pathfinder ] && run_sets+=("${pf_small_sets[@]}")
    fi
    [ -n "$steps" ] && run_sets+=(--set "train.steps=$steps")
    out="runs/lra_${t}_${m}-$mode-$stamp"
    progress "$t" "$m" "$cfg" "$out"
    # shellcheck disable=SC2086
    run_train "$out" $BIN/gmatrain --config "$cfg" --out "$out" "${run_sets[@]}" $device --quiet
    lra_row "$t" "$m" $(lra_acc "$out/summary.json") "${ref[$m:$t]:--}" >> "$table"; made="$made$out "
  done
  # --profile small, Pathfinder: the CPU check's model, a gma block behind a convolutional
  # stem (configs/small_lra_pathfinder_stem.json; docs/lra.md, "CPU check")
  if [ "$t" = pathfinder ] && [ "$profile" = small ] && [ -n "$need" ] && [ -e "$need" ]; then
    out="runs/lra_${t}_gma+stem-$mode-$stamp"
    stem_sets=(--set "data.path=$need" --set threads=2)
    [ -n "$steps" ] && stem_sets+=(--set "train.steps=$steps")
    progress "$t" "gma+stem" configs/small_lra_pathfinder_stem.json "$out"
    # shellcheck disable=SC2086
    run_train "$out" $BIN/gmatrain --config configs/small_lra_pathfinder_stem.json --out "$out" "${stem_sets[@]}" $device --quiet
    lra_row "$t" gma+stem $(lra_acc "$out/summary.json") - >> "$table"; made="$made$out "
  fi
  # --profile small, Pathfinder: a reference row from the convolutional network of
  # scripts/pathfinder_cnn.py on the same images (docs/lra.md, "CPU check": the labels are
  # learnable, by a model with locality and batch norm), when python3 has torch and PIL
  if [ "$t" = pathfinder ] && [ "$profile" = small ] && [ "$cnn_seconds" != 0 ] && [ -n "$need" ] && [ -e "$need" ]; then
    if python3 -c "import torch, PIL" 2>/dev/null; then
      log="runs/lra_pathfinder_cnn-$mode-$stamp.log"
      if grep -q '^final .* test_acc ' "$log" 2> /dev/null; then echo "[$t/cnn] $log: finished before, kept" >&2
      else
        echo "[$t/cnn] scripts/pathfinder_cnn.py $need --seconds $cnn_seconds -> $log" >&2
        python3 scripts/pathfinder_cnn.py "$need" --seconds "$cnn_seconds" --threads 2 > "$log" ||
          echo "$t: scripts/pathfinder_cnn.py failed (exit $?; $log)" >&2
      fi
      acc=$(sed -n 's/^final .* test_acc \([0-9.]*\) on .*/\1/p' "$log")
      lra_row "$t" "cnn(torch)" - - "${acc:--}" - >> "$table"
    else
      echo "$t: the CNN reference row skipped (python3 cannot import torch and PIL)"
    fi
  fi
done
# the runs of an earlier call of the same stamp (other tasks or mixers) stay in the table
for d in runs/lra_*-"$mode-$stamp"; do
  [ -s "$d/summary.json" ] && [[ "$made" != *" $d "* ]] || continue
  n=${d#runs/lra_}; n=${n%-"$mode-$stamp"}; t=${n%%_*}; m=${n#*_}
  lra_row "$t" "$m" $(lra_acc "$d/summary.json") "${ref[$m:$t]:--}" >> "$table"
done
cat "$table"
# the table as Markdown and the curves of this invocation's runs (scripts/plot_runs.sh)
stem=${table%.txt}
md_table "$table" "$stem.md" && echo "Markdown: $stem.md"
plot_runs=()
for d in runs/lra_*-"$mode-$stamp"; do
  [ -f "$d/metrics.jsonl" ] || continue
  n=${d#runs/lra_}; plot_runs+=("${n%-"$mode-$stamp"}=$d")
done
plot_all "${stem}_plots" "${plot_runs[@]+"${plot_runs[@]}"}"
