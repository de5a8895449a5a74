#!/usr/bin/env bash
# run_tests.sh: run each Check suite binary given on the command line, print its
# output, and close with one line "N passed, N failed" over all checks.
set -u
pass=0; fail=0; bad_bins=()
for t in "$@"; do
  echo "== $t"
  out=$("$t" 2>&1); rc=$?
  echo "$out" | grep -v '^$'
  line=$(echo "$out" | grep -E '^[0-9]+%: Checks: ' | tail -1)
  if [ -n "$line" ]; then
    n=$(echo "$line" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
    f=$(echo "$line" | sed -E 's/.*Failures: ([0-9]+).*/\1/')
    e=$(echo "$line" | sed -E 's/.*Errors: ([0-9]+).*/\1/')
    pass=$((pass + n - f - e)); fail=$((fail + f + e))
  fi
  if [ $rc -ne 0 ] || [ -z "$line" ]; then bad_bins+=("$t"); [ -z "$line" ] && fail=$((fail + 1)); fi
done
echo
if [ ${#bad_bins[@]} -gt 0 ]; then echo "failing suites: ${bad_bins[*]}"; fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ] && [ ${#bad_bins[@]} -eq 0 ]
