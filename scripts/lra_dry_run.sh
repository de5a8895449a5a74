#!/usr/bin/env bash
# lra_dry_run.sh: what each LRA paper-profile config costs, before anyone starts the table.
# Trains every configs/lra_<task>_<mixer>.json at its full sequence length for a few steps
# on stand-in data of the real shapes and formats (scripts/lra_standin.sh: random contents,
# so this measures cost, never accuracy), at micro-batches b and 2b, and projects the
# config's own batch B linearly from the two points:
#     s/step(B) = slope * B + intercept,  slope = (s(2b) - s(b)) / b    (the same for max RSS)
# With b = B nothing is projected. Prints the parameter count, both measured points, the
# projection, the full run's steps and its projected hours on this machine.
#
#   scripts/lra_dry_run.sh [--steps N] [--dry-batch SPEC] [--tasks LIST] [--mixers LIST]
#                          [--data DIR] [--device D] [--threads T] [--set KEY=VALUE ...]
#                          [--check-linearity] [--from STAMP] [--help]
#   --steps N         steps per measured point (default 3, at least 2; warmup = N, no
#                     evaluation until the end, on the stand-ins' few valid and test
#                     examples, partial batches included); s/step is the fastest of steps
#                     2..N (step 1 carries the first touch of every buffer; on a shared
#                     machine the fastest step is the one least slowed by other jobs)
#   --dry-batch SPEC  b: a number for every config, optionally followed by TASK=b overrides,
#                     e.g. "2,image=16,pathfinder32=32" (default: each config's batch, so
#                     nothing is projected)
#   --tasks LIST      default "listops text retrieval image pathfinder32 pathx"
#                     (pathfinder is pathfinder32)
#   --mixers LIST     default "gma sdpa linear performer linformer"
#   --data DIR        the stand-in data (default data/lra_standin; the parts of --tasks made
#                     when missing, and no others: Path-X's alone takes minutes)
#   --threads T       --set threads=T (default 2)
#   --set KEY=VALUE   passed to every run after the dry run's own settings (e.g.
#                     model.mixer=sdpa_ref)
#   --check-linearity also measure 4b and print how far it falls from the b-2b line
#   --from STAMP      train nothing: tabulate the runs of an earlier sweep (runs/lra_*-dry-bB-STAMP
#                     and their .rss files) with the current arithmetic
#   --project b s1 r1 s2 r2 B   only print the projection of B from the points (b, s1, r1)
#                     and (2b, s2, r2): "s/step RSS" (the arithmetic the table uses)
# Environment: DRY_MEM_GIB (default 14): each run's address space is capped at this many
# GiB (ulimit -v), so a config too large for the machine fails on its own instead of
# pushing others out of memory; such a row says "does not fit". Table in
# runs/lra-dry-<stamp>.txt, one line on stderr as each run starts.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib_reproduce.sh

# project b s1 r1 s2 r2 B: the line through (b, s1) and (2b, s2) at B, and the same for RSS
project() {
  awk -v b="$1" -v s1="$2" -v r1="$3" -v s2="$4" -v r2="$5" -v B="$6" 'BEGIN {
    ts = (s2 - s1) / b; rs = (r2 - r1) / b
    printf "%.6g %.6g\n", s1 + ts * (B - b), r1 + rs * (B - b) }'
}
if [ "${1:-}" = --project ]; then
  [ $# -eq 7 ] || { echo "usage: $0 --project b s1 r1 s2 r2 B" >&2; exit 2; }
  project "$2" "$3" "$4" "$5" "$6" "$7"; exit 0
fi

steps=3; spec=""; tasks="listops text retrieval image pathfinder32 pathx"
mixers="gma sdpa linear performer linformer"; data=data/lra_standin; device=""; BIN=bin
threads=2; lin=0; from=""; user_sets=()
usage="[--steps N] [--dry-batch SPEC] [--tasks LIST] [--mixers LIST] [--data DIR] [--device D] [--threads T]
       [--set KEY=VALUE ...] [--check-linearity] [--from STAMP]"
while [ $# -gt 0 ]; do
  case "$1" in --steps|--dry-batch|--tasks|--mixers|--data|--threads|--set|--from|--device) need_value "$@";; esac
  case "$1" in
    --help|-h) script_help; exit 0;;
    --check-linearity) lin=1; shift; continue;;
    --steps) steps="$2";;
    --dry-batch) spec="$2";;
    --tasks) tasks="$2";;
    --mixers) mixers="$2";;
    --data) data="$2";;
    --threads) threads="$2";;
    --set) user_sets+=(--set "$2");;
    --from) from="$2";;
    --device) device="--device $2"; if [ "$2" = cuda ]; then BIN=bin/cuda; else BIN=bin; fi;;
    *) unknown_option "$1" "$usage --help";;
  esac
  shift 2
