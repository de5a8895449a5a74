#!/usr/bin/env bash
# migrate.sh: a trained transformer moved to GMA in three phases, each phase gated; a failed
# gate rolls back to the last passing phase (docs/migration.md).
#   scripts/migrate.sh --teacher RUN --data DIR [--total-steps N | --steps-per-phase N] [--out DIR]
#                      [--name NAME] [--seed S] [--lr X] [--threads N] [--set key=value ...]
#                      [--transfer-steps N] [--transfer-lr X] [--transfer-qk] [--all-at-once]
#                      [--restart-schedule] [--control] [--eval-batches N] [--no-distill]
#                      [--distill-weight W] [--distill-temperature T] [--freeze-kept]
#                      [--bench-seq LIST] [--quick] [--no-bench] [--gate-ppl-phase1 PCT]
#                      [--gate-ppl-phase2 PCT] [--phase2-against phase1|teacher]
#                      [--gate-bench-phase3 PCT] [--gate-util PCT] [--util-warn PCT] [--keep-going]
#                      [--phases P] [--force] [--dry-run] [--window W] [--help]
#   --teacher RUN        the trained run to migrate (its config.json and latest checkpoint); its
#                        model.mixer one attention mixer (e.g. "sdpa"), at least 2 layers
#   --data DIR           token shards (gmadata prepare: DIR/train.bin, valid.bin, test.bin) of the
#                        teacher's tokenizer: fine-tuning on train, the gates on valid and test
#   --total-steps N      fine-tuning steps of all phases together, each phase an equal share (the
#                        last one the rest); default 200 a phase
#   --steps-per-phase N  the same as --total-steps N x the number of phases run
#   --out DIR            where everything goes (default runs/NAME)
#   --name NAME          default migrate-<the teacher's folder name>
#   --seed S             train seed of every phase (default 1337)
#   --lr X               peak learning rate of the fine-tuning (default 5e-4; warmup a tenth of the
#                        first phase's share, then one cosine decay to the end of the last phase)
#   --threads N          threads of training, evaluation and benchmarks (default 2)
#   --set key=value      one more config key for every run (repeatable), e.g. gma.n_components=16
#   --window W           the migrated layers keep an exact softmax window over the last W tokens
#                        beside their GMA path (gma.window, docs/model.md §3.11; default 64, 0 = none)
#   --transfer-steps N   before each phase, N steps of attention transfer (default 0: none): the
#                        layers the phase replaces learn to match their softmax attention's head
#                        outputs, fed the softmax model's activations, only their GMA routing
#                        learning, no language-model loss (docs/migration.md)
#   --transfer-lr X      learning rate of the attention transfer (default 1e-2, constant)
#   --transfer-qk        the replaced layers' q and k projections learn in the transfer too
#   --all-at-once        one phase that replaces every layer (the gates of phase 3)
#   --restart-schedule   every phase starts with a fresh optimiser and its own schedule (by default
#                        the phases carry the optimiser moments and follow one schedule)
#   --control            also fine-tune the teacher itself the same steps on the same data, phase by
#                        phase: the gates measure against it at the same step instead of the teacher
#   --eval-batches N     the gates' evaluations (and each run's closing scores) on the first N
#                        batches of the valid and test splits (default 0: the whole splits)
#   --no-distill         fine-tune on the cross-entropy alone (default: distillation from the
#                        teacher, train.distill, weight 0.5, temperature 2)
#   --distill-weight W, --distill-temperature T   the distillation's w and T
#   --freeze-kept        also freeze the blocks a phase keeps as they were (train.freeze); off
#                        by default
#   --bench-seq LIST     prompt lengths of the speed measurements (default 1K,4K,16K): the time
#                        to the first token (gmabench prefill) and decoding (gmabench decode) of
#                        each phase's model.mixer at the teacher's shape (random weights)
#   --quick              decoding speed only at the shortest length (the prefill at all)
#   --no-bench           no speed measurements (their columns "-")
#   --gate-ppl-phase1 PCT   phase 1 passes when valid perplexity rises less than PCT % over the
#                        teacher's (default 2)
#   --gate-ppl-phase2 PCT   phase 2: less than PCT % over --phase2-against (default 1, phase1)
#   --gate-bench-phase3 PCT phase 3: no benchmark (valid and test perplexity, valid next-token
#                        accuracy) more than PCT % worse than the teacher's (default 3)
#   --gate-util PCT      make utilisation a gate: every GMA layer's every (head, component) share of
#                        the tokens at least PCT % of the uniform share 1/K (default: no gate)
#   --util-warn PCT      the warning line's threshold, the same measure (default 5)
#   --keep-going         run every phase even after a failed gate (the result is still the last
#                        phase before the first failure): the full picture for a report
#   --phases P           run the first P phases only (1, 2 or 3; default 3): the rows of those
#   --force              start again what a rerun would refuse: a phase made with other options
#                        (and the phases after it), or everything when the teacher changed
#   --dry-run            print the plan (phases, layers, commands) and exit 0
# A phase whose layers are the previous phase's (phase 2 of a teacher of 2 or 3 layers) is
# skipped, and said so. Writes OUT/teacher.valid.json, OUT/phase<K>/ (the run, valid.json,
# test.json, analysis.json, prefill.json, decode_<N>.json, gates.txt), OUT/phase<K>.transfer/
# (the attention transfer's run), OUT/control/phase<K>/ (with --control), OUT/migration.json
# (one row per phase), OUT/teacher.bench/ (the teacher's prefill.json, decode_<N>.json),
# OUT/migration.md, OUT/plots/ (the loss curves of all phases, scripts/plot_runs.sh, and the
# attention transfer's loss per layer, transfer.dat and transfer.png; PNGs skipped without
# gnuplot) and OUT/result (a link to the resulting phase, or to the teacher).
# A rerun with the same options skips the phases already finished with their outputs intact
# (a phase stopped midway is resumed from its checkpoint); other options: one line, exit 2
# (docs/reproducing.md, "Reruns"). The teacher's checkpoint (its step and the SHA-256 of its
# model.safetensors) is recorded in OUT/teacher.json and migration.json; a rerun after the
# teacher changed (trained on: its latest checkpoint moved) is refused in one line naming
# both, unless --force: then its figures and every phase are made again from the new one.
# Exit: 0 every phase run passed, 3 a gate failed (the result is an earlier phase), 2 bad input,
# 1 a program failed.
{ # the whole script in one group: bash reads it all before running it, so an edit of this
  # file cannot change a migration under way
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh
teacher=""; data=""; steps=""; total=""; out=""; name=""; seed=1337; lr=5e-4; threads=2; sets=()
distill=1; dw=0.5; dt=2; freeze=0; bench_seq=1K,4K,16K; quick=0; bench=1
g1=2; g2=1; g2_against=phase1; g3=3; gutil=""; uwarn=5; keep_going=0; dry=0; nph=3; force=0; window=64
tsteps=0; tlr=1e-2; tqk=0; at_once=0; restart=0; control=0; eb=0; phases_given=0
usage="--teacher RUN --data DIR [--total-steps N | --steps-per-phase N] [--out DIR] [--name NAME] [--seed S] [--lr X] [--threads N] [--set key=value ...] [--transfer-steps N] [--transfer-lr X] [--transfer-qk] [--all-at-once] [--restart-schedule] [--control] [--eval-batches N] [--no-distill] [--distill-weight W] [--distill-temperature T] [--freeze-kept] [--bench-seq LIST] [--quick] [--no-bench] [--gate-ppl-phase1 PCT] [--gate-ppl-phase2 PCT] [--phase2-against phase1|teacher] [--gate-bench-phase3 PCT] [--gate-util PCT] [--util-warn PCT] [--keep-going] [--phases P] [--force] [--dry-run] [--window W] [--help]"
while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h) script_help; exit 0;;
    --no-distill) distill=0; shift; continue;;
    --freeze-kept) freeze=1; shift; continue;;
    --quick) quick=1; shift; continue;;
    --no-bench) bench=0; shift; continue;;
    --keep-going) keep_going=1; shift; continue;;
    --dry-run) dry=1; shift; continue;;
    --force) force=1; shift; continue;;
    --transfer-qk) tqk=1; shift; continue;;
    --all-at-once) at_once=1; shift; continue;;
    --restart-schedule) restart=1; shift; continue;;
    --control) control=1; shift; continue;;
    --teacher|--data|--steps-per-phase|--total-steps|--out|--name|--seed|--lr|--threads|--set|--distill-weight|--distill-temperature) ;;
    --bench-seq|--gate-ppl-phase1|--gate-ppl-phase2|--phase2-against|--gate-bench-phase3|--gate-util|--util-warn|--phases) ;;
    --transfer-steps|--transfer-lr|--eval-batches|--window) ;;
    *) unknown_option "$1" "$usage";;
  esac
  need_value "$@"
  case "$1" in
    --teacher) teacher=$(from_start "$2");;
    --data) data=$(from_start "$2");;
    --steps-per-phase) steps="$2";;
    --total-steps) total="$2";;
    --transfer-steps) tsteps="$2";;
    --transfer-lr) tlr="$2";;
    --eval-batches) eb="$2";;
    --util-warn) uwarn="$2";;
    --out) out=$(from_start "$2");;
    --name) name="$2";;
    --seed) seed="$2";;
    --lr) lr="$2";;
    --threads) threads="$2";;
    --set) sets+=("$2");;
    --distill-weight) dw="$2";;
    --distill-temperature) dt="$2";;
    --bench-seq) bench_seq="$2";;
    --gate-ppl-phase1) g1="$2";;
    --gate-ppl-phase2) g2="$2";;
    --phase2-against) g2_against="$2";;
    --gate-bench-phase3) g3="$2";;
    --gate-util) gutil="$2";;
    --phases) nph="$2"; phases_given=1;;
    --window) window="$2";;
    *) unknown_option "$1" "$usage --help";;
  esac
  shift 2
