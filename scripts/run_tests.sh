#!/usr/bin/env bash
# run_tests.sh: run each Check suite binary given on the command line, print its
# output, and close with one line "N passed, N failed, N skipped" over all checks.
#
# A check that cannot run here (test_mpi without bin/mpi/ or mpirun, the emulated CUDA
# programs of test_cuda_emu without mpicc) returns early, which Check counts as a pass,
# after printing one line that starts with "SKIP: " and gives the reason. Each such line
# moves one check of that suite from passed to skipped. A suite binary that does not
# print Check's summary line, or exits non-zero, counts as one more failure.
set -u
pass=0; fail=0; skip=0; bad_bins=()
for t in "$@"; do
  echo "== $t"
  out=$("$t" 2>&1); rc=$?
  echo "$out" | grep -v '^$'
  line=$(echo "$out" | grep -E '^[0-9]+%: Checks: ' | tail -1)
  if [ -n "$line" ]; then
    n=$(echo "$line" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
    f=$(echo "$line" | sed -E 's/.*Failures: ([0-9]+).*/\1/')
    e=$(echo "$line" | sed -E 's/.*Errors: ([0-9]+).*/\1/')
    ok=$((n - f - e))
    s=$(echo "$out" | grep -c '^SKIP: ')
    [ "$s" -gt "$ok" ] && s=$ok # a skip line cannot turn a failure into a skip
    pass=$((pass + ok - s)); fail=$((fail + f + e)); skip=$((skip + s))
  fi
  if [ $rc -ne 0 ] || [ -z "$line" ]; then bad_bins+=("$t"); [ -z "$line" ] && fail=$((fail + 1)); fi
done
echo
if [ ${#bad_bins[@]} -gt 0 ]; then echo "failing suites: ${bad_bins[*]}"; fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] && [ ${#bad_bins[@]} -eq 0 ]
