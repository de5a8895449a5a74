#!/usr/bin/env bash
# test_migrate.sh: scripts/migrate.sh end to end on a tiny teacher (run by `make test`, seconds).
# A 4-layer sdpa teacher (d_model 16, byte tokens, 6 steps) on a generated corpus; then
# 1. --dry-run: the plan's three phases, their layers and gmatrain commands, nothing trained;
#    a 2-layer teacher's phase 2 (the layers of phase 1) skipped and said so; --all-at-once;
# 2. bad options: one line naming the option, exit 2, nothing written;
# 3. a migration whose gates all pass: migration.json's three rows (layers replaced, Δppl
#    recomputed from the row's own perplexities, utilisation, speeds: the time to first token
#    of gmabench prefill and decoding tokens/s, gate passed), result
#    phase3, migration.md's table, the phase runs made with --init-from;
# 4. the rerun skips the finished phases (nothing retrained: the checkpoints' bytes unchanged)
#    and, with a phase 2 (phase 3) gate no model can pass, rolls back to phase 1 (phase 2)
#    naming the gate and the amount, exit 3;
# 5. a phase 1 gate no model can pass: one row, result the teacher, exit 3; --phases 1: one row;
#    a teacher trained on since: the rerun refused naming both checkpoints, --force starts again;
# 6. distillation by default (the KL in the phase's metrics, the teacher's digest in the phase's
#    distill.json; without train.distill: one line, exit 2);
# 7. attention transfer, one schedule, the control, --eval-batches: the transfer runs (their
#    per-layer loss in metrics.jsonl, migration.json and plots/transfer.dat, only the routing
#    changed), the phase taking the transfer's routing, phase 2 continuing phase 1's step and
#    schedule, the control's rows, the evaluations on 2 batches; utilisation a warning unless
#    --gate-util makes it a gate.
# Run from the repository root.
set -u
cd "$(dirname "$0")/.."
for p in gmatrain gmaeval gmabench gmadata; do
  [ -x bin/$p ] || { echo "SKIP: migrate: bin/$p not built"; exit 0; }
done
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }
jnum() { grep -o "\"$2\":[[:space:]]*[-0-9.eE+]*" "$1" | head -n 1 | sed -E 's/.*:[[:space:]]*//'; }

# the corpus: 12 "speeches" of 200 words, byte tokens
mkdir -p "$tmp/txt"
D="$tmp/txt" awk 'BEGIN { srand(3); split("the of and to a in that is we our nation people will for this year", w, " ")
  for (s = 0; s < 12; s++) { l = ""; for (i = 0; i < 200; i++) l = l (i ? " " : "") w[1 + int(rand() * 16)]
    f = s < 8 ? "train" : (s < 10 ? "valid" : "test"); if (n[f]++) print "" > (ENVIRON["D"] "/" f ".txt"); print l > (ENVIRON["D"] "/" f ".txt") } }'
bin/gmadata prepare "$tmp/txt" --tokenizer bytes --out "$tmp/shards" --quiet || bad "gmadata prepare"
cat > "$tmp/teacher.json" <<EOF
{ "name": "tiny_teacher", "seed": 1,
  "model": { "d_model": 16, "n_layers": 4, "n_heads": 2, "max_seq_len": 32, "mixer": "sdpa" },
  "gma": { "n_components": 4, "chunk": 16 },
  "train": { "steps": 6, "batch_size": 2, "seq_len": 32, "lr": 0.01, "warmup": 1, "eval_every": 0,
             "eval_batches": 2, "log_every": 1, "checkpoint_every": 0 },
  "data": { "source": "shards", "path": "$tmp/shards" } }
EOF
T=$tmp/teacher
bin/gmatrain --config "$tmp/teacher.json" --out "$T" --quiet --threads 1 || bad "the teacher trains"
common=(--teacher "$T" --data "$tmp/shards" --steps-per-phase 2 --threads 1 --bench-seq 16,32 --no-distill)
pass=(--gate-ppl-phase1 1000 --gate-ppl-phase2 1000 --gate-bench-phase3 1000 --gate-util 0)

before=$(ls -A | paste -sd' ' -)

