#!/usr/bin/env bash
# gpu_check.sh: check the CUDA backend against the CPU backend on a machine with an NVIDIA
# GPU, then benchmark it. Needs nvcc (or binaries already built by `make cuda` in bin/cuda/)
# and a GPU.
#
#   scripts/gpu_check.sh [--quick] [--no-build] [--no-bench] [--sanitize] [--out DIR]
#                        [--bin DIR] [--precisions "fp32 tf32 bf16"] [--mixers "gma sdpa ..."]
#                        [--extra "ARGS"] [--sections LIST]
#
# --bin DIR takes the programs from DIR instead of bin/cuda/, where `make cuda` puts them
# (scripts/cuda_emu_check.sh model runs these checks on binaries linked with the CPU
# emulation of the CUDA backend). --extra
# appends ARGS to every gmacheck call (e.g. "--batch 1" to make the emulated runs shorter).
# --sections LIST (comma-separated; default all) runs only those parts of 2 and 3, so that a
# lease too short for the whole can be split: mixers (every mixer at N = 200), shapes (the
# extra shapes below), cls (classifiers, stem, head in chunks), cross (the encoder-decoder),
# ctx (a cross model at a longer context), xdev (checkpoint and sampling across devices), dp,
# prec (the training runs), repeat (determinism), sanitize (with --sanitize).
#
# 1. make cuda (unless --no-build): bin/cuda/*.
# 2. For every mixer (gmacheck --list-mixers), causal and bidirectional, and every
#    precision (fp32, tf32, bf16): gmacheck runs a few training steps on the CPU and on
#    the GPU from the same initial parameters and batch and compares the losses and every
#    gradient (relative error; bounds: fp32 1e-4, tf32 1e-2, bf16 5e-2 -- see docs/cuda.md).
#    GMA also runs with a sequence that is a multiple of the chunk, a single chunk, shared
#    components, and the exact local window (gma.window, causal and bidirectional); every bidirectional mixer also as a classifier with padded rows
#    (the key-padding paths), and GMA with cls pooling and the two-sequence head and with
#    the convolutional stem (batch and instance norm), and with the language model's head
#    in chunks of rows. Kernel launches are synchronised (GMA_CUDA_SYNC=1) so a fault names
#    its kernel.
#    The baseline mixers' kernels (src/ops/cuda/cuda_sdpa.cu, cuda_mamba.cu,
#    cuda_baselines.cu) get extra shapes: tiled sdpa at head widths 64, 128 and 256 (the
#    widest needs the shared-memory opt-in) and N = 2048, mamba with d_state 64 and 200
#    (the register and local-memory scan variants) and a short scan chunk, performer with
#    an odd feature count; and each baseline check runs twice in fp32 and must print the
#    same numbers (no atomics: results repeat bit for bit).
#    Without --quick: the quickstart model trained 1000 steps on the CPU and on the GPU in
#    each precision, test loss and accuracy side by side (the accuracy cost of a run).
#    A checkpoint trained on the GPU evaluated on both backends and resumed on the CPU; with
#    mpicc and mpirun, data-parallel training (make cuda-mpi) on 2 ranks against one
#    process (scripts/check_data_parallel.sh).
# 3. --sanitize: every mixer (in a direction it supports) under compute-sanitizer memcheck.
# 4. Benchmarks (unless --no-bench), if gmabench takes --device: the mixer table, the
#    whole-model throughput of configs/wikitext103_gma_k256.json and its generation speed
#    (gmabench decode, incremental against a full forward per token).
# Everything is logged under DIR (default runs/gpu_check/); DIR/summary.md holds the table.
# Exit status: 0 all checks within bounds, 1 some check failed, 2 no usable GPU/build.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
QUICK=0; BUILD=1; BENCH=1; SAN=0; OUT=runs/gpu_check; BIN=bin/cuda; PRECS=""; ONLY=""; EXTRA=""
ALL_SECTIONS=mixers,shapes,cls,cross,ctx,xdev,dp,prec,repeat,sanitize; SECTIONS=$ALL_SECTIONS
while [ $# -gt 0 ]; do
  case "$1" in --out|--bin|--precisions|--mixers|--sections) need_value "$@";; --extra) [ $# -ge 2 ] || need_value "$1";; esac
  case "$1" in
    --help|-h) script_help; exit 0 ;;
    --quick) QUICK=1 ;;
    --no-build) BUILD=0 ;;
    --no-bench) BENCH=0 ;;
    --sanitize) SAN=1 ;;
    --out) OUT="$2"; shift ;;
    --bin) BIN="$2"; shift ;;
    --precisions) PRECS="$2"; shift ;;
    --mixers) ONLY="$2"; shift ;;
    --extra) EXTRA="$2"; shift ;;
    --sections) SECTIONS="$2"; shift ;;
    *) unknown_option "$1" "[--quick] [--no-build] [--no-bench] [--sanitize] [--out DIR] [--bin DIR] [--precisions P] [--mixers M] [--extra ARGS] [--sections LIST] --help" ;;
  esac
  shift