done
die() { echo "$0: $*" >&2; exit 2; }
[ -n "$teacher" ] || die "--teacher RUN is required (see --help)"
[ -n "$data" ] || die "--data DIR is required (see --help)"
[ -z "$steps" ] || [ -z "$total" ] || die "--total-steps and --steps-per-phase: give one of them"
positive_ints "threads:$threads" ${steps:+"steps-per-phase:$steps"} ${total:+"total-steps:$total"}
case "$tsteps" in ''|*[!0-9]*) die "--transfer-steps must be a whole number, not '$tsteps'";; esac
case "$eb" in ''|*[!0-9]*) die "--eval-batches must be a whole number, not '$eb'";; esac
case "$seed" in ''|*[!0-9]*) die "--seed must be a whole number, not '$seed'";; esac
isnum() { [[ "$2" =~ ^[0-9]+([.][0-9]*)?([eE][-+]?[0-9]+)?$|^[.][0-9]+$ ]] || die "--$1 must be a number >= 0, not '$2'"; }
isnum lr "$lr"; isnum distill-weight "$dw"; isnum distill-temperature "$dt"; isnum transfer-lr "$tlr"; isnum util-warn "$uwarn"
signed() { isnum "$1" "${2#-}"; } # a gate may be negative (a rise it must beat)
signed gate-ppl-phase1 "$g1"; signed gate-ppl-phase2 "$g2"; signed gate-bench-phase3 "$g3"; [ -z "$gutil" ] || isnum gate-util "$gutil"
case "$g2_against" in phase1|teacher) ;; *) die "--phase2-against must be phase1 or teacher, not '$g2_against'";; esac
case "$nph" in 1|2|3) ;; *) die "--phases must be 1, 2 or 3, not '$nph'";; esac
[ $at_once = 0 ] || [ $phases_given = 0 ] || die "--all-at-once runs one phase: --phases does not go with it"
case "$window" in ''|*[!0-9]*) die "--window must be a whole number (0 = none), not '$window'";; esac
wset=(); [ "$window" = 0 ] || wset=(--set "gma.window=$window") # the GMA layers' window, trained and benchmarked
# the lengths: 1K = 1024; each a positive integer
seqs=()
for s in ${bench_seq//,/ }; do
  case "$s" in *[kK]) v=${s%[kK]}; m=1024;; *) v=$s; m=1;; esac
  case "$v" in ''|*[!0-9]*|0) die "--bench-seq: '$s' is not a length (e.g. 1K,4K,16K)";; esac
  seqs+=($((v * m)))
