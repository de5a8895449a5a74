#!/usr/bin/env bash
# reproduce_lra.sh: the Long Range Arena table. For each task and mixer trains
# configs/lra_<task>_<mixer>.json, keeps the best-validation checkpoint (RUN/best), evaluates
# it on the test split and prints test accuracy beside the LRA paper's reference numbers
# (also written to runs/lra-<profile>-<stamp>.txt).
#
#   scripts/reproduce_lra.sh [--profile paper|small] [--tasks "listops text retrieval image"]
#                            [--mixers "gma sdpa linear performer linformer"] [--steps N] [--device D]
#   --profile paper  the LRA reference hyper-parameters as configured (GPU-scale)
#   --profile small  2 layers of width 64, sequences cut to 256 tokens, 300 steps: a CPU smoke
#                    run of the pipeline, not a result
# Data: listops is generated into data/listops when missing (`gmadata generate listops`);
# text needs data/aclImdb_v1.tar.gz (`gmadata fetch imdb`); retrieval needs
# data/lra_release/tsv_data (`gmadata fetch lra`); image needs data/cifar-10-binary.tar.gz
# (the CIFAR-10 binary release, downloaded by hand). A task whose data is missing is skipped
# with a line saying how to get it.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=paper; tasks="listops text retrieval image"; mixers="gma sdpa linear performer linformer"
steps=""; device=""
. scripts/lib_reproduce.sh
extra_option() { case "$1" in --tasks) tasks="$2";; *) return 1;; esac; }
parse_options "[--profile paper|small] [--tasks LIST] [--mixers LIST] [--steps N] [--device D]" "$@"
make -s binaries
declare -A ref=(
  [sdpa:listops]=36.37 [sdpa:text]=64.27 [sdpa:retrieval]=57.46 [sdpa:image]=42.44
  [linear:listops]=16.13 [linear:text]=65.90 [linear:retrieval]=53.09 [linear:image]=42.34
  [performer:listops]=18.01 [performer:text]=65.40 [performer:retrieval]=53.82 [performer:image]=42.77
  [linformer:listops]=35.70 [linformer:text]=53.94 [linformer:retrieval]=52.27 [linformer:image]=38.56)
stamp=$(date +%Y%m%d-%H%M%S)
table="runs/lra-$profile-$stamp.txt"
mkdir -p runs
printf "%-10s %-10s %10s %12s %14s\n" task mixer best_valid test_acc "LRA paper" > "$table"
for t in $tasks; do
  case "$t" in
    listops) need=data/listops/basic_test.tsv
             [ -f "$need" ] || bin/gmadata generate listops --out data/listops ;;
    text) need=data/aclImdb_v1.tar.gz; hint="bin/gmadata fetch imdb" ;;
    retrieval) need=data/lra_release/tsv_data; hint="bin/gmadata fetch lra" ;;
    image) need=data/cifar-10-binary.tar.gz; hint="download the CIFAR-10 binary release to $need" ;;
    *) echo "$0: unknown task $t" >&2; exit 2;;
  esac
  if [ ! -e "$need" ]; then echo "$t: $need missing, skipped ($hint)"; continue; fi
  for m in $mixers; do
    cfg="configs/lra_${t}_$m.json"
    [ -f "$cfg" ] || { echo "$t: no $cfg, skipped"; continue; }
    sets=()
    if [ "$profile" = small ]; then
      sets+=(--set model.d_model=64 --set model.n_layers=2 --set model.n_heads=2 --set model.d_ff=128
             --set model.max_seq_len=257 --set train.seq_len=257 --set data.max_len=256 --set train.batch_size=16
             --set train.steps=300 --set train.warmup=30 --set train.eval_every=100 --set train.checkpoint_every=0
             --set gma.n_components=16 --set linformer.k=64 --set performer.features=32)
    fi
    [ -n "$steps" ] && sets+=(--set "train.steps=$steps")
    out="runs/lra_${t}_${m}-$profile-$stamp"
    $BIN/gmatrain --config "$cfg" --out "$out" "${sets[@]}" $device --quiet
    $BIN/gmaeval --checkpoint "$out/best" --data test --json "$out/test_best.json" $device > /dev/null
    printf "%-10s %-10s %10.4f %12.4f %14s\n" "$t" "$m" "$(get "$out/summary.json" best_valid_acc)" \
      "$(get "$out/test_best.json" acc)" "${ref[$m:$t]:--}" >> "$table"
  done
done
cat "$table"
