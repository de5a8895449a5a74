#!/usr/bin/env bash
# fuzz_long.sh RUNS [NAME...]: the long fuzzing run. Each target build/fuzz/fuzz_NAME (all
# of them by default) runs RUNS executions (libFuzzer -runs, one process) from its seed corpus
# (build/fuzz/corpus/NAME, grown in a scratch copy), in turn; prints one line per target
# (executions, seconds, final coverage, crashes) and exits 1 if any crashed. Needs
# `make fuzz`; scratch files go to $TMPDIR (default /dev/shm when it is writable).
set -u
runs=${1:?usage: fuzz_long.sh RUNS [NAME...]}; shift
[ $# -eq 0 ] && set -- $(ls build/fuzz/ | sed -n 's/^fuzz_\([a-z0-9_]*\)$/\1/p' | grep -v '^seeds$')
[ -z "${TMPDIR:-}" ] && [ -w /dev/shm ] && export TMPDIR=/dev/shm
[ -d build/fuzz/corpus ] || make --no-print-directory fuzz-seeds >/dev/null || exit 1
mkdir -p build/fuzz/crashes build/fuzz/long
bad=0
for t in "$@"; do
  work=$(mktemp -d); cp -r "build/fuzz/corpus/$t/." "$work/"
  log=build/fuzz/long/$t.log
  start=$(date +%s)
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build/fuzz/fuzz_$t" -runs="$runs" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="build/fuzz/crashes/${t}-" "$work" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  c=0; [ $rc -ne 0 ] && c=1 && bad=1
  echo "fuzz_$t: ${execs:-?} executions, ${secs} s, ${cov:-?}, corpus $(ls "$work" | wc -l) inputs, $c crashes"
  rm -rf "$work"
done
exit $bad