done
for sec in ${SECTIONS//,/ }; do
  case ",$ALL_SECTIONS," in *",$sec,"*) ;; *) echo "gpu_check: --sections: unknown section '$sec' ($ALL_SECTIONS)" >&2; exit 2 ;; esac
done
on() { case ",$SECTIONS," in *",$1,"*) return 0 ;; esac; return 1; }
mkdir -p "$OUT"
LOG="$OUT/checks.log"; SUM="$OUT/summary.md"; : > "$LOG"

if [ $BUILD = 1 ]; then
  echo "== make cuda"
  make -j"$(nproc)" cuda > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; echo "gpu_check: make cuda failed (see $OUT/build.log)"; exit 2; }
fi
[ -x "$BIN/gmacheck" ] || { echo "gpu_check: $BIN/gmacheck missing (run make cuda)"; exit 2; }

GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
echo "GPU: ${GPU:-unknown (nvidia-smi not found)}"
probe=$($BIN/gmacheck --device cuda --steps 1 --batch 1 --seq 16 --quiet 2>&1); rc=$?
if [ $rc = 2 ]; then echo "$probe"; echo "gpu_check: the CUDA backend cannot run here"; exit 2; fi

{
  echo "# gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "GPU: ${GPU:-unknown}; commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo
  echo "| mixer | mode | case | precision | max loss rel err | max grad rel err (tensor) | bound | result | AdamW update rel err (not bounded) |"
  echo "|---|---|---|---|---|---|---|---|---|"
} > "$SUM"

fails=0; runs=0
# gmacheck's exit and output: a mixer that cannot run in this direction (linformer causal,
# mamba bidirectional), its config refused (exit 2) naming it
not_applicable() { [ "$1" = 2 ] && echo "$2" | grep -q "cannot run \(causally\|bidirectionally\)"; }
check() { # mixer causal case precision [extra args...]
  local m=$1 c=$2 cs=$3 p=$4; shift 4
  local mode=causal; [ "$c" = 0 ] && mode=bidirectional
  echo "-- $m $mode $cs $p" | tee -a "$LOG"
  local out rc
  out=$(GMA_CUDA_SYNC=1 $BIN/gmacheck --device cuda --precision "$p" --set model.mixer="$m" --set model.causal="$c" \
        --steps 3 --quiet "$@" $EXTRA 2>&1); rc=$?
  echo "$out" >> "$LOG"
  if not_applicable $rc "$out"; then echo "   not applicable: $(echo "$out" | tail -1)"; return; fi
  runs=$((runs + 1))
  local last; last=$(echo "$out" | grep '^gmacheck: \(PASS\|FAIL\)' | tail -1)
  if [ -z "$last" ]; then
    fails=$((fails + 1)); echo "   ERROR (rc $rc): $(echo "$out" | tail -2 | tr '\n' ' ')"
    echo "| $m | $mode | $cs | $p | - | - | - | ERROR rc $rc | - |" >> "$SUM"; return
  fi
  echo "   $last"
  local res le ge bd ue
  res=$(echo "$last" | sed -E 's/^gmacheck: (PASS|FAIL).*/\1/')
  le=$(echo "$last" | sed -E 's/.*max loss rel err ([^,]+),.*/\1/')
  ge=$(echo "$last" | sed -E 's/.*max grad rel err ([^ ]+) \(([^)]*)\).*/\1 (\2)/')
  bd=$(echo "$last" | sed -E 's/.*bound ([^;]+);.*/\1/')
  ue=$(echo "$last" | sed -E 's/.*max update rel err ([^ ]+)$/\1/')
  [ "$res" = PASS ] || fails=$((fails + 1))
  echo "| $m | $mode | $cs | $p | $le | $ge | $bd | $res | $ue |" >> "$SUM"
}