# 1. the plan
out=$(scripts/migrate.sh "${common[@]}" --out "$tmp/dry" --dry-run 2>&1); rc=$?
[ $rc -eq 0 ] && [ ! -e "$tmp/dry" ] && [[ "$out" == *'phase 1: GMA in layers 3; model.mixer ["sdpa","sdpa","sdpa","gma"]'* ]] \
  && [[ "$out" == *'phase 2: GMA in layers 2 3; model.mixer ["sdpa","sdpa","gma","gma"]'* ]] \
  && [[ "$out" == *'phase 3: GMA in layers 0 1 2 3; model.mixer ["gma","gma","gma","gma"]'* ]] \
  && [ "$(printf '%s\n' "$out" | grep -c '^  bin/gmatrain --init-from ')" = 3 ] \
  && [[ "$out" == *"--init-from $tmp/dry/phase2 --out $tmp/dry/phase3"* ]] \
  && ok "--dry-run: three phases, their layers and commands, nothing written" || bad "--dry-run: exit $rc, '$out'"
[ "$(printf '%s\n' "$out" | grep -c -- '--set gma.window=64 ')" = 3 ] \
  && ok "--dry-run: the migrated layers keep a window of 64 by default" || bad "--dry-run: no gma.window=64 in every phase: '$out'"
w0=$(scripts/migrate.sh "${common[@]}" --out "$tmp/dry" --dry-run --window 0 2>&1)
w16=$(scripts/migrate.sh "${common[@]}" --out "$tmp/dry" --dry-run --window 16 2>&1)
[[ "$w0" != *gma.window* ]] && [ "$(printf '%s\n' "$w16" | grep -c -- '--set gma.window=16 ')" = 3 ] \
  && ok "--window 0: no window; --window 16: gma.window=16 in every phase" || bad "--window: '$w0' '$w16'"
out=$(scripts/migrate.sh "${common[@]/--no-distill/--freeze-kept}" --out "$tmp/dry" --dry-run 2>&1)
[[ "$out" == *"train.distill.teacher=$T"* ]] && [[ "$out" == *"'train.freeze=blocks.0.*,blocks.1.*,blocks.2.*'"* ]] \
  && ok "--dry-run: distillation by default, --freeze-kept freezes the kept blocks" || bad "--dry-run distill/freeze: '$out'"
# a 2-layer teacher: phase 2 would replace phase 1's layer again: skipped, said so
mkdir -p "$tmp/t2"; sed 's/"n_layers":[[:space:]]*4/"n_layers": 2/' "$T/config.json" > "$tmp/t2/config.json"
out=$(scripts/migrate.sh "${common[@]/$T/$tmp/t2}" --out "$tmp/dry" --dry-run 2>&1); rc=$?
[ $rc -eq 0 ] && [[ "$out" == *"phase 2: GMA in layers 1, the layers of phase 1 (2 layers): skipped"* ]] \
  && [ "$(printf '%s\n' "$out" | grep -c '^phase [13]: GMA in layers')" = 2 ] && [[ "$out" == *"--init-from $tmp/dry/phase1 --out $tmp/dry/phase3"* ]] \
  && ok "a 2-layer teacher: phase 2 skipped and said so, phase 3 from phase 1" || bad "2-layer plan: exit $rc, '$out'"