done
[ ${#seqs[@]} -gt 0 ] || die "--bench-seq: no length given"
[ -f "$teacher/config.json" ] || die "$teacher/config.json: missing (--teacher wants a run folder of bin/gmatrain)"
for f in train valid test; do [ -f "$data/$f.bin" ] || die "$data/$f.bin: missing (--data wants the folder of gmadata prepare)"; done
name=${name:-migrate-$(basename "$teacher")}
out=${out:-runs/$name}
tc="$teacher/config.json"
L=$(get "$tc" n_layers); D=$(get "$tc" d_model); H=$(get "$tc" n_heads); V=$(get "$tc" vocab_size)
tmix=$(grep -m1 '"mixer"' "$tc" | sed -nE 's/.*"mixer":[[:space:]]*"([a-z_0-9]+)".*/\1/p')
[ -n "$tmix" ] || die "$tc: model.mixer must be one attention mixer (e.g. \"sdpa\"), not a list"
[ "$tmix" != gma ] || die "$tc: model.mixer is already gma: nothing to migrate"
[ "${L:-0}" -ge 2 ] 2> /dev/null || die "$tc: model.n_layers must be at least 2 to migrate in phases, not '${L:-}'"
# K: a --set gma.n_components wins over the teacher's
K=$(get "$tc" n_components)
for s in "${sets[@]+"${sets[@]}"}"; do case "$s" in gma.n_components=*) K=${s#*=};; esac; done

# the layers each phase replaces: 1 the last; 2 the last four, or the last half of a model of
# fewer than eight layers; 3 all
half=$((L / 2)); [ $L -ge 8 ] && half=4
layers_of() { case $1 in 1) echo $((L - 1));; 2) seq -s ' ' $((L - half)) $((L - 1));; 3) seq -s ' ' 0 $((L - 1));; esac; }
# the phases run, in order (their numbers: the layer sets above and the gates): --all-at-once
# phase 3 alone; a phase whose layers are the previous one's is skipped
plist=(); skipped=""
if [ $at_once = 1 ]; then plist=(3)
else
  for ((k = 1; k <= nph; k++)); do
    if [ ${#plist[@]} -gt 0 ] && [ "$(layers_of $k)" = "$(layers_of "${plist[-1]}")" ]; then
      skipped+="phase $k: GMA in layers $(layers_of $k), the layers of phase ${plist[-1]} ($L layers): skipped"$'\n'; continue
    fi
    plist+=($k)
  done
fi
P=${#plist[@]}
# the transfer runs the new layers as auto, whose GMA path has no window (gma.window 0 there):
# a later phase's transfer would drop the window of the earlier phases' GMA layers
[ "$tsteps" = 0 ] || [ "$window" = 0 ] || [ $P = 1 ] \
  || die "--transfer-steps with --window $window: only with --all-at-once or --phases 1 (the transfer runs the new layers as auto, which has no window, and would drop the window of the earlier phases' GMA layers), or give --window 0"
idx_of() { local i; for ((i = 0; i < P; i++)); do [ "${plist[$i]}" = "$1" ] && echo $i; done; }
prev_of() { local i; i=$(idx_of $1); [ "$i" -gt 0 ] && echo "${plist[$((i - 1))]}" || true; } # the phase before, or ""
# the budget: T steps in all, phase i (0-based) ends at step (i + 1) T / P of one schedule
# (warmup W, a tenth of the first share, then a decay over T - W); --restart-schedule: each
# phase its own share from step 0
T=${total:-$(( ${steps:-200} * P ))}
[ $T -ge $P ] || die "--total-steps $T: fewer steps than the $P phases run"
end_of() { echo $(( ($(idx_of $1) + 1) * T / P )); }
share_of() { local i; i=$(idx_of $1); echo $(( (i + 1) * T / P - i * T / P )); }
W=$(( T / P / 10 ))
new_of() { # the layers phase $1 replaces that the phase before it did not
  local l s="" r=" $(layers_of "$(prev_of $1)" 2> /dev/null) "
  for l in $(layers_of $1); do [[ "$r" == *" $l "* ]] || s+="${s:+ }$l"; done
  echo "$s"
}
mixer_list() { # the model.mixer list as JSON: layers $1 gma, layers $2 auto, the rest the teacher's
  local l s="[" g=" $1 " a=" ${2:-} "
  for ((l = 0; l < L; l++)); do
    if [[ "$a" == *" $l "* ]]; then s+="\"auto\""; elif [[ "$g" == *" $l "* ]]; then s+="\"gma\""; else s+="\"$tmix\""; fi
    [ $l -lt $((L - 1)) ] && s+=","
  done
  echo "$s]"
}
mixer_of() { mixer_list "$(layers_of $1)"; } # the model.mixer list of phase $1
freeze_of() { # train.freeze of phase $1 (--set: comma-separated): every block it keeps
  local l s="" r=" $(layers_of $1) "
  for ((l = 0; l < L; l++)); do [[ "$r" == *" $l "* ]] || s+="${s:+,}blocks.$l.*"; done
  echo "$s"
}
# the features this gmatrain has
ref=$( [ -x bin/gmatrain ] && bin/gmatrain --config-reference 2> /dev/null || true)
if [ $distill = 1 ] && [ $dry = 0 ] && ! grep -q 'train.distill' <<< "$ref"; then
  die "this bin/gmatrain has no train.distill: build it from a tree with distillation, or run with --no-distill"
fi
if [ $freeze = 1 ] && [ $dry = 0 ] && ! grep -q 'train.freeze' <<< "$ref"; then
  die "this bin/gmatrain has no train.freeze: --freeze-kept needs it"
fi
for kf in "train.state_from:one schedule (or --restart-schedule)" "train.lm_weight:--transfer-steps"; do
  [ $dry = 1 ] || grep -q "${kf%%:*}" <<< "$ref" || die "this bin/gmatrain has no ${kf%%:*}: ${kf#*:} needs it"
done
from_of() { local p; p=$(prev_of $1); [ -n "$p" ] && echo "$out/phase$p" || echo "$teacher"; }
quote() { local s; for s in "$@"; do
    case "$s" in *[!A-Za-z0-9_./=:,+-]*) printf "'%s' " "${s//\'/\'\\\'\'}";; *) printf '%s ' "$s";; esac
  done; }
evalset() { [ "$eb" -gt 0 ] && printf '%s\n' --set "train.eval_batches=$eb" --set "train.final_eval_batches=$eb" || true; }
# the attention transfer of phase $1: from the run before it, the layers it replaces as auto
# (the sdpa path's output: every layer fed the softmax model's activations; the GMA path
# matches its head outputs, auto.distill_weight), only their routing learning (train.freeze
# "*" then "!" their gma.*; --transfer-qk their q and k too), no language-model loss
transfer_cmd() {
  local l fr="*" n; n=$(new_of $1)
  for l in $n; do fr+=",!blocks.$l.mixer.gma.*"; [ $tqk = 1 ] && fr+=",!blocks.$l.mixer.q.*,!blocks.$l.mixer.k.*"; done
  local a=(bin/gmatrain --init-from "$(from_of $1)" --out "$out/phase$1.transfer" --quiet --threads "$threads"
    --set "model.mixer=$(mixer_list "$(layers_of "$(prev_of $1)" 2> /dev/null)" "$n")" --set "data.path=$data"
    --set "train.steps=$tsteps" --set "seed=$seed" --set "train.lr=$tlr" --set train.warmup=0 --set train.schedule=constant
    --set model.auto_threshold=16777216 --set auto.distill_weight=1 --set train.lm_weight=0 --set gma.init=kmeans
    --set "train.freeze=$fr" --set train.distill.teacher= --set gma.window=0 --set "train.eval_every=$tsteps" --set "train.checkpoint_every=$tsteps"
    --set "train.log_every=$(( tsteps < 10 ? 1 : tsteps / 10 ))" --set train.final_eval_batches=1)
  for s in "${sets[@]+"${sets[@]}"}"; do a+=(--set "$s"); done
  quote "${a[@]}"
}
# the schedule of phase $1 (the control's too): one schedule, the state of the phase before
# (train.state_from: its step, data order, moments), or its own from step 0
sched_sets() { # PHASE PREVIOUS_RUN
  if [ $restart = 1 ]; then
    local n; n=$(share_of $1)
    printf '%s\n' --set "train.steps=$n" --set "train.warmup=$((n / 10))" --set train.schedule=cosine --set train.decay_steps=0
  else
    printf '%s\n' --set "train.steps=$(end_of $1)" --set "train.warmup=$W" --set train.schedule=cosine --set "train.decay_steps=$((T - W))"
    [ -z "$2" ] || printf '%s\n' --set "train.state_from=$2"
  fi
}
end_step() { [ $restart = 1 ] && share_of $1 || end_of $1; } # the last step of phase $1's run
train_cmd() { # phase K
  local k=$1 from; from=$(from_of $1)
  local st=""; [ $restart = 0 ] && [ -n "$(prev_of $k)" ] && st=$from
  [ "$tsteps" -gt 0 ] && from="$out/phase$k.transfer"
  local e sc ev; e=$(end_step $k); mapfile -t sc < <(sched_sets $k "$st"); mapfile -t ev < <(evalset)
  local a=(bin/gmatrain --init-from "$from" --out "$out/phase$k" --quiet --threads "$threads"
    --set "model.mixer=$(mixer_of $k)" --set "data.path=$data" "${sc[@]}" --set "seed=$seed"
    --set "train.lr=$lr" --set gma.init=kmeans "${ev[@]+"${ev[@]}"}"
    --set "train.eval_every=$e" --set "train.checkpoint_every=$e" --set "train.log_every=$(( $(share_of $k) < 10 ? 1 : $(share_of $k) / 10 ))")
  if [ "$tsteps" -gt 0 ]; then # the transfer's own keys back to a fine-tuning's
    a+=(--set auto.distill_weight=0 --set train.lm_weight=1); [ "$eb" -gt 0 ] || a+=(--set train.final_eval_batches=0)
  fi
  if [ $distill = 1 ]; then a+=(--set "train.distill.teacher=$teacher" --set "train.distill.weight=$dw" --set "train.distill.temperature=$dt"); fi
  if [ $freeze = 1 ] && [ -n "$(freeze_of $k)" ]; then a+=(--set "train.freeze=$(freeze_of $k)")
  elif [ "$tsteps" -gt 0 ]; then a+=(--set train.freeze=); fi
  a+=("${wset[@]+"${wset[@]}"}")
  for s in "${sets[@]+"${sets[@]}"}"; do a+=(--set "$s"); done
  quote "${a[@]}"
}
control_cmd() { # the control's segment of phase K: the teacher fine-tuned as the phases are
  local k=$1 p from st=""; p=$(prev_of $1)
  if [ -n "$p" ]; then from="$out/control/phase$p"; [ $restart = 0 ] && st=$from; else from=$teacher; fi
  local e sc ev; e=$(end_step $k); mapfile -t sc < <(sched_sets $k "$st"); mapfile -t ev < <(evalset)
  local a=(bin/gmatrain --init-from "$from" --out "$out/control/phase$k" --quiet --threads "$threads" --set "data.path=$data"
    "${sc[@]}" --set "seed=$seed" --set "train.lr=$lr" "${ev[@]+"${ev[@]}"}" --set "train.eval_every=$e" --set "train.checkpoint_every=$e"
    --set "train.log_every=$(( $(share_of $k) < 10 ? 1 : $(share_of $k) / 10 ))")
  for s in "${sets[@]+"${sets[@]}"}"; do a+=(--set "$s"); done
  quote "${a[@]}"
}
dec_seqs=()
shortest=$(printf '%s\n' "${seqs[@]}" | sort -n | head -n 1)
for n in "${seqs[@]}"; do [ $quick = 1 ] && [ $n -gt "$shortest" ] || dec_seqs+=("$n"); done
gate_of() { case $1 in 1) echo "valid ppl +< $g1 % over the $ref_name";; 2) echo "valid ppl +< $g2 % over $([ $g2_against = teacher ] && echo "the $ref_name" || echo "phase ${plist[0]}")";;
  3) echo "valid and test ppl, valid accuracy within $g3 % of the $ref_name";; esac; }