MIXERS=$($BIN/gmacheck --list-mixers | tr '|' ' ')
[ -n "$ONLY" ] && MIXERS="$ONLY"
if [ -z "$PRECS" ]; then PRECS="fp32 tf32 bf16"; [ $QUICK = 1 ] && PRECS="fp32"; fi
for p in $PRECS; do
  if on mixers; then
    for m in $MIXERS; do
      for c in 1 0; do
        check "$m" "$c" "N=200" "$p" --seq 200
      done
    done
  fi
  if on shapes; then
    # GMA's chunked scan: N a multiple of the chunk, one chunk only, shared components, long N
    check gma 1 "N=256" "$p" --seq 256
    check gma 1 "N=48 (one chunk)" "$p" --seq 48
    check gma 1 "shared, chunk 32" "$p" --seq 200 --set gma.shared_components=true --set gma.chunk=32
    # the exact local window beside GMA (gma.window: the tiled window attention, the ring in decoding)
    for c in 1 0; do check gma "$c" "window 48" "$p" --seq 200 --set gma.window=48; done
    [ $QUICK = 1 ] || check gma 1 "N=2048, Kc=128" "$p" --seq 2048 --batch 2 --set gma.n_components=128 --set model.n_layers=1
    # baselines: other head widths, state sizes, chunks and feature counts
    for c in 1 0; do
      check sdpa "$c" "d=64" "$p" --seq 200 --set model.n_heads=2
      check sdpa "$c" "d=128, N=300" "$p" --seq 300 --set model.n_heads=1 --set model.max_seq_len=512
      check sdpa "$c" "d=256" "$p" --seq 100 --batch 2 --set model.d_model=256 --set model.n_heads=1
      check performer "$c" "m=37" "$p" --seq 200 --set performer.features=37
    done
    check mamba 1 "d_state 64, chunk 16" "$p" --seq 200 --set mamba.d_state=64 --set mamba.chunk=16
    # dropout (docs/model.md §8): both backends draw the same masks, training steps agree
    for c in 1 0; do
      check sdpa "$c" "dropout 0.1, attn 0.1, hidden 0.1" "$p" --seq 200 --set model.dropout=0.1 \
        --set model.attn_dropout=0.1 --set model.mlp_hidden_dropout=0.1
    done
    check gma 1 "dropout 0.2" "$p" --seq 100 --set model.dropout=0.2 --set model.mlp_hidden_dropout=0.2
    check mamba 1 "d_state 200, chunk 7" "$p" --seq 50 --batch 2 --set mamba.d_state=200 --set mamba.chunk=7
    check mamba 1 "N=64 = chunk" "$p" --seq 64
    [ $QUICK = 1 ] || check sdpa 1 "N=2048" "$p" --seq 2048 --batch 2 --set model.n_layers=1 --set model.max_seq_len=2048
  fi
  if on cls; then
    # classifiers: padded rows (the key-padding paths), cls pooling, the two-sequence head
    for m in $MIXERS; do
      case "$m" in mamba|baseconv) continue ;; esac # causal only
      check "$m" 0 "classifier, padded" "$p" --seq 100 --set model.task=classify --set model.n_classes=5
    done
    check gma 0 "classifier, cls pool, 2 seqs" "$p" --seq 60 --set model.task=classify --set model.pooling=cls \
      --set model.n_seq=2 --set model.n_classes=3
    # the convolutional stem over 8 x 8 images (docs/model.md §2.1): batch norm's batch
    # statistics, instance norm
    for sn in batch instance; do
      check gma 0 "classifier, conv stem, $sn norm" "$p" --seq 64 --set model.task=classify --set model.stem=conv \
        --set model.stem_dilations=1,2,4 --set model.stem_norm=$sn
    done
    # the language model's head in chunks of 5 rows (docs/model.md §1): its backward products
    # run per chunk in the forward
    check gma 1 "head in chunks of 5 rows" "$p" --set model.head_chunk=5
  fi
  if on cross; then
    # the encoder-decoder (docs/cross.md) of configs/xmqar_long_*.json: gma and sdpa cross
    # layers over a causal or bidirectional encoder, the other mixer as encoder, window
    # positions, and a context of 1024 (the decoder's self-attention is sdpa in each)
    for cm in gma sdpa; do
      XC=(--config configs/xmqar_long_$cm.json --batch 2)
      check sdpa 1 "cross $cm, causal encoder" "$p" "${XC[@]}"
      check sdpa 1 "cross $cm, bidirectional encoder, window pos" "$p" "${XC[@]}" --set cross.enc_causal=false \
        --set cross.query_pos=window
      check sdpa 1 "cross $cm, ctx 1024" "$p" "${XC[@]}" --set cross.ctx_len=1024 --set data.xmqar_ctx=1024 \
        --set train.seq_len=1040
    done
    check sdpa 1 "cross gma, sdpa encoder" "$p" --config configs/xmqar_long_gma.json --batch 2 --set cross.enc_mixer=sdpa
    check sdpa 1 "cross sdpa, gma encoder" "$p" --config configs/xmqar_long_sdpa.json --batch 2 --set cross.enc_mixer=gma
  fi
