#!/usr/bin/env bash
# run_tests.sh: run each Check suite binary given on the command line, print its
# output, and close with one line "N passed, N failed, N skipped" over all checks.
#
# A check that cannot run here (test_mpi without bin/mpi/ or mpirun, the emulated CUDA
# programs of test_cuda_emu without mpicc) returns early, which Check counts as a pass,
# after printing one line that starts with "SKIP: " and gives the reason. Each such line
# moves one check of that suite from passed to skipped. A suite binary that does not
# print Check's summary line, or exits non-zero, counts as one more failure.
#
# After "--", each argument NAME=COMMAND is a check run by bash that is not a Check suite
# (the layer check, fuzz-smoke): it counts as one check, passed when COMMAND exits 0,
# skipped when it exits 0 after a "SKIP: " line, failed otherwise; a COMMAND that closes
# with "NAME: N targets, N crashes" counts one check per target instead.
#
# Before the closing line, each failing suite is named again with its Check failure lines
# (or its last lines when it printed none), so the tail of a long log says what failed.
#
# Check's per-test timeouts are multiplied by CK_TIMEOUT_MULTIPLIER (Check's own variable),
# so a loaded machine does not fail a test that an idle one passes: GMA_TEST_TIMEOUT_SCALE
# sets it; without either, it is 1 + the load average per core at the start, at most 8.
set -u
if [ -z "${CK_TIMEOUT_MULTIPLIER:-}" ]; then
  if [ -n "${GMA_TEST_TIMEOUT_SCALE:-}" ]; then
    case $GMA_TEST_TIMEOUT_SCALE in
      ''|*[!0-9]*|0) echo "run_tests.sh: GMA_TEST_TIMEOUT_SCALE=$GMA_TEST_TIMEOUT_SCALE is not a whole number >= 1" >&2; exit 2 ;;
    esac
    CK_TIMEOUT_MULTIPLIER=$GMA_TEST_TIMEOUT_SCALE
  else
    CK_TIMEOUT_MULTIPLIER=$(awk -v c="$(nproc 2>/dev/null || echo 1)" '{m = 1 + int($1 / c); print (m > 8 ? 8 : m)}' /proc/loadavg 2>/dev/null)
    CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-1}
  fi
  export CK_TIMEOUT_MULTIPLIER
fi
echo "test timeouts x$CK_TIMEOUT_MULTIPLIER (CK_TIMEOUT_MULTIPLIER; GMA_TEST_TIMEOUT_SCALE=N sets it)"
pass=0; fail=0; skip=0; bad_bins=(); cmds=(); why=""
suites=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; cmds=("$@"); break; fi
  suites+=("$1"); shift
done
for t in "${suites[@]}"; do
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
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    bad_bins+=("$t"); [ -z "$line" ] && fail=$((fail + 1))
    # Check's failure lines (file:line:F|E:case:test:...), or the suite's last lines when it
    # printed none (a crash), repeated at the end so a log's tail names the cause
    w=$(echo "$out" | grep -E '^[^ :]+:[0-9]+:[FE]:' | head -5)
    [ -z "$w" ] && w=$(echo "$out" | grep -v '^$' | tail -3)
    why+="$t:"$'\n'"$(echo "$w" | sed 's/^/  /')"$'\n'
  fi
done
for c in "${cmds[@]}"; do
  name=${c%%=*}; cmd=${c#*=}
  echo "== $name"
  out=$(bash -c "$cmd" 2>&1); rc=$?
  echo "$out" | grep -v '^$'
  tl=$(echo "$out" | grep -E "^$name: [0-9]+ targets, [0-9]+ crashes$" | tail -1)
  if [ $rc -eq 0 ] && echo "$out" | grep -q '^SKIP: '; then skip=$((skip + 1))
  elif [ -n "$tl" ]; then
    n=$(echo "$tl" | sed -E 's/.*: ([0-9]+) targets.*/\1/'); k=$(echo "$tl" | sed -E 's/.*, ([0-9]+) crashes/\1/')
    pass=$((pass + n - k)); fail=$((fail + k))
    [ $rc -ne 0 ] && [ "$k" -eq 0 ] && fail=$((fail + 1))
    [ $rc -ne 0 ] && bad_bins+=("$name")
  elif [ $rc -eq 0 ]; then pass=$((pass + 1))
  else fail=$((fail + 1)); bad_bins+=("$name"); why+="$name:"$'\n'"$(echo "$out" | grep -v '^$' | tail -3 | sed 's/^/  /')"$'\n'; fi
done
echo
if [ ${#bad_bins[@]} -gt 0 ]; then echo "failing suites: ${bad_bins[*]}"; printf '%s' "$why"; fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] && [ ${#bad_bins[@]} -eq 0 ]