ref_name=teacher; [ $control = 1 ] && ref_name="control (the teacher fine-tuned alike)"

if [ $dry = 1 ]; then
  echo "migration plan: teacher $teacher ($L layers of $tmix, d_model $D, $H heads), GMA with K = $K, data $data, out $out"
  echo "fine-tuning: $T steps in $P phase$([ $P = 1 ] || echo s) ($([ $restart = 1 ] && echo "each its own schedule and optimiser" || echo "one schedule, warmup $W, the optimiser carried across phases")), seed $seed, lr $lr, distillation $([ $distill = 1 ] && echo "weight $dw temperature $dt" || echo off), freeze $([ $freeze = 1 ] && echo "the kept blocks" || echo nothing)"
  echo "attention transfer: $([ "$tsteps" -gt 0 ] && echo "$tsteps steps before each phase, lr $tlr, routing$([ $tqk = 1 ] && echo ", q and k") learning" || echo none); evaluations: $([ "$eb" -gt 0 ] && echo "the first $eb batches" || echo "the whole splits")"
  printf '%s' "$skipped"
  for k in "${plist[@]}"; do
    echo "phase $k: GMA in layers $(layers_of $k); model.mixer $(mixer_of $k); steps $(( $(end_of $k) - $(share_of $k) ))-$(end_of $k) of $T; gate: $(gate_of $k)$([ -n "$gutil" ] && echo ", every component >= $gutil % of 1/K")"
    [ "$tsteps" -gt 0 ] && echo "  $(transfer_cmd $k)"
    echo "  $(train_cmd $k)"
    [ $control = 1 ] && echo "  $(control_cmd $k)"
  done
  [ $bench = 1 ] && echo "speeds: gmabench prefill (time to first token) at ${seqs[*]}, gmabench decode at ${dec_seqs[*]:-none} per phase and the teacher" || echo "speeds: not measured (--no-bench)"
  exit 0
fi

# the training commands a finished phase was made with: a rerun must give the same ones (the
# gates and speeds may change: they are computed again from the phase's files)
plan_of() { [ "$tsteps" -gt 0 ] && transfer_cmd $1 && echo; train_cmd $1; [ $control = 1 ] && echo && control_cmd $1 || true; }