done

# the test losses of two gmaeval --json files (cuda, cpu): sets the caller's la, lb, their
# relative error rel and res (PASS below 1e-4)
loss_pair() {
  jl() { grep -o '"loss":[[:space:]]*[-0-9.eE+]*' "$1" | head -1 | grep -o '[-0-9.eE+]*$'; }
  la=$(jl "$1"); lb=$(jl "$2")
  rel=$(awk -v a="$la" -v b="$lb" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.2e", d / (b < 0 ? -b : b) }')
  res=$(awk -v r="$rel" 'BEGIN { print (r < 1e-4) ? "PASS" : "FAIL" }')
}
# its line, its count and its row of the summary (the row's first three cells given)
pair_row() {
  echo "   $1: test loss cuda ${la:-?} cpu ${lb:-?} rel err $rel: $res"
  [ "$res" = PASS ] || fails=$((fails + 1))
  echo "$2 | fp32 | $rel | - | 1.0e-04 | $res | - |" >> "$SUM"
}

# a cross model read at a longer context than trained (gmaeval --ctx-len, docs/cross.md):
# trained 4 steps on the GPU, evaluated at context 4096 on both backends (test loss within 1e-4)
ctx_check() {
  local X="$OUT/xctx" la lb rel res
  rm -rf "$X"
  echo "-- cross model: trained on cuda, gmaeval --ctx-len 4096 on cuda and cpu" | tee -a "$LOG"
  runs=$((runs + 1))
  if $BIN/gmatrain --config configs/xmqar_long_gma.json --out "$X/run" --device cuda --set train.steps=4 \
       --set train.checkpoint_every=4 --set train.eval_every=0 --set data.xmqar_test=64 --quiet >> "$LOG" 2>&1 &&
     $BIN/gmaeval --checkpoint "$X/run" --data test --ctx-len 4096 --batch 4 --batches 2 --device cuda \
       --json "$X/cuda.json" >> "$LOG" 2>&1 &&
     $BIN/gmaeval --checkpoint "$X/run" --data test --ctx-len 4096 --batch 4 --batches 2 --device cpu \
       --json "$X/cpu.json" >> "$LOG" 2>&1; then
    loss_pair "$X/cuda.json" "$X/cpu.json"
  else
    rel=-; res=ERROR
  fi
  pair_row "cross at ctx 4096" "| cross gma | cuda vs cpu | gmaeval --ctx-len 4096"
}
on ctx && ctx_check

# checkpoints cross devices: a few steps on the GPU, that checkpoint evaluated on both
# backends (test loss within 1e-4), then resumed on the CPU
xdev_check() {
  local X="$OUT/xdev" la lb rel res
  rm -rf "$X"
  echo "-- checkpoint: trained on cuda, evaluated on cuda and cpu, resumed on cpu" | tee -a "$LOG"
  local S=(--set train.steps=4 --set train.checkpoint_every=4 --set train.eval_every=0 --set train.batch_size=2
           --set data.recall_valid=8 --set data.recall_test=8)
  runs=$((runs + 1))
  if $BIN/gmatrain --config configs/quickstart.json --out "$X/run" --device cuda "${S[@]}" --quiet >> "$LOG" 2>&1 &&
     $BIN/gmaeval --checkpoint "$X/run" --data test --batch 2 --device cuda --json "$X/cuda.json" >> "$LOG" 2>&1 &&
     $BIN/gmaeval --checkpoint "$X/run" --data test --batch 2 --device cpu --json "$X/cpu.json" >> "$LOG" 2>&1 &&
     $BIN/gmatrain --resume "$X/run" --set train.steps=6 --device cpu --quiet >> "$LOG" 2>&1 && [ -d "$X/run/ckpt_00000006" ]; then
    loss_pair "$X/cuda.json" "$X/cpu.json"
  else
    rel=-; res=ERROR
  fi
  pair_row "checkpoint" "| checkpoint | cuda -> cpu | test loss, then resume on cpu"
  # generation from that checkpoint: sampled tokens (temperature 1, one seed) with incremental
  # decoding on the GPU and a full forward per token on the CPU; the same draws unless a
  # uniform number lands within rounding of a boundary between two tokens' probabilities
  if [ -x "$BIN/gmasample" ]; then
    runs=$((runs + 1))
    local ga gb G=(--checkpoint "$X/run" --prompt-ids "1 2 3 4" --tokens 40 --temperature 1 --seed 3)
    ga=$($BIN/gmasample "${G[@]}" --device cuda 2>>"$LOG"); gb=$($BIN/gmasample "${G[@]}" --device cpu --no-cache 2>>"$LOG")
    if [ -n "$ga" ] && [ "$ga" = "$gb" ]; then res=PASS; else res=FAIL; fails=$((fails + 1)); fi
    echo "   gmasample, incremental on cuda vs full forward on cpu: $res (cuda: $ga | cpu: $gb)" | tee -a "$LOG"
    echo "| gmasample | cuda vs cpu | 40 sampled tokens, incremental vs full forward | fp32 | - | - | same ids | $res | - |" >> "$SUM"
  fi
}
on xdev && xdev_check

# data-parallel on the GPU(s): bin/cuda-mpi/gmatrain (make cuda-mpi, when mpicc and mpirun
# are here) on 2 ranks against one process with twice the batch. The ranks take GPU
# (local rank mod GPU count): with one GPU they share it and the gradients go through host
# memory; with two or more, through NCCL. Then the same with GMA_NCCL=0.
dp_check() {
  local D="$OUT/data_parallel" line
  if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    echo "note: mpicc/mpirun not found: no data-parallel check on the GPU" | tee -a "$SUM"; return
  fi
  if [ $BUILD = 1 ]; then
    make -j"$(nproc)" cuda-mpi > "$OUT/build_cuda_mpi.log" 2>&1 ||
      { fails=$((fails + 1)); echo "make cuda-mpi FAILED (see $OUT/build_cuda_mpi.log)" | tee -a "$SUM"; return; }
  fi
  [ -x bin/cuda-mpi/gmatrain ] || { echo "note: bin/cuda-mpi/gmatrain not built: no data-parallel check" | tee -a "$SUM"; return; }
  echo "-- data-parallel: bin/cuda-mpi/gmatrain, 2 ranks vs 1 process" | tee -a "$LOG"
  runs=$((runs + 1))
  bash scripts/check_data_parallel.sh --bin bin/cuda-mpi/gmatrain --device cuda --out "$D" --steps 5 \
    --way "|" --way "GMA_NCCL=0|MPI through host memory" > "$D.txt" 2>&1 || fails=$((fails + 1))
  cat "$D.txt" | tee -a "$LOG"
  while read -r line; do echo "| data-parallel | 2 ranks vs 1 | $line | fp32 | - | - | 1.0e-05 | - | - |" >> "$SUM"; done \
    < <(grep "all-reduce by" "$D.txt")
}
[ "$BIN" = bin/cuda ] && on dp && dp_check

# the accuracy cost of each precision on a whole training run: the quickstart model trained
# on the GPU in fp32, tf32 and bf16 (same seed and data), test loss and accuracy beside the
# CPU's (not bounded: a record for docs/cuda.md)
prec_runs() {
  local p X="$OUT/prec" st
  rm -rf "$X"; echo "-- precision on a training run (configs/quickstart.json, 1000 steps)" | tee -a "$LOG"
  { echo; echo "| quickstart, 1000 steps | test loss | test acc |"; echo "|---|---|---|"; } >> "$SUM"
  for p in cpu fp32 tf32 bf16; do
    local dev=cuda prec=$p; [ $p = cpu ] && dev=cpu prec=fp32
    st=(--set train.steps=1000 --set train.eval_every=0 --set train.checkpoint_every=1000 --set precision=$prec)
    if $BIN/gmatrain --config configs/quickstart.json --out "$X/$p" --device $dev "${st[@]}" --quiet >> "$LOG" 2>&1; then
      local t; t=$(grep '"split":"test"' "$X/$p/metrics.jsonl" | tail -1)
      local l a; l=$(echo "$t" | grep -o '"loss":[-0-9.eE+]*' | cut -d: -f2); a=$(echo "$t" | grep -o '"acc":[-0-9.eE+]*' | cut -d: -f2)
      echo "   $dev $prec: test loss $l acc $a"; echo "| $dev $prec | $l | $a |" >> "$SUM"
    else
      fails=$((fails + 1)); echo "   $dev $prec: gmatrain failed (see $LOG)"; echo "| $dev $prec | ERROR | - |" >> "$SUM"
    fi
  done
}
[ $QUICK = 1 ] || ! on prec || prec_runs

# determinism: the same check twice prints the same numbers (fp32)
if on repeat; then
for m in $MIXERS; do
  case "$m" in gma|sdpa_ref) continue ;; esac
  for c in 1 0; do
    a=$(GMA_CUDA_SYNC=1 $BIN/gmacheck --device cuda --set model.mixer="$m" --set model.causal="$c" --steps 2 2>&1); ra=$?
    not_applicable $ra "$a" && continue
    b=$(GMA_CUDA_SYNC=1 $BIN/gmacheck --device cuda --set model.mixer="$m" --set model.causal="$c" --steps 2 2>&1)
    runs=$((runs + 1))
    if [ "$a" = "$b" ]; then echo "-- repeat $m causal=$c: identical" | tee -a "$LOG"
    else fails=$((fails + 1)); echo "-- repeat $m causal=$c: DIFFERS" | tee -a "$LOG"; echo "| $m | causal=$c | repeat | fp32 | - | - | - | DIFFERS | - |" >> "$SUM"; fi
  done
