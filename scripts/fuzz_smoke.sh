#!/usr/bin/env bash
# fuzz_smoke.sh SECONDS NAME...: run each libFuzzer target build/fuzz/fuzz_NAME for SECONDS
# over its corpus build/fuzz/corpus/NAME (new inputs go to a scratch copy, so the corpus
# stays the seeds), print one line per target and close with "fuzz-smoke: N targets,
# N crashes"; exit 1 when any target crashed (its input is kept under build/fuzz/crashes/).
set -u
secs=$1; shift
[ -z "${TMPDIR:-}" ] && [ -w /dev/shm ] && export TMPDIR=/dev/shm  # the targets write their inputs to files
n=0; crashes=0
mkdir -p build/fuzz/crashes
for t in "$@"; do
  n=$((n + 1))
  work=$(mktemp -d)
  cp -r "build/fuzz/corpus/$t/." "$work/" 2>/dev/null
  log=build/fuzz/smoke_$t.log
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build/fuzz/fuzz_$t" -max_total_time="$secs" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="build/fuzz/crashes/${t}-" "$work" >"$log" 2>&1
  rc=$?
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
  [ -z "$execs" ] && execs=$(grep -Eo '#[0-9]+' "$log" | tail -1 | tr -d '#')
  if [ $rc -ne 0 ]; then
    crashes=$((crashes + 1))
    echo "fuzz_$t: CRASH (exit $rc), see $log"
    grep -E 'ERROR|runtime error|invariant broken|Test unit written' "$log" | head -5
  else
    echo "fuzz_$t: ${execs:-?} executions in ${secs} s, no crash"
  fi
  rm -rf "$work"
done
echo "fuzz-smoke: $n targets, $crashes crashes"
[ $crashes -eq 0 ]