# the teacher's checkpoint: the folder its latest resolves to (or the teacher, a run of
# gmadata import), the step of its model.safetensors and that file's SHA-256, as
# gmatrain records a distillation's teacher (RUN/distill.json)
tck=$teacher; [ -e "$teacher/latest" ] && tck=$(cd "$teacher/latest" && pwd -P)
[ -s "$tck/model.safetensors" ] || die "$teacher: no checkpoint (no model.safetensors in it or under latest/)"
tstep=$(head -c 1048576 "$tck/model.safetensors" | grep -aoE '"step": ?"[0-9]+"' | head -n 1 | grep -oE '[0-9]+' || true)
tsha=$(sha256sum "$tck/model.safetensors" | cut -d' ' -f1)
tid="{\"checkpoint\": \"$tck\", \"step\": ${tstep:--1}, \"sha256\": \"$tsha\"}"
# a rerun: the teacher its figures and phases were made from (OUT/teacher.json; an OUT made
# before the record was kept: its teacher.valid.json older than the teacher's checkpoint)
if [ -f "$out/teacher.json" ] || [ -f "$out/teacher.valid.json" ]; then
  was=""
  if [ -f "$out/teacher.json" ]; then
    ostep=$(sed -n 's/.*"step": \(-\{0,1\}[0-9]*\).*/\1/p' "$out/teacher.json"); osha=$(sed -n 's/.*"sha256": "\([0-9a-f]*\)".*/\1/p' "$out/teacher.json")
    [ "$ostep" = "${tstep:--1}" ] && [ "$osha" = "$tsha" ] || was="$(sed -n 's/.*"checkpoint": "\([^"]*\)".*/\1/p' "$out/teacher.json") (step $ostep, sha256 ${osha:0:12})"
  elif [ "$tck/model.safetensors" -nt "$out/teacher.valid.json" ]; then
    was="an earlier checkpoint (its figures in $out/teacher.valid.json are older than $tck)"
  fi
  if [ -n "$was" ] && [ $force = 0 ]; then
    die "the teacher changed since $out was made: $tck (step ${tstep:--1}, sha256 ${tsha:0:12}) now, $was then: its figures and phases are of that teacher: give another --out, or --force to migrate again from this one"
  elif [ -n "$was" ]; then
    echo "the teacher changed since $out was made ($was then): --force: its figures and every phase made again" >&2
    rm -rf "$out/teacher.valid.json" "$out/teacher.test.json" "$out/teacher.bench" "$out"/phase[123]
  fi
fi
mkdir -p "$out"
echo "$tid" > "$out/teacher.json"
[ -x bin/gmatrain ] && [ -x bin/gmaeval ] && [ -x bin/gmabench ] || make -s binaries
eval_to() { # CKPT SPLIT JSON: gmaeval unless JSON is there
  [ -s "$3" ] || bin/gmaeval --checkpoint "$1" --data "$data/$2.bin" --batches "$eb" --threads "$threads" --json "$3" > /dev/null
}
jnum() { grep -o "\"$2\":[[:space:]]*[-0-9.eE+]*" "$1" | head -n 1 | sed -E 's/.*:[[:space:]]*//'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", 100 * (a / b - 1) }'; } # a over b in %
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
r4() { awk -v a="$1" 'BEGIN { printf "%.4g", a }'; } # a figure in a message
eval_to "$teacher" valid "$out/teacher.valid.json"
eval_to "$teacher" test "$out/teacher.test.json"
t_vppl=$(jnum "$out/teacher.valid.json" ppl); t_tppl=$(jnum "$out/teacher.test.json" ppl)
t_vacc=$(jnum "$out/teacher.valid.json" acc)

# speeds of a model.mixer at the teacher's shape with random weights: the time to the first
# token of an N-token prompt (gmabench prefill: one forward filling every layer's decode state,
# then the last position's logits) and decoding tokens/s from context N/2 to N (gmabench decode)
prefill_of() { # DIR MIXERJSON: DIR/prefill.json at every length (measured unless there)
  [ -s "$1/prefill.json" ] || bin/gmabench prefill --mixers "$tmix" --set "model.mixer=$2" "${wset[@]+"${wset[@]}"}" --L "$L" --D "$D" --H "$H" --Kc "$K" --V "$V" \
    --seq "$(IFS=,; echo "${seqs[*]}")" --repeat 1 --feed-max 0 --threads "$threads" --json "$1/prefill.json" > "$1/prefill.txt"
}
ttft_of() { # PREFILL.json N: the time to the first token in ms, "skipped: WHY" or "" (not there)
  awk -v n="$2" '/"N":/ { nn = $0; gsub(/[^0-9]/, "", nn) }
    nn == n && /"ttft_s":/ { v = $0; gsub(/.*"ttft_s":[ \t]*|,.*/, "", v); printf "%.2f\n", 1e3 * v; exit }
    nn == n && /"skipped":/ { v = $0; sub(/.*"skipped":[ \t]*"/, "", v); sub(/".*/, "", v); print (v ~ /^skipped/ ? v : "skipped: " v); exit }' "$1"
}
decode_of() { # DIR MIXERJSON N: tokens/s of decode_N.json in DIR (measured unless there)
  local f="$1/decode_$3.json"
  [ -s "$f" ] || bin/gmabench decode --mixers "$tmix" --set "model.mixer=$2" "${wset[@]+"${wset[@]}"}" --L "$L" --D "$D" --H "$H" --Kc "$K" --V "$V" \
    --T "$3" --repeat 1 --threads "$threads" --json "$f" > /dev/null
  jnum "$f" tokens_per_s
}
speeds_json() { # DIR MIXERJSON: "speeds" of a row: time to first token ms (a skipped point:
  # null and why), decode tokens/s
  local n s="" t
  [ $bench = 1 ] || { echo '"speeds": null'; return; }
  prefill_of "$1" "$2" || true
  for n in "${seqs[@]}"; do
    t=$( [ -s "$1/prefill.json" ] && ttft_of "$1/prefill.json" "$n")
    case "$t" in '') s+="${s:+, }\"$n\": {\"ttft_ms\": null, ";; skipped*) s+="${s:+, }\"$n\": {\"ttft_ms\": null, \"ttft_skipped\": \"$t\", ";;
      *) s+="${s:+, }\"$n\": {\"ttft_ms\": $t, ";; esac
    s+="\"decode_tokens_per_s\": "
    if [[ " ${dec_seqs[*]} " == *" $n "* ]]; then s+="$(decode_of "$1" "$2" "$n" || echo null)}"; else s+="null}"; fi
  done
  echo "\"speeds\": {$s}"
}