out=$(scripts/migrate.sh --teacher "$T" --data "$tmp/shards" --threads 1 --out "$tmp/dry" --dry-run --all-at-once --total-steps 7 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(printf '%s\n' "$out" | grep -c '^phase ')" = 1 ] && [[ "$out" == *'phase 3: GMA in layers 0 1 2 3; model.mixer ["gma","gma","gma","gma"]; steps 0-7 of 7'* ]] \
  && [[ "$out" == *"--init-from $T --out $tmp/dry/phase3 "* ]] && ok "--all-at-once: one phase, every layer, the whole budget" || bad "--all-at-once: exit $rc, '$out'"
# one schedule: phase K ends at K T / 3, warmup a tenth of a share, decay to T, the state of
# the phase before; --restart-schedule: each phase its own
out=$(scripts/migrate.sh --teacher "$T" --data "$tmp/shards" --threads 1 --out "$tmp/dry" --dry-run --total-steps 30 2>&1)
[[ "$out" == *"--out $tmp/dry/phase2 --quiet --threads 1 --set 'model.mixer=[\"sdpa\",\"sdpa\",\"gma\",\"gma\"]' --set data.path=$tmp/shards --set train.steps=20 --set train.warmup=1 --set train.schedule=cosine --set train.decay_steps=29 --set train.state_from=$tmp/dry/phase1 "* ]] \
  && [[ "$out" == *"steps 10-20 of 30"* ]] && ok "--total-steps 30: phase 2 steps 10-20 of one schedule, phase 1's state" || bad "one schedule: '$out'"
out=$(scripts/migrate.sh --teacher "$T" --data "$tmp/shards" --threads 1 --out "$tmp/dry" --dry-run --total-steps 30 --restart-schedule 2>&1)
[[ "$out" == *"--out $tmp/dry/phase2 "*"--set train.steps=10 --set train.warmup=1 --set train.schedule=cosine --set train.decay_steps=0 --set seed"* ]] \
  && [[ "$out" != *state_from* ]] && ok "--restart-schedule: each phase its own schedule, no state carried" || bad "restart: '$out'"

# 2. bad options
one_line() { # WHAT WANT ARGS...: exit 2, one line holding WANT, nothing in $tmp/bad
  local out rc; out=$(scripts/migrate.sh "${@:3}" --out "$tmp/bad" 2>&1 < /dev/null); rc=$?
  [ $rc -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && [[ "$out" == *"$2"* ]] && [ ! -e "$tmp/bad" ] \
    && ok "$1" || bad "$1: exit $rc, '$out'"
}
one_line "no --teacher" "--teacher RUN is required" --data "$tmp/shards"
one_line "a teacher without config.json" "$tmp/none/config.json: missing" --teacher "$tmp/none" --data "$tmp/shards"
one_line "data without shards" "$tmp/txt/train.bin: missing" --teacher "$T" --data "$tmp/txt"
one_line "--steps-per-phase 0" "--steps-per-phase must be a positive integer" "${common[@]}" --steps-per-phase 0
one_line "--phase2-against x" "--phase2-against must be phase1 or teacher" "${common[@]}" --phase2-against x
one_line "--bench-seq 1Q" "--bench-seq: '1Q' is not a length" "${common[@]}" --bench-seq 1Q
one_line "--gate-util -1" "--gate-util must be a number >= 0" "${common[@]}" --gate-util -1
one_line "--phases 4" "--phases must be 1, 2 or 3" "${common[@]}" --phases 4
one_line "--window x" "--window must be a whole number" "${common[@]}" --window x
one_line "--transfer-steps with a window over phases" "--transfer-steps with --window 64: only with --all-at-once or --phases 1" "${common[@]}" --transfer-steps 2
one_line "--total-steps with --steps-per-phase" "--total-steps and --steps-per-phase: give one of them" "${common[@]}" --total-steps 9
one_line "--transfer-steps x" "--transfer-steps must be a whole number" "${common[@]}" --transfer-steps x
one_line "--eval-batches -1" "--eval-batches must be a whole number" "${common[@]}" --eval-batches -1
one_line "--all-at-once with --phases" "--all-at-once runs one phase: --phases does not go with it" "${common[@]}" --all-at-once --phases 2
one_line "--total-steps below the phases" "--total-steps 2: fewer steps than the 3 phases run" --teacher "$T" --data "$tmp/shards" --total-steps 2
one_line "an unknown option, given a value: named, not \"needs a value\"" 'unknown option "--frobnicate" (see --help)' "${common[@]}" --frobnicate 1
one_line "a near miss of an option" 'unknown option "--teachr" (did you mean --teacher?)' --teachr "$T" --data "$tmp/shards"

# 3. every gate passes
M=$tmp/m
scripts/migrate.sh "${common[@]}" "${pass[@]}" --out "$M" > "$tmp/m.log" 2>&1; rc=$?
J=$M/migration.json
if [ $rc -eq 0 ] && [ -s "$J" ]; then
  rows=$(grep -c '^  {"phase"' "$J")
  r1=$(grep '^  {"phase": 1' "$J"); r2=$(grep '^  {"phase": 2' "$J"); r3=$(grep '^  {"phase": 3' "$J")
  [ "$rows" = 3 ] && [[ "$r1" == *'"layers_replaced": [3]'* ]] && [[ "$r2" == *'"layers_replaced": [2,3]'* ]] \
    && [[ "$r3" == *'"layers_replaced": [0,1,2,3]'* ]] && [[ "$r3" == *'"gate_passed": true'* ]] \
    && grep -q '"result": "phase3"' "$J" && [ "$(readlink "$M/result")" = phase3 ] \
    && ok "all gates pass: three rows, layers 3 / 2,3 / 0..3, result phase3" || bad "rows: '$(cat "$J")'"
  # the row's Δppl from its own perplexity and the teacher's (the teacher's own gmaeval)
  tv=$(jnum "$M/teacher.valid.json" ppl); v3=$(jnum "$M/phase3/valid.json" ppl)
  want=$(awk -v a="$v3" -v b="$tv" 'BEGIN { printf "%.3f", 100 * (a / b - 1) }')
  [[ "$r3" == *"\"dppl_teacher_pct\": $want,"* ]] && [ "$(jnum "$J" teacher_valid_ppl)" = "$tv" ] \
    && ok "Δppl of phase 3: $want % from its valid ppl and the teacher's" || bad "Δppl: want $want in '$r3'"
  [[ "$r3" == *'"utilisation": [{"layer": 0, "utilised_fraction": '*'{"layer": 1, "utilised_fraction": '* ]] \
    && [[ "$r1" == *'"utilisation": [{"layer": 3, '* ]] && ok "utilisation: a figure for every GMA layer" || bad "utilisation: '$r3'"
  [[ "$r3" =~ \"speeds\":\ \{\"16\":\ \{\"ttft_ms\":\ [0-9.]+,\ \"decode_tokens_per_s\":\ [0-9.]+\},\ \"32\":\ \{\"ttft_ms\":\ [0-9.]+, ]] \
    && [ "$(grep -c '"ttft_s":' "$M/phase3/prefill.json" 2> /dev/null)" = 2 ] \
    && ok "speeds at --bench-seq 16,32: time to first token (gmabench prefill) and decoding" || bad "speeds: '$r3'"
  # the row's time to first token is the one of the phase's own prefill.json
  t16=$(awk '/"N":/ { n = $0; gsub(/[^0-9]/, "", n) } n == 16 && /"ttft_s":/ { v = $0; gsub(/.*"ttft_s":[ \t]*|,.*/, "", v); printf "%.2f", 1e3 * v; exit }' "$M/phase3/prefill.json" 2> /dev/null)
  [ -n "$t16" ] && [[ "$r3" == *"\"16\": {\"ttft_ms\": $t16,"* ]] && [ "$(grep -c '"ttft_s":' "$M/teacher.bench/prefill.json" 2> /dev/null)" = 2 ] \
    && ok "ttft of phase 3 at 16 from its prefill.json ($t16 ms); the teacher's measured beside it" || bad "ttft: want $t16 in '$r3'"
  want=$(for n in 16 32; do m=$(echo "$r3" | sed -E "s/.*\"$n\": \{\"ttft_ms\": ([0-9.]+), \"decode_tokens_per_s\": ([0-9.]+).*/\1 \2/")
    awk -v a="${m% *}" -v b="${m#* }" 'BEGIN { printf " %s | %.1f |", a, b }'; done)
  grep -qF "| phase 3 |$want" "$M/migration.md" && ok "migration.md's speed row of phase 3: each length's own figures" \
    || bad "speed row: want '| phase 3 |$want' in '$(grep '^| phase 3 |' "$M/migration.md")'"
  grep '"mapped"' "$M/phase1/init_from.json" | grep -q '"blocks.3.mixer.q.weight <- blocks.3.mixer.q.weight"' \
    && tr -d '\n\t' < "$M/phase1/init_from.json" | grep -q '"kmeans_seeded":.\{0,2\}\["blocks.3.mixer"\]' \
    && grep -q '"mixer":.\["sdpa", "sdpa", "sdpa", "gma"\]' "$M/phase1/config.json" \
    && ok "phase 1 made with --init-from the teacher (q/k/v/o of the replaced attention, routing seeded by k-means)" || bad "phase 1's init_from.json: '$(head -c 300 "$M/phase1/init_from.json")'"
  tr -d ' \n\t' < "$M/phase1/config.json" | grep -q '"gma":{[^}]*"window":64' \
    && tr -d ' \n\t' < "$M/phase1/init_from.json" | grep -q 'blocks.3.mixer.gma.window_gate' \
    && ok "phase 1 trained with the window of 64 (gma.window), its gate new" || bad "phase 1 without gma.window 64"
  [ "$(grep -c '^| [123] |' "$M/migration.md")" = 3 ] && grep -q 'Result: \*\*phase3\*\*' "$M/migration.md" \
    && ok "migration.md: a table row per phase and the result" || bad "migration.md: '$(cat "$M/migration.md")'"
  [ -f "$M/plots/phase1.train.dat" ] && [ -f "$M/plots/phase3.train.dat" ] && [ -f "$M/plots/plots.gp" ] \
    && ok "loss curves of all phases (plot data; PNGs where gnuplot is)" || bad "plots: $(ls "$M/plots" 2>&1 | paste -sd' ' -)"

  # 4. rerun: finished phases skipped; a phase 2 gate nobody passes rolls back to phase 1
  sum=$(cat "$M"/phase*/ckpt_*/model.safetensors | cksum)
  scripts/migrate.sh "${common[@]}" "${pass[@]}" --gate-ppl-phase2 -1000 --out "$M" > "$tmp/m2.log" 2>&1; rc=$?
  r2=$(grep '^  {"phase": 2' "$J")
  [ $rc -eq 3 ] && [ "$(grep -c 'finished in .*skipped' "$tmp/m2.log")" = 2 ] && [ "$(cat "$M"/phase*/ckpt_*/model.safetensors | cksum)" = "$sum" ] \
    && grep -q '"result": "phase1"' "$J" && [ "$(grep -c '^  {"phase"' "$J")" = 2 ] && [[ "$r2" == *'"gate_passed": false'* ]] \
    && grep -q 'phase 2: ppl FAILED: valid perplexity .* is .* % over phase 1.s .* (gate < -1000 %)' "$tmp/m2.log" \
    && [ "$(readlink "$M/result")" = phase1 ] \
    && ok "rerun: finished phases skipped, a failed phase 2 gate rolls back to phase 1 (named, by how much), exit 3" \
    || bad "rerun with --gate-ppl-phase2 -1000: exit $rc, '$(cat "$tmp/m2.log")'"
  scripts/migrate.sh "${common[@]}" "${pass[@]}" --gate-bench-phase3 -1000 --out "$M" > "$tmp/m3.log" 2>&1; rc=$?
  [ $rc -eq 3 ] && grep -q '"result": "phase2"' "$J" && [ "$(grep -c '^  {"phase"' "$J")" = 3 ] \
    && grep -q 'phase 3: valid_ppl FAILED: .* is .* % worse than the teacher.s .* (gate < -1000 %);test_ppl FAILED: .*;valid_acc FAILED: ' "$tmp/m3.log" \
    && ok "a failed phase 3 benchmark gate rolls back to phase 2, each benchmark named" || bad "phase 3 rollback: exit $rc, '$(cat "$tmp/m3.log")'"
  grep -q '^valid_ppl passed$' "$M/phase3/gates.txt" 2> /dev/null && bad "phase3/gates.txt not rewritten" || true
  out=$(scripts/migrate.sh "${common[@]}" --steps-per-phase 3 --out "$M" 2>&1); rc=$?
  [ $rc -eq 2 ] && [[ "$out" == *"$M/phase1 was made with other options"* ]] \
    && ok "a rerun with another training plan refused in one line" || bad "other plan: exit $rc, '$out'"
  # the teacher trained on (its latest checkpoint moves from step 6 to 8): a rerun refuses
  # in one line naming both checkpoints, nothing changed; --force migrates again from it
  grep -q '"teacher_checkpoint": {"checkpoint": "[^"]*ckpt_00000006", "step": 6, "sha256": "[0-9a-f]\{64\}"}' "$J" \
    && ok "migration.json records the teacher's checkpoint, step and digest" || bad "teacher record: '$(head -2 "$J")'"
  bin/gmatrain --resume "$T" --set train.steps=8 --quiet --threads 1 || bad "the teacher trains on"
  sum=$(cat "$M"/phase*/ckpt_*/model.safetensors "$M/teacher.valid.json" | cksum)
  out=$(scripts/migrate.sh "${common[@]}" "${pass[@]}" --out "$M" 2>&1); rc=$?
  [ $rc -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && [[ "$out" == *"the teacher changed since $M was made: "*"ckpt_00000008 (step 8, sha256 "*"ckpt_00000006 (step 6, sha256 "*"--force"* ]] \
    && [ "$(cat "$M"/phase*/ckpt_*/model.safetensors "$M/teacher.valid.json" | cksum)" = "$sum" ] \
    && ok "a teacher trained on since: the rerun refused in one line naming both checkpoints, nothing changed" \
    || bad "moved teacher: exit $rc, '$out'"
  scripts/migrate.sh "${common[@]}" "${pass[@]}" --out "$M" --force > "$tmp/m8.log" 2>&1; rc=$?
  bin/gmaeval --checkpoint "$T" --data "$tmp/shards/valid.bin" --threads 1 --json "$tmp/t8.json" > /dev/null 2>&1
  tv8=$(jnum "$tmp/t8.json" ppl)
  [ $rc -eq 0 ] && grep -q '"teacher_checkpoint": {"checkpoint": "[^"]*ckpt_00000008", "step": 8,' "$M/migration.json" \
    && [ "$(jnum "$M/migration.json" teacher_valid_ppl)" = "$tv8" ] && [ "$(grep -c 'finished in .*skipped' "$tmp/m8.log")" = 0 ] \
    && ok "--force after the teacher changed: its figures ($tv8) and every phase made again from the new checkpoint" \
    || bad "--force, moved teacher: exit $rc, want teacher ppl $tv8, '$(tail -3 "$tmp/m8.log")'"
else
  bad "migrate.sh: exit $rc, '$(tail -5 "$tmp/m.log")'"
fi

# 5. a phase 1 gate nobody passes: the teacher is the result
scripts/migrate.sh "${common[@]}" "${pass[@]}" --gate-ppl-phase1 -1000 --no-bench --out "$tmp/m1" > "$tmp/m1.log" 2>&1; rc=$?
J=$tmp/m1/migration.json
[ $rc -eq 3 ] && [ "$(grep -c '^  {"phase"' "$J" 2> /dev/null)" = 1 ] && grep -q '"result": "teacher"' "$J" && [ ! -e "$tmp/m1/phase2" ] \
  && grep -q '"speeds": null' "$J" && grep -q 'phase 1: ppl FAILED' "$tmp/m1.log" \
  && ok "a failed phase 1 gate: one row, the teacher is the result, phase 2 never started" || bad "phase 1 rollback: exit $rc, '$(tail -3 "$tmp/m1.log")'"

# --phases 1: phase 1 alone, its row (a later rerun without it goes on from there)
scripts/migrate.sh "${common[@]}" "${pass[@]}" --no-bench --phases 1 --out "$tmp/p1" > "$tmp/p1.log" 2>&1; rc=$?
[ $rc -eq 0 ] && [ "$(grep -c '^  {"phase"' "$tmp/p1/migration.json" 2> /dev/null)" = 1 ] && grep -q '"result": "phase1"' "$tmp/p1/migration.json" \
  && [ ! -e "$tmp/p1/phase2" ] && ok "--phases 1: one phase, one row" || bad "--phases 1: exit $rc, '$(tail -3 "$tmp/p1.log")'"

# 6. distillation: by default, from the teacher (the KL in the phase's metrics); a gmatrain
# without train.distill refuses it in one line
if bin/gmatrain --config-reference | grep -q 'train.distill'; then
  scripts/migrate.sh --teacher "$T" --data "$tmp/shards" --steps-per-phase 2 --threads 1 --no-bench --gate-ppl-phase1 -1000 \
    --out "$tmp/dist" > "$tmp/dist.log" 2>&1; rc=$?
  [ $rc -eq 3 ] && grep -q '"kl":' "$tmp/dist/phase1/metrics.jsonl" && grep -q "\"teacher\":.\"$T\"" "$tmp/dist/phase1/config.json" \
    && grep -q "\"sha256\":.\"$(sha256sum "$T/latest/model.safetensors" | cut -d' ' -f1)\"" "$tmp/dist/phase1/distill.json" \
    && ok "distillation from the teacher by default (KL logged)" || bad "distillation: exit $rc, '$(tail -3 "$tmp/dist.log")'"
else
  out=$(scripts/migrate.sh --teacher "$T" --data "$tmp/shards" --out "$tmp/nd" 2>&1); rc=$?
  [ $rc -eq 2 ] && [[ "$out" == *"no train.distill"* ]] && [ ! -e "$tmp/nd" ] && ok "no train.distill: one line, exit 2" || bad "no distill: exit $rc, '$out'"
fi
# 7. attention transfer (3 steps before each phase), one schedule over 4 steps (phase 1 steps
# 0-2, phase 2 steps 2-4), the control, the evaluations on the first 2 batches
X=$tmp/x
xcommon=(--teacher "$T" --data "$tmp/shards" --total-steps 4 --threads 1 --no-distill --window 0)
scripts/migrate.sh "${xcommon[@]}" --phases 2 --transfer-steps 3 --control --eval-batches 2 --no-bench \
  --gate-ppl-phase1 1000 --gate-ppl-phase2 1000 --util-warn 1000 --out "$X" > "$tmp/x.log" 2>&1; rc=$?
J=$X/migration.json
tr1=$(grep -o '"transfer":{[^}]*}' "$X/phase1.transfer/metrics.jsonl" 2> /dev/null | head -n 1)
tr2=$(grep -o '"transfer":{[^}]*}' "$X/phase2.transfer/metrics.jsonl" 2> /dev/null | head -n 1)
[ $rc -eq 0 ] && [[ "$tr1" =~ ^\"transfer\":\{\"3\":[0-9.e-]+\}$ ]] && [[ "$tr2" =~ ^\"transfer\":\{\"2\":[0-9.e-]+\}$ ]] \
  && grep -q '"mixer":.\["sdpa", "sdpa", "sdpa", "auto"\]' "$X/phase1.transfer/config.json" 2> /dev/null \
  && grep -q '"mixer":.\["sdpa", "sdpa", "auto", "gma"\]' "$X/phase2.transfer/config.json" \
  && grep -q '^  {"phase": 1, .*"transfer": {"steps": 3, "layers": \[{"layer": 3, "first": [0-9.e-]*, "last": [0-9.e-]*}\]}' "$J" \
  && [ "$(awk '$1 == 2 && $2 == 2' "$X/plots/transfer.dat" | wc -l)" = 3 ] && [ -s "$X/plots/transfer.gp" ] \
  && ok "attention transfer: the new layers as auto, their loss per layer logged, in migration.json and plots/transfer.dat" \
  || bad "transfer: exit $rc, '$tr1' '$tr2', '$(tail -3 "$tmp/x.log")'"
# only the new layer's routing changed in the transfer; the phase took that routing (copied)
sha_of() { # RUN TENSOR: the bytes of TENSOR in RUN/latest/model.safetensors, digested
  python3 - "$1/latest/model.safetensors" "$2" << 'PY'
import json, struct, sys, hashlib
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]; h = json.loads(f.read(n)); e = h[sys.argv[2]]
f.seek(8 + n + e["data_offsets"][0]); print(hashlib.sha256(f.read(e["data_offsets"][1] - e["data_offsets"][0])).hexdigest())
PY
}
if command -v python3 > /dev/null; then
  [ "$(sha_of "$T" blocks.3.mixer.q.weight)" = "$(sha_of "$X/phase1.transfer" blocks.3.mixer.q.weight)" ] \
    && [ "$(sha_of "$T" blocks.0.mlp.fc.weight)" = "$(sha_of "$X/phase1.transfer" blocks.0.mlp.fc.weight)" ] \
    && [ "$(sha_of "$T" blocks.3.mlp.fc.weight)" = "$(sha_of "$X/phase1.transfer" blocks.3.mlp.fc.weight)" ] \
    && tr -d '\n\t' < "$X/phase1/init_from.json" | grep -q '"copied":.*"blocks.3.mixer.gma.mu"' \
    && ! tr -d '\n\t' < "$X/phase1/init_from.json" | grep -q '"kmeans_seeded":.\{0,2\}\["blocks.3' \
    && ok "the transfer changed no q, k or MLP weight; phase 1 copied its routing (not re-seeded)" || bad "transfer weights: '$(head -c 400 "$X/phase1/init_from.json")'"
else
  echo "SKIP: the transfer's weights (no python3 to read the tensors)"
fi
# one schedule: phase 2 continues phase 1's step (its first row is step 3), its state_from
# phase 1, ends at step 4; the control alike; the evaluations on 2 batches of 2 x 32 tokens
[ "$(grep -o '"step":[0-9]*' "$X/phase2/metrics.jsonl" | head -n 1)" = '"step":3' ] && [ -d "$X/phase2/ckpt_00000004" ] \
  && grep -q "\"state_from\":.\"$X/phase1\"" "$X/phase2/config.json" && grep -q '"decay_steps":.4' "$X/phase2/config.json" \
  && grep -q "\"state_from\":.\"$X/control/phase1\"" "$X/control/phase2/config.json" && [ -d "$X/control/phase2/ckpt_00000004" ] \
  && ok "one schedule: phase 2 steps 2-4 from phase 1's state, the control alike" || bad "schedule: '$(head -c 300 "$X/phase2/metrics.jsonl")'"
cv=$(jnum "$X/control/phase1/valid.json" ppl); v1=$(jnum "$X/phase1/valid.json" ppl)
want=$(awk -v a="$v1" -v b="$cv" 'BEGIN { printf "%.3f", 100 * (a / b - 1) }')
grep -q "^  {\"phase\": 1, .*\"control_valid_ppl\": $cv, .*\"dppl_control_pct\": $want," "$J" \
  && [ "$(jnum "$X/phase1/valid.json" tokens)" = 128 ] && [ "$(jnum "$X/teacher.valid.json" tokens)" = 128 ] && [ "$(jnum "$X/phase1/test.json" tokens)" = 128 ] \
  && grep -q '\[1/2\] phase 1: gate evaluations (the first 2 batches, the control.s too)' "$tmp/x.log" \
  && ok "the control's valid ppl ($cv) and Δppl ($want %) in the row; evaluations of 2 batches (128 tokens), a progress line" \
  || bad "control/eval: want $cv, $want in '$(grep '"phase": 1' "$J")', log '$(cat "$tmp/x.log")'"
# utilisation: a warning (not a gate) by default, even at a threshold nothing meets; a gate with --gate-util
grep -q '^utilisation warning (not a gate): only 0.0 % of the (head, component) pairs' "$X/phase1/gates.txt" \
  && grep -q '"result": "phase2"' "$J" && ok "utilisation below --util-warn: a warning line, the phases pass" || bad "util warn: '$(cat "$X/phase1/gates.txt")'"
scripts/migrate.sh "${xcommon[@]}" --phases 2 --transfer-steps 3 --control --eval-batches 2 --no-bench \
  --gate-ppl-phase1 1000 --gate-ppl-phase2 1000 --gate-util 1000 --out "$X" > "$tmp/x2.log" 2>&1; rc=$?
[ $rc -eq 3 ] && grep -q 'phase 1: utilisation FAILED: only 0.0 % of the (head, component) pairs of a GMA layer hold >= 1000 %' "$tmp/x2.log" \
  && [ "$(grep -c 'finished in .*skipped' "$tmp/x2.log")" = 1 ] && ok "--gate-util: utilisation a gate again (a rerun, nothing retrained)" || bad "--gate-util: exit $rc, '$(cat "$tmp/x2.log")'"
[ "$(ls -A | paste -sd' ' -)" = "$before" ] && ok "nothing written into the working directory" || bad "new files here: $(ls -A | paste -sd' ' -)"
exit $fail