done
fi

if [ $SAN = 1 ] && on sanitize && command -v compute-sanitizer >/dev/null 2>&1; then
  # a sanitizer that cannot attach to this device (some virtualised machines) is a note, not a failure
  if compute-sanitizer --tool memcheck $BIN/gmacheck --device cuda --steps 1 --batch 1 --seq 16 --quiet 2>&1 |
     grep -q "Device not supported\|Error: Target application\|LibraryNotLoaded"; then
    echo "note: compute-sanitizer cannot run on this device: memcheck skipped" | tee -a "$SUM"; MIXERS_SAN=""
  else MIXERS_SAN=$MIXERS; fi
  memcheck() { # name gmacheck-args...
    local name=$1 rc res=PASS; shift
    echo "== compute-sanitizer memcheck: $name" | tee -a "$LOG"
    runs=$((runs + 1))
    compute-sanitizer --tool memcheck --error-exitcode 9 $BIN/gmacheck --device cuda --steps 1 --batch 2 --quiet "$@" \
      >> "$LOG" 2>&1
    rc=$?; [ $rc = 0 ] || { res=FAIL; fails=$((fails + 1)); }
    echo "   memcheck $name: rc $rc"
    echo "| $name | memcheck | 1 step, batch 2 | fp32 | - | - | rc 0 | $res (rc $rc) | - |" >> "$SUM"
  }
  for m in $MIXERS_SAN; do
    cz=1; $BIN/gmacheck --device cpu --set model.mixer=$m --steps 1 --batch 1 --seq 16 --quiet >/dev/null 2>&1 || cz=0
    memcheck "$m" --set model.mixer=$m --set model.causal=$cz --seq 100
  done
  # the encoder-decoder's layers (docs/cross.md), with gma among the mixers
  if echo " $MIXERS_SAN " | grep -q " gma "; then
    for cm in gma sdpa; do memcheck "cross $cm" --config configs/xmqar_long_$cm.json; done
  fi