# utilisation of every GMA layer from gmaeval --analyze-json: per layer the fraction of (head,
# component) pairs whose share of the tokens is >= gutil % of 1/K, and the smallest share x K
util_of() { # ANALYSIS.json: "layer frac min_load" lines
  awk -v pc="${gutil:-$uwarn}" '/"n_components":/ && !K { K = $0; gsub(/[^0-9]/, "", K) }
    /"layer":/ { l = $0; gsub(/[^0-9]/, "", l); if (!(l in n)) { order[++no] = l; mn[l] = 1e9 } }
    /"share":/ { v = $0; gsub(/.*"share":[ \t]*|,.*/, "", v); n[l]++; if (v + 0 >= pc / 100 / K) ok[l]++; if (v * K < mn[l]) mn[l] = v * K }
    END { for (i = 1; i <= no; i++) { l = order[i]; printf "%s %.4f %.4f\n", l, ok[l] / n[l], mn[l] } }' "$1"
}

run_or_resume() { # DIR CMD [keep]: a run of CMD in DIR, resumed from its checkpoint when it has
  # one (a finished run: nothing to do); else DIR made afresh (keep: the folder kept as it is)
  if [ -n "$(ls -d "$1"/ckpt_* 2> /dev/null)" ]; then bin/gmatrain --resume "$1" --quiet --threads "$threads"
  else [ "${3:-}" = keep ] || rm -rf "$1"; eval "$2"; fi
}
transfer_json() { # RUN: "transfer": per layer the first and the last logged transfer loss
  local f="$1/metrics.jsonl"
  [ "$tsteps" -gt 0 ] && [ -s "$f" ] || { echo '"transfer": null'; return; }
  grep -o '"transfer":{[^}]*}' "$f" | sed 's/.*{//; s/}//' | tr ',' '\n' | tr -d '"' | awk -F: '
    { if (!($1 in first)) { first[$1] = $2; order[++n] = $1 } last[$1] = $2 }
    END { printf "\"transfer\": {\"steps\": %d, \"layers\": [", steps; for (i = 1; i <= n; i++) printf "%s{\"layer\": %s, \"first\": %s, \"last\": %s}", (i > 1 ? ", " : ""), order[i], first[order[i]], last[order[i]]; printf "]}\n" }' steps="$tsteps"
}
rows=(); result=teacher; failed=""; status=0; stop=0; again=0
[ -z "$skipped" ] || printf '%s' "$skipped" >&2
for ((i = 0; i < P; i++)); do
  k=${plist[$i]}; d="$out/phase$k"; e=$(end_step $k); tag="[$((i + 1))/$P] phase $k"
  [ $stop = 0 ] || break
  plan=$(plan_of $k)
  for f in "$d/plan.txt" "$d/plan.txt.new"; do # the plan of a finished phase, or of one under way
    if [ -f "$f" ] && [ "$(cat "$f")" != "$plan" ]; then
      [ $force = 1 ] || die "$d was made with other options (its $(basename "$f")): rerun with those, give another --out, or --force to train it again"
      again=1
    fi
  done
  # a folder there that migrate.sh did not make (no plan): refused unless --force; a phase
  # after one made again starts from it, so it is made again too
  if [ -e "$d" ] && [ ! -f "$d/plan.txt" ] && [ ! -f "$d/plan.txt.new" ]; then
    [ $force = 1 ] || die "$d is there and was not made by migrate.sh (no plan.txt): give another --out, or --force to replace it"
    again=1
  fi
  if [ $again = 1 ] && [ -e "$d" ]; then
    [ $force = 1 ] || die "$d was made from a phase this call makes again: give another --out, or --force to make it again too"
    echo "phase $k: --force: made again" >&2; rm -rf "$d" "$d.transfer" "$out/control/phase$k"
  fi
  if [ -f "$d/plan.txt" ] && [ -s "$d/summary.json" ] && [ -s "$d/$(printf "ckpt_%08d" "$e")/model.safetensors" ]; then
    echo "phase $k: finished in $d, skipped" >&2
  else
    if [ -z "$(ls -d "$d"/ckpt_* 2> /dev/null)" ]; then # a start of this plan that wrote no checkpoint yet
      # (its transfer and control runs are this plan's only when its plan.txt.new is there)
      [ -f "$d/plan.txt.new" ] || rm -rf "$d.transfer" "$out/control/phase$k"
      rm -rf "$d"; again=1 # the phases after this one start from it
    fi
    mkdir -p "$d"; [ -f "$d/plan.txt" ] || echo "$plan" > "$d/plan.txt.new"
    if [ "$tsteps" -gt 0 ]; then
      echo "$tag: attention transfer of layers $(new_of $k), $tsteps steps -> $d.transfer" >&2
      run_or_resume "$d.transfer" "$(transfer_cmd $k)"
    fi
    echo "$tag: GMA in layers $(layers_of $k), steps $(( $(end_of $k) - $(share_of $k) ))-$(end_of $k) of $T -> $d" >&2
    run_or_resume "$d" "$(train_cmd $k)" keep
  fi
  if [ $control = 1 ]; then
    echo "$tag: control, the teacher fine-tuned alike -> $out/control/phase$k" >&2
    mkdir -p "$out/control"; run_or_resume "$out/control/phase$k" "$(control_cmd $k)"
  fi
  [ -f "$d/plan.txt" ] || { echo "$plan" > "$d/plan.txt"; rm -f "$d/plan.txt.new"; }
  # valid: gmaeval with the routing analysis (one pass); test: gmatrain's closing evaluation
  # of the test split (the same figures as gmaeval's)
  t0=$SECONDS
  echo "$tag: gate evaluations ($([ "$eb" -gt 0 ] && echo "the first $eb batches" || echo "the whole splits")$([ $control = 1 ] && echo ", the control's too"))" >&2
  [ -s "$d/valid.json" ] && [ -s "$d/analysis.json" ] || bin/gmaeval --checkpoint "$d" --data "$data/valid.bin" --batches "$eb" \
    --threads "$threads" --json "$d/valid.json" --analyze-json "$d/analysis.json" > /dev/null
  grep '"split":"test"' "$d/metrics.jsonl" | tail -n 1 > "$d/test.json"
  [ -s "$d/test.json" ] || { echo "$0: $d/metrics.jsonl: no closing test evaluation" >&2; exit 1; }
  vppl=$(jnum "$d/valid.json" ppl); tppl=$(jnum "$d/test.json" ppl); vacc=$(jnum "$d/valid.json" acc)
  r_v=$t_vppl; r_t=$t_tppl; r_a=$t_vacc; cj=""
  if [ $control = 1 ]; then
    c="$out/control/phase$k"
    eval_to "$c" valid "$c/valid.json"
    grep '"split":"test"' "$c/metrics.jsonl" | tail -n 1 > "$c/test.json"
    r_v=$(jnum "$c/valid.json" ppl); r_t=$(jnum "$c/test.json" ppl); r_a=$(jnum "$c/valid.json" acc)
    cj="\"control_valid_ppl\": $r_v, \"control_test_ppl\": $r_t, \"control_valid_acc\": $r_a, \"dppl_control_pct\": $(pct "$vppl" "$r_v"), "
  fi
  echo "$tag: evaluated in $((SECONDS - t0)) s" >&2
  dt_=$(pct "$vppl" "$t_vppl"); dr=$(pct "$vppl" "$r_v")
  [ $i = 0 ] && dprev=$dt_ || dprev=$(pct "$vppl" "$prev_vppl")
  gates=()
  # utilisation: every layer, every component (a gate with --gate-util, else a warning)
  ul=""; util_ok=1; worst=1
  while read -r l fr mn; do
    ul+="${ul:+, }{\"layer\": $l, \"utilised_fraction\": $fr, \"min_share_x_K\": $mn}"
    lt "$fr" 1 && { util_ok=0; lt "$fr" "$worst" && worst=$fr; }
  done < <(util_of "$d/analysis.json")
  uline="only $(awk -v f="$worst" 'BEGIN{printf "%.1f", 100*f}') % of the (head, component) pairs of a GMA layer hold >= ${gutil:-$uwarn} % of the uniform share 1/K"
  if [ $util_ok = 1 ]; then gates+=("utilisation passed")
  elif [ -n "$gutil" ]; then gates+=("utilisation FAILED: $uline (wants 100 %)")
  else gates+=("utilisation warning (not a gate): $uline"); fi
  rn=teacher; [ $control = 1 ] && rn=control
  case $k in
    1) if lt "$dr" "$g1"; then gates+=("ppl passed"); else gates+=("ppl FAILED: valid perplexity $(r4 "$vppl") is $dr % over the $rn's $(r4 "$r_v") (gate < $g1 %)"); fi;;
    2) ref_ppl=$r_v; dd=$dr; an=$rn; [ $g2_against = phase1 ] && ref_ppl=$prev_vppl && dd=$dprev && an="phase ${plist[0]}"
       if lt "$dd" "$g2"; then gates+=("ppl passed"); else gates+=("ppl FAILED: valid perplexity $(r4 "$vppl") is $dd % over $an's $(r4 "$ref_ppl") (gate < $g2 %)"); fi;;
    3) for b in "valid_ppl $vppl $r_v 1" "test_ppl $tppl $r_t 1" "valid_acc $vacc $r_a -1"; do
         set -- $b
         w=$(awk -v a="$2" -v t="$3" -v s="$4" 'BEGIN { printf "%.3f", (s > 0 ? 100 * (a / t - 1) : 100 * (1 - a / t)) }')
         if lt "$w" "$g3"; then gates+=("$1 passed"); else gates+=("$1 FAILED: $(r4 "$2") is $w % worse than the $rn's $(r4 "$3") (gate < $g3 %)"); fi
       done;;
  esac
  printf '%s\n' "${gates[@]}" > "$d/gates.txt"
  passed=true; grep -q FAILED "$d/gates.txt" && passed=false
  gj=$(printf '%s\n' "${gates[@]}" | sed 's/"/\\"/g; s/.*/"&"/' | paste -sd, -)
  rows+=("{\"phase\": $k, \"run\": \"$d\", \"layers_replaced\": [$(layers_of $k | tr ' ' ',')], \"mixer\": $(mixer_of $k), \"steps\": [$(( $(end_of $k) - $(share_of $k) )), $(end_of $k)], $(transfer_json "$d.transfer"), \"valid_ppl\": $vppl, \"test_ppl\": $tppl, \"valid_acc\": $vacc, \"dppl_teacher_pct\": $dt_, ${cj}\"dppl_previous_pct\": $dprev, \"utilisation\": [$ul], $(speeds_json "$d" "$(mixer_of $k)"), \"gates\": [$gj], \"gate_passed\": $passed}")
  grep -q '^utilisation warning' "$d/gates.txt" && echo "phase $k: $(grep '^utilisation warning' "$d/gates.txt")" >&2
  if [ $passed = true ]; then
    [ -n "$failed" ] || result=phase$k
    echo "phase $k: gates passed (valid ppl $(r4 "$vppl"), $dt_ % over the teacher$([ $control = 1 ] && echo ", $dr % over the control"))" >&2
  else
    if [ -z "$failed" ]; then failed="phase $k: $(grep FAILED "$d/gates.txt" | paste -sd';' -)"; status=3; fi
    echo "phase $k: $(grep FAILED "$d/gates.txt" | paste -sd';' -); rolled back to $result" >&2
    [ $keep_going = 1 ] || stop=1
  fi
  prev_vppl=$vppl