done
case "$steps" in ''|*[!0-9]*) echo "$0: --steps must be a whole number >= 2" >&2; exit 2;; esac
[ "$steps" -ge 2 ] || { echo "$0: --steps must be a whole number >= 2" >&2; exit 2; }
# dry_b TASK: the b of SPEC for TASK (empty: the config's batch)
dry_b() {
  local b="" item
  for item in ${spec//,/ }; do case "$item" in *=*) ;; *) b=$item;; esac; done
  for item in ${spec//,/ }; do case "$item" in "$1"=*) b=${item#*=};; esac; done
  echo "$b"
}
for item in ${spec//,/ }; do
  v=${item#*=}
  case "$v" in ''|*[!0-9]*|0) echo "$0: --dry-batch: '$item' is not a positive whole number" >&2; exit 2;; esac
done
if [ -z "$from" ]; then
  make -s binaries
  GMADATA=$BIN/gmadata scripts/lra_standin.sh "$data" --tasks "$tasks" >&2 # only the stand-ins of --tasks
fi
mem_kib=$(( ${DRY_MEM_GIB:-14} * 1024 * 1024 ))

stamp=${from:-$(date +%Y%m%d-%H%M%S)}
table="runs/lra-dry-$stamp.txt"; [ -n "$from" ] && table="runs/lra-dry-$stamp-retable.txt"
mkdir -p runs
hdr="%-12s %-10s %10s %4s %9s %8s %4s %9s %8s %5s %11s %10s %8s %9s"
printf "$hdr" task mixer params b s/step RSS_MiB 2b s/step RSS_MiB B proj_s/step proj_MiB steps proj_h > "$table"
[ "$lin" = 1 ] && printf " %4s %9s %8s %7s %7s" 4b s/step RSS_MiB dt_% dRSS_% >> "$table"
echo >> "$table"
{ echo "# measured: s/step the fastest of steps 2..$steps, max RSS; projected to the config's batch B on the line"
  echo "# through b and 2b (s/step = slope * B + intercept, likewise RSS); proj_h = proj_s/step * steps"
  [ "$lin" = 1 ] && echo "# 4b: measured, and its distance from the b-2b line in % of the line's value"
} >> "$table"

# measure CFG OUT B SETS...: train at batch B; prints "s/step rss_MiB params", or "fail REASON"
measure() {
  local cfg=$1 out=$2 b=$3; shift 3
  [ -n "$from" ] || rm -rf "$out"
  if [ -n "$from" ]; then [ -f "$out/summary.json" ] || { echo "fail no $out/summary.json"; return; }
  elif ! ( ulimit -v "$mem_kib"; /usr/bin/time -f "%M" -o "$out.rss" "$BIN/gmatrain" --config "$cfg" --out "$out" \
           "$@" $device --quiet --set "train.batch_size=$b" --set train.grad_accum=1 --set "train.steps=$steps" \
           --set "train.warmup=$steps" --set train.eval_every=0 --set train.eval_batches=1 --set train.eval_drop_last=false \
           --set train.checkpoint_every=0 --set train.log_every=1 --set "threads=$threads" \
           ${user_sets[@]+"${user_sets[@]}"} ) > "$out.log" 2>&1; then
    local why
    why=$(grep -v '^Command exited\|^Command terminated' "$out.log" | tail -1 | cut -c1-160)
    [ -z "$why" ] && why="killed ($(tail -1 "$out.log"))"
    echo "fail $why"; return
  fi
  local s
  s=$(awk -F'"elapsed_s":' -v n="$steps" '/"elapsed_s"/ { split($2, a, /[,}]/); st = $0
        sub(/^.*"step":/, "", st); st += 0; e[st] = a[1] + 0 }
        END { m = ""; for (k = 2; k <= n; k++) if ((k in e) && ((k - 1) in e) && (m == "" || e[k] - e[k - 1] < m))
                m = e[k] - e[k - 1]
              print (m == "" ? "nan" : m) }' "$out/metrics.jsonl")
  awk -v s="$s" -v r="$(cat "$out.rss")" -v p="$(grep '"parameters"' "$out/summary.json" | head -1 |
      sed -E 's/[^0-9]*([0-9]+).*/\1/')" 'BEGIN { printf "%.4f %.1f %d\n", s, r / 1024, p }'
  rm -rf "$out"/ckpt_* "$out"/best
}

cfgget() { tr -d '\n ' < "$1" | { grep -o "\"$2\":[0-9]*" || true; } | head -1 | cut -d: -f2; }
nfail=0
for t in $tasks; do
  [ "$t" = pathfinder ] && t=pathfinder32
  case "$t" in
    listops) path=$data/listops;;
    text) path=$data/aclImdb_v1.tar.gz;;
    retrieval) path=$data/lra_release/tsv_data;;
    image) path=$data/cifar-10-binary.tar.gz;;
    pathfinder32) path=$data/pathfinder32/curv_contour_length_14;;
    pathx) path=$data/pathfinder128/curv_contour_length_14;;
    *) echo "$0: unknown task $t" >&2; exit 2;;
  esac
  for m in $mixers; do
    cfg="configs/lra_${t}_$m.json"
    [ -f "$cfg" ] || { echo "$t: no $cfg, skipped" >&2; continue; }
    [ -e "$path" ] || { echo "$t: $path missing, skipped (scripts/lra_standin.sh)" >&2; continue; }
    B=$(cfgget "$cfg" batch_size); full=$(cfgget "$cfg" steps); accum=$(cfgget "$cfg" grad_accum)
    accum=${accum:-1}
    b=$(dry_b "$t"); b=${b:-$B}
    [ "$b" -gt "$B" ] && b=$B
    points=("$b"); [ "$b" -lt "$B" ] && points+=($((2 * b))); [ "$b" -lt "$B" ] && [ "$lin" = 1 ] && points+=($((4 * b)))
    res=()
    for p in "${points[@]}"; do
      out="runs/lra_${t}_${m}-dry-b$p-$stamp"
      [ -n "$from" ] || echo "[dry] $cfg at batch $p, $steps steps -> $out" >&2
      res+=("$(measure "$cfg" "$out" "$p" --set "data.path=$path")")
    done
    line=$(printf "%-12s %-10s" "$t" "$m")
    if printf '%s\n' "${res[@]}" | grep -q '^fail'; then
      nfail=$((nfail + 1))
      why=$(printf '%s\n' "${res[@]}" | grep '^fail' | head -1 | cut -c6-)
      ok=$(printf '%s\n' "${res[@]}" | grep -v '^fail' | head -1 || true)
      if [ -n "$ok" ]; then read -r s1 r1 par <<< "$ok"
        printf "%s %10d %4d %9.3f %8.0f  larger batch does not fit: %s\n" "$line" "$par" "$b" "$s1" "$r1" "$why" >> "$table"
      else printf "%s  does not fit at b=%d: %s\n" "$line" "$b" "$why" >> "$table"; fi
      continue
    fi
    read -r s1 r1 par <<< "${res[0]}"
    if [ "${#points[@]}" -eq 1 ]; then # b = B: measured, nothing projected
      ps=$s1; pr=$r1; s2=-; r2=-; b2=-
    else
      read -r s2 r2 _ <<< "${res[1]}"
      read -r ps _ <<< "$(project "$b" "$s1" "$r1" "$s2" "$r2" $((B * accum)))"
      read -r _ pr <<< "$(project "$b" "$s1" "$r1" "$s2" "$r2" "$B")"
      b2=$((2 * b))
    fi
    awk -v l="$line" -v par="$par" -v b="$b" -v s1="$s1" -v r1="$r1" -v b2="$b2" -v s2="$s2" -v r2="$r2" \
        -v B="$B" -v ps="$ps" -v pr="$pr" -v full="$full" 'BEGIN {
      printf "%s %10d %4d %9.3f %8.0f %4s %9s %8s %5d %11.3f %10.0f %8d %9.1f", l, par, b, s1, r1, b2,
        (s2 == "-" ? "-" : sprintf("%.3f", s2)), (r2 == "-" ? "-" : sprintf("%.0f", r2)), B, ps, pr, full, ps * full / 3600 }' >> "$table"
    if [ "${#points[@]}" -eq 3 ]; then
      read -r s4 r4 _ <<< "${res[2]}"
      read -r ls lr <<< "$(project "$b" "$s1" "$r1" "$s2" "$r2" $((4 * b)))"
      awk -v b4=$((4 * b)) -v s4="$s4" -v r4="$r4" -v ls="$ls" -v lr="$lr" 'BEGIN {
        printf " %4d %9.3f %8.0f %+7.1f %+7.1f", b4, s4, r4, 100 * (s4 - ls) / ls, 100 * (r4 - lr) / lr }' >> "$table"
    fi
    echo >> "$table"
  done
done
cat "$table"
echo "table: $table" >&2
[ "$nfail" -eq 0 ] || echo "$nfail config(s) did not fit or failed; their logs are beside the table" >&2
