#!/usr/bin/env bash
# Checks scripts/gtest_runner.py on tests/runner/runner_fixture.cc: a clean run exits 0 (a result
# marker after output without a newline is still seen; a disabled test is not waited for); a run
# with a failure, a hang and a crash reports each (with what the hung test printed on the dump
# signal and what each of its threads, its child's too, was doing), runs the tests after them,
# each time in a new process, exits 1, and leaves no process of the hung test behind.
#   check_runner.sh RUNNER FIXTURE
set -uo pipefail
runner=$1 fixture=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 "$runner" "$fixture" --name clean >"$work/clean.log" 2>&1
status=$?
[ "$status" -eq 0 ] || { cat "$work/clean.log"; fail "a clean run exited $status"; }
grep -q '^clean: 6 passed, 0 failed, 1 skipped, 0 hung, 0 crashed, 0 not run' "$work/clean.log" \
  || { cat "$work/clean.log"; fail "a clean run's summary"; }

WEFT_RUNNER_FIXTURE_FAULTS="$work/child.pid" python3 "$runner" "$fixture" --name faults --per-test 3 \
  --dump-signal USR1 --log "$work/faults.full" >"$work/faults.log" 2>&1
status=$?
cat "$work/faults.log"
[ "$status" -eq 1 ] || fail "a run with faults exited $status, not 1"
grep -q '^faults: 3 passed, 1 failed, 1 skipped, 1 hung, 1 crashed, 0 not run' "$work/faults.log" \
  || fail "the summary of a run with faults"
grep -q '^HUNG .*RunnerFixture.HangsWithAChild' "$work/faults.log" || fail "the hang is not named"
grep -q '^CRASHED .*RunnerFixture.Crashes' "$work/faults.log" || fail "the crash is not named"
grep -q '| the hung test waits for a peer' "$work/faults.log" || fail "the hung test's dump is not shown"
# (Where /proc hides a thread's system call, the runner prints "?".)
grep -Eq '\| thread [0-9]+ of [0-9]+ \([^)]+\): state S, system call (pause|[0-9]+|\?), waits in ' \
  "$work/faults.log" || fail "the hung test's threads are not shown"
child=$(cat "$work/child.pid")
grep -q "| thread $child of $child " "$work/faults.log" || fail "the hung test's child is not among its threads"
grep -q '| .*failing as asked' "$work/faults.log" || fail "the failure's output is not shown"
grep -q 'RUN .*PassesAfterTheCrash' "$work/faults.full" || fail "the log misses the test after the crash"
# One process at first, and a new one after the failure, the hang and the crash.
processes=$(grep -c '^Running main()' "$work/faults.full")
[ "$processes" -eq 4 ] || fail "$processes processes ran the tests, not 4"
# Killed means gone or a zombie waiting for its new parent to reap it (state Z).
sleep 0.5
state=$(awk '{print $3}' "/proc/$child/stat" 2>/dev/null)
if [ -n "$state" ] && [ "$state" != Z ]; then
  kill -9 "$child"
  fail "the hung test's child $child outlived it (state $state)"
fi

timeout 30 python3 "$runner" "$fixture" --name budget --budget 0 >"$work/budget.log" 2>&1
[ $? -eq 3 ] || fail "a run with no time left should exit 3 (time, not a failure)"
grep -q '^budget: 0 passed, .* 7 not run (time)' "$work/budget.log" || { cat "$work/budget.log"; fail "budget"; }
echo "gtest_runner: every check passed"
