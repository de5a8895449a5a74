#!/usr/bin/env bash
# check_torch_ref.sh: check the PyTorch eager reference scripts/torch_gma.py against gma on
# the CPU (about 30 s on 2 cores).
#
#   scripts/check_torch_ref.sh          (PYTHON=python3 by default: a Python with torch)
#
# 1. The config defaults the script uses equal the C programs' (bin/gmatrain --config-reference).
# 2. bin/gmatrain trains three tiny causal models for 300 steps on the embedded recall task
#    (configs/quickstart.json): gma with non-default eps, temperature, var_floor and d_ff;
#    sdpa; and a [sdpa, gma] hybrid with shared components, no position embedding, no MLP
#    and chunk 8. torch_gma.py --check compares gmaeval's loss on a batch of random tokens
#    with the torch forward on the same tokens, and every query responsibility of the GMA
#    layers (bound 1e-4 on both), at the training length 64 and at a length that is not a
#    multiple of the chunk. (Trained weights matter: after 60 steps the mixers barely move
#    the loss and a causal mask without its diagonal changed it by only 4e-5.)
# 3. The check must be able to fail: the gma model checked with gma.eps set back to its
#    default on the torch side must be reported as a mismatch (exit 1).
# 4. A 2-step torch_gma.py --bench --device cpu smoke per mixer; the gmabench command it
#    prints for the same shapes is run, and both must report the same parameter count and
#    the same FLOPs per step.
# Exit: 0 all agree, 1 a mismatch or a failed step, 2 no torch or no build.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-python3}
if ! "$PY" -c 'import torch' 2>/dev/null; then
    echo "check_torch_ref: $PY cannot import torch (install PyTorch, or set PYTHON to a Python that has it)"
    exit 2
fi
for b in gmatrain gmaeval gmabench; do
    [ -x bin/$b ] || { echo "check_torch_ref: bin/$b missing: run make first"; exit 2; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/check_torch_ref.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
runs=0 fails=0
verdict() { # verdict NAME STATUS [EXPECTED_STATUS]
    runs=$((runs + 1))
    if [ "$2" != "${3:-0}" ]; then fails=$((fails + 1)); echo "FAILED: $1 (exit $2, expected ${3:-0})"; fi
}
ref() { "$PY" scripts/torch_gma.py "$@"; }

echo "== defaults"
bin/gmatrain --config-reference | ref --check-defaults -
verdict defaults $?

echo "== training three tiny models (bin/gmatrain, 300 steps each)"
train() { # train NAME --set ...
    local name=$1; shift
    bin/gmatrain --config configs/quickstart.json --out "$TMP/$name" --set model.short_conv=0 --set train.steps=300 --set train.eval_every=0 \
        --set train.checkpoint_every=0 --set gma.monitor_every=0 "$@" > "$TMP/$name.log" 2>&1
    local rc=$?
    echo "$name: $(grep -m1 '^gmatrain:' "$TMP/$name.log") | $(grep 'final step.*test' "$TMP/$name.log")"
    [ $rc = 0 ] || tail -3 "$TMP/$name.log"
    verdict "gmatrain $name" $rc
}
train gma --set model.d_ff=96 --set gma.eps=0.01 --set gma.temperature=0.8 --set gma.var_floor=0.01
train sdpa --set model.mixer=sdpa
train hybrid --set model.mixer=sdpa,gma --set gma.shared_components=true --set model.pos=none \
    --set model.mlp=false --set gma.chunk=8 --set model.causal=1

echo "== torch_gma.py --check (gmaeval loss vs the torch forward on the same tokens)"
for name in gma sdpa hybrid; do
    [ -e "$TMP/$name/latest" ] || continue
    ref --check "$TMP/$name"; verdict "check $name" $?
    ref --check "$TMP/$name" --seq 37 --batch 3 --seed 1; verdict "check $name --seq 37" $?
done
if [ -e "$TMP/gma/latest" ]; then
    echo "== the check must fail on a wrong detail (torch side with gma.eps 1e-6, the model has 0.01)"
    ref --check "$TMP/gma" --set gma.eps=1e-6; verdict "deliberate mismatch" $? 1
fi

echo "== torch_gma.py --bench --device cpu smoke, and gmabench model on the same shapes"
for mixer in gma sdpa; do
    ref --bench --config configs/quickstart.json --set model.mixer=$mixer --set model.short_conv=0 --set model.vocab_size=512 --batch 2 \
        --seq 64 --steps 2 --warmup 1 --repeat 1 --json "$TMP/torch_$mixer.json" | tee "$TMP/torch_$mixer.txt"
    verdict "bench $mixer" "${PIPESTATUS[0]}"
    gb=$(sed -n 's/^# gma on the same shapes: //p' "$TMP/torch_$mixer.txt")
    [ -n "$gb" ] || continue
    $gb --json "$TMP/gma_$mixer.json" > "$TMP/gma_$mixer.txt" 2>&1
    verdict "gmabench $mixer" $?
    "$PY" - "$TMP/torch_$mixer.json" "$TMP/gma_$mixer.json" <<'EOF'
import json, sys
t, g = (json.load(open(p)) for p in sys.argv[1:])
g = g["model"][0]
ok = t["params"] == g["params"] and abs(t["gemm_gflop_per_step"] - g["gemm_gflop_per_step"]) <= 1e-9 * g["gemm_gflop_per_step"]
print(f"{g['mixer']}: parameters torch {t['params']} gma {g['params']:.0f} | GFLOP per step torch "
      f"{t['gemm_gflop_per_step']:.6f} gma {g['gemm_gflop_per_step']:.6f} | {'same' if ok else 'DIFFERENT'}")
sys.exit(0 if ok else 1)
EOF
    verdict "bench counts $mixer" $?
done

echo "check_torch_ref: $runs checks, $fails failed"
[ $fails = 0 ]
