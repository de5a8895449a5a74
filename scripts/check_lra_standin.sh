#!/usr/bin/env bash
# check_lra_standin.sh: the checks behind the LRA dry run (run by `make test`, a few
# seconds). 1. The projection arithmetic of scripts/lra_dry_run.sh (--project) on lines
# whose values are known, and its refusal of a bad --dry-batch. 2. The stand-in data of
# scripts/lra_standin.sh in each task's own loader: one training step of a tiny model
# (--set on configs/lra_<task>_linear.json) on the listops, text, retrieval, image and
# pathfinder32 stand-ins, whose valid and test splits must hold the examples the
# generator wrote. Path-X's stand-in is the same generator and loader at 128 x 128 (too
# slow to make here). Exit 0 when every check passes, else 1 with one line per failure.
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0
bad() { echo "check_lra_standin: $*"; fail=1; }

# 1. projection: through (2, 1 s, 100 MiB) and (4, 3 s, 300 MiB) the line at 32 is 31 s, 3100 MiB
want() { local got; got=$(scripts/lra_dry_run.sh --project "${@:1:6}" 2>&1)
         [ "$got" = "$7" ] || bad "--project ${*:1:6}: got '$got', expected '$7'"; }
want 2 1.0 100 3.0 300 32 "31 3100"
want 4 10 500 18 900 4 "10 500"            # B = b: the measured point itself
want 1 0.5 2000 0.75 2100 64 "16.25 8300"  # slope 0.25 s and 100 MiB a sample
want 8 2 100 2 100 256 "2 100"             # flat: nothing grows with the batch
scripts/lra_dry_run.sh --dry-batch 0 > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || bad "--dry-batch 0: exit $rc, expected 2"
scripts/lra_dry_run.sh --steps 1 > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || bad "--steps 1: exit $rc, expected 2"

# 2. the stand-ins through their loaders
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! scripts/lra_standin.sh "$tmp/d" --n 2 --no-pathx > "$tmp/standin.log" 2>&1; then
  bad "lra_standin.sh failed: $(tail -1 "$tmp/standin.log")"; exit 1
fi
tiny=(--set model.d_model=16 --set model.n_heads=2 --set model.n_layers=1 --set model.d_ff=32
      --set model.qkv_dim=0 --set model.head_hidden=16 --set train.batch_size=2 --set train.steps=1
      --set train.eval_every=0 --set train.checkpoint_every=0 --set threads=1
      --set train.eval_drop_last=false) # the loaders' whole splits, partial batches too
# task, data path, valid and test examples the stand-in holds (image: half of 2 records, 2)
while read -r task path nv nt extra; do
  out="$tmp/run_$task"
  if ! bin/gmatrain --config "configs/lra_${task}_linear.json" --out "$out" --set "data.path=$tmp/d/$path" \
         "${tiny[@]}" $extra > "$out.log" 2>&1; then
    bad "$task: gmatrain on the stand-in failed: $(grep -v '^$' "$out.log" | tail -1)"; continue
  fi
  grep -q "^final step 1 | valid .* | $nv examples$" "$out.log" || bad "$task: valid split is not $nv examples"
  grep -q "^final step 1 | test .* | $nt examples$" "$out.log" || bad "$task: test split is not $nt examples"
done <<EOF
listops listops 4 4
text aclImdb_v1.tar.gz 4 4
retrieval lra_release/tsv_data 4 4 --set model.head_hidden2=8
image cifar-10-binary.tar.gz 1 2
pathfinder32 pathfinder32/curv_contour_length_14 4 4
EOF
[ $fail -eq 0 ] && echo "check_lra_standin: projection and 5 stand-in loaders ok"
exit $fail