done

# the teacher's own speeds, the baseline of the rows
mkdir -p "$out/teacher.bench"
tspeeds=$(speeds_json "$out/teacher.bench" "[$(for ((l = 0; l < L; l++)); do printf '"%s"%s' "$tmix" "$([ $l -lt $((L - 1)) ] && echo ,)"; done)]" | sed 's/^"speeds"/"teacher_speeds"/')
{
  printf '{"teacher": "%s", "teacher_checkpoint": %s, "data": "%s", "total_steps": %d, "phases_run": [%s], "schedule": "%s", "seed": %d, "lr": %s, "distill": %s, "freeze_kept": %s,\n' \
    "$teacher" "$tid" "$data" "$T" "$(IFS=,; echo "${plist[*]}")" "$([ $restart = 1 ] && echo per-phase || echo one)" "$seed" "$lr" "$([ $distill = 1 ] && echo "{\"weight\": $dw, \"temperature\": $dt}" || echo false)" "$([ $freeze = 1 ] && echo true || echo false)"
  printf ' "transfer": %s, "control": %s, "eval_batches": %d,\n' "$([ "$tsteps" -gt 0 ] && echo "{\"steps\": $tsteps, \"lr\": $tlr, \"qk\": $([ $tqk = 1 ] && echo true || echo false)}" || echo null)" "$([ $control = 1 ] && echo true || echo false)" "$eb"
  printf ' "n_layers": %d, "n_components": %s, "teacher_valid_ppl": %s, "teacher_test_ppl": %s, "teacher_valid_acc": %s, %s,\n' \
    "$L" "$K" "$t_vppl" "$t_tppl" "$t_vacc" "$tspeeds"
  printf ' "gates": {"ppl_phase1_pct": %s, "ppl_phase2_pct": %s, "phase2_against": "%s", "bench_phase3_pct": %s, "util_pct_of_uniform": %s, "util_warn_pct_of_uniform": %s},\n' "$g1" "$g2" "$g2_against" "$g3" "${gutil:-null}" "$uwarn"
  printf ' "result": "%s", "first_failure": %s,\n "phases": [\n' "$result" "$([ -n "$failed" ] && printf '"%s"' "$(echo "$failed" | sed 's/"/\\"/g')" || echo null)"
  for ((i = 0; i < ${#rows[@]}; i++)); do printf '  %s%s\n' "${rows[$i]}" "$([ $i -lt $((${#rows[@]} - 1)) ] && echo ,)"; done
  printf ' ]}\n'
} > "$out/migration.json.new"
mv "$out/migration.json.new" "$out/migration.json"
ln -sfn "$([ $result = teacher ] && echo "$teacher" || echo "$result")" "$out/result"

# migration.md: the table of the phases
{
  echo "# Migration of $(basename "$teacher") to GMA"
  echo
  echo "Teacher: $teacher ($L layers of $tmix; valid ppl $(r4 "$t_vppl"), test ppl $(r4 "$t_tppl")). $T fine-tuning steps in $P phase$([ $P = 1 ] || echo s) ($([ $restart = 1 ] && echo "each its own schedule" || echo "one schedule")), attention transfer $([ "$tsteps" -gt 0 ] && echo "$tsteps steps a phase" || echo none)$([ $control = 1 ] && echo ", gates against the control"), distillation $([ $distill = 1 ] && echo "weight $dw, temperature $dt" || echo off). Result: **$result**${failed:+ (first failed gate: $failed)}."
  echo
  echo "| phase | GMA layers | steps | valid ppl | Δppl vs teacher % | Δppl vs control % | Δppl vs previous % | test ppl | min utilised fraction | gates |"
  echo "|---:|---|---|---:|---:|---:|---:|---:|---:|---|"
  for ((i = 0; i < ${#rows[@]}; i++)); do
    k=${plist[$i]}; d="$out/phase$k"
    echo "${rows[$i]}" | awk -v k=$k -v lay="$(layers_of $k)" -v g="$(grep -q FAILED "$d/gates.txt" && grep FAILED "$d/gates.txt" | paste -sd';' - || echo passed)" '
      function f(key,   s) { s = $0; if (!match(s, "\"" key "\": [-0-9.eE+]+")) return "-"; s = substr(s, RSTART, RLENGTH); sub(/.*: /, "", s); return s }
      { mn = 1; s = $0; while (match(s, /"utilised_fraction": [0-9.]+/)) { v = substr(s, RSTART + 21, RLENGTH - 21) + 0; if (v < mn) mn = v; s = substr(s, RSTART + RLENGTH) }
        st = $0; sub(/.*"steps": \[/, "", st); sub(/\].*/, "", st); sub(/, /, "-", st)
        printf "| %d | %s | %s | %.2f | %s | %s | %s | %.2f | %.3f | %s |\n", k, lay, st, f("valid_ppl"), f("dppl_teacher_pct"), f("dppl_control_pct"), f("dppl_previous_pct"), f("test_ppl"), mn, g }'
  done
  if [ $bench = 1 ]; then
    echo
    echo "Speeds (gmabench at the teacher's shape, random weights, this machine, loose): time to the first token of an N-token prompt in ms (gmabench prefill), decoding tokens/s at context N/2..N (gmabench decode); '-' not measured, 'skipped' past gmabench's time limit."
    echo
    printf '| model |'; for n in "${seqs[@]}"; do printf ' ttft ms @%s | tok/s @%s |' "$n" "$n"; done; echo
    printf '|---|'; for n in "${seqs[@]}"; do printf -- '---:|---:|'; done; echo
    for r in "teacher:$tspeeds" "${rows[@]/#/phase:}"; do
      lab=${r%%:*}; body=${r#*:}
      [ $lab = phase ] && lab="phase $(echo "$body" | sed -E 's/^\{"phase": ([0-9]).*/\1/')"
      printf '| %s |' "$lab"
      for n in "${seqs[@]}"; do
        echo "$body" | awk -v n="$n" '{ s = $0; i = index(s, "\"" n "\": {"); if (!i) { printf " - | - |"; exit }
          s = substr(s, i); s = substr(s, 1, index(s, "}")); m = s; sub(/.*"ttft_ms": /, "", m); sub(/[,}].*/, "", m); d = s; sub(/.*"decode_tokens_per_s": /, "", d); sub(/[,}].*/, "", d)
          if (m == "null") m = (s ~ /"ttft_skipped": "skipped: time"/ ? "skipped" : "-")
          printf " %s | %s |", m, (d == "null" ? "-" : sprintf("%.1f", d)) }'
      done
      echo
    done
  fi
  echo
  echo "Loss curves: plots/loss_steps.png (scripts/plot_runs.sh). The rows: migration.json."
} > "$out/migration.md"
pl=()
for ((i = 0; i < ${#rows[@]}; i++)); do pl+=("phase${plist[$i]}=$out/phase${plist[$i]}"); done
plot_all "$out/plots" "${pl[@]}" >&2 || true
# the attention transfer's loss per layer and step (plots/transfer.dat: phase, layer, step,
# loss; transfer.png through gnuplot where it is)
if [ "$tsteps" -gt 0 ]; then
  mkdir -p "$out/plots"
  for ((i = 0; i < ${#rows[@]}; i++)); do
    f="$out/phase${plist[$i]}.transfer/metrics.jsonl"
    [ -s "$f" ] && grep '"transfer":{' "$f" | sed -E 's/^\{"step":([0-9]+),.*"transfer":\{([^}]*)\}.*/\1 \2/' | tr -d '"' |
      awk -v p="${plist[$i]}" '{ n = split($2, a, ","); for (j = 1; j <= n; j++) { split(a[j], kv, ":"); print p, kv[1], $1, kv[2] } }'
  done | sort -s -k1,1n -k2,2n -k3,3n > "$out/plots/transfer.dat" # each layer's rows together: one line each
  {
    echo "set terminal pngcairo size 900,540; set output '$out/plots/transfer.png'"
    echo "set title 'attention transfer: sum (oh_gma - oh_sdpa)^2 / sum oh_sdpa^2 per layer'; set xlabel 'transfer step'; set ylabel 'relative squared gap'; set logscale y; set key outside noenhanced; set termoption noenhanced"
    printf 'plot '
    awk '{ print $1, $2 }' "$out/plots/transfer.dat" | sort -u -k1,1n -k2,2n | awk -v f="$out/plots/transfer.dat" \
      '{ printf "%s\"%s\" using ($1 == %s && $2 == %s ? $3 : 1/0):4 with lines title \"phase %s layer %s\"", (NR > 1 ? ", " : ""), f, $1, $2, $1, $2 } END { print "" }'
  } > "$out/plots/transfer.gp"
  if command -v gnuplot > /dev/null && [ -s "$out/plots/transfer.dat" ]; then gnuplot "$out/plots/transfer.gp" 2> /dev/null && echo "plots: $out/plots/transfer.png" >&2 || true; fi
fi
echo "migration: result $result${failed:+; $failed}" >&2
echo "wrote $out/migration.json and $out/migration.md" >&2
exit $status
}