fi

echo >> "$SUM"
echo "$runs checks, $fails failed. Full output: $LOG" >> "$SUM"

if [ $BENCH = 1 ]; then
  if [ -x "$BIN/gmabench" ] && "$BIN/gmabench" --help 2>&1 | grep -q -- '--device'; then
    echo "== gmabench --device cuda"
    SEQS=1024,2048,4096,8192,16384,32768,65536; [ $QUICK = 1 ] && SEQS=1024,4096,16384
    BMIX=sdpa; for m in gma linear performer; do echo " $MIXERS " | grep -q " $m " && BMIX="$BMIX,$m"; done
    "$BIN/gmabench" mixer --device cuda --mixers "$BMIX" --seq "$SEQS" --max-mem-gib 100 --json "$OUT/bench_mixer.json" 2>&1 |
      tee "$OUT/bench_mixer.txt"
    # one cross-attention layer, gma against sdpa, M = N queries (docs/cross.md)
    "$BIN/gmabench" cross --device cuda --seq "$SEQS" --max-mem-gib 100 --json "$OUT/bench_cross.json" 2>&1 |
      tee "$OUT/bench_cross.txt"
    # whole model: the WikiText-103 GMA config's shape when the config exists
    CFG=configs/wikitext103_gma_k256.json; MARGS="--Kc 256"
    if [ -f "$CFG" ]; then
      j() { grep -o "\"$1\": *[0-9]*" "$CFG" | head -1 | grep -o '[0-9]*$'; }
      for kv in "L n_layers" "D d_model" "H n_heads" "V vocab_size" "T seq_len" "B batch_size" "Kc n_components"; do
        set -- $kv; v=$(j "$2"); [ -n "$v" ] && [ "$v" != 0 ] && MARGS="$MARGS --$1 $v"
      done
    else
      echo "note: $CFG not found: whole-model bench with gmabench defaults and Kc 256" | tee -a "$SUM"
    fi
    # model FLOP utilisation against the datasheet's dense peak, for the H100/H200 SXM only
    peak() { case "$GPU" in *H100*SXM*|*H200*) case $1 in fp32) echo 67 ;; tf32) echo 495 ;; bf16) echo 989 ;; esac ;; esac; }
    for p in fp32 tf32 bf16; do
      PK=$(peak $p); PKA=(); [ -n "$PK" ] && PKA=(--peak-tflops "$PK")
      "$BIN/gmabench" model --device cuda --precision $p --mixers gma,sdpa $MARGS --steps 5 "${PKA[@]}" \
        --json "$OUT/bench_model_$p.json" 2>&1 | tee "$OUT/bench_model_$p.txt"
    done
    # generation: incremental decoding of 1, 8 and 64 sequences at once, and a full forward
    # per token at M = 1
    "$BIN/gmabench" decode --device cuda --mixers gma,sdpa,linear $MARGS --T 1024 --repeat 1 --full-forward --samples 1,8,64 \
      --json "$OUT/bench_decode.json" 2>&1 | tee "$OUT/bench_decode.txt"
    # the same model in PyTorch eager mode (scripts/torch_gma.py), when this python3 has torch and a GPU
    if python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
      echo "== PyTorch eager reference: self-check against gmaeval, then the same benchmark"
      PYTHON=python3 bash scripts/check_torch_ref.sh > "$OUT/torch_check.txt" 2>&1 ||
        { fails=$((fails + 1)); echo "torch reference check FAILED (see $OUT/torch_check.txt)" | tee -a "$SUM"; }
      tail -3 "$OUT/torch_check.txt"
      for p in fp32 tf32 bf16; do
        PK=$(peak $p); PKA=(); [ -n "$PK" ] && PKA=(--peak-tflops "$PK")
        python3 scripts/torch_gma.py --bench --config "$CFG" --device cuda --dtype $p --steps 5 --warmup 2 --repeat 3 "${PKA[@]}" \
          --json "$OUT/torch_model_$p.json" 2>&1 | tee "$OUT/bench_torch_$p.txt"
      done
    else
      echo "note: python3 with torch and CUDA not found: no PyTorch eager comparison" | tee -a "$SUM"
    fi
    { echo; echo "## gmabench --device cuda ($GPU)"; echo; echo '```'; cat "$OUT"/bench_*.txt 2>/dev/null; echo '```'; } >> "$SUM"
  else
    echo "gpu_check: $BIN/gmabench with --device not available: benchmarks skipped" | tee -a "$SUM"
  fi
fi

cat "$SUM"
[ $fails = 0 ]
