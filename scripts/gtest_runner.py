#!/usr/bin/env python3
"""Runs a GoogleTest binary's tests in as few processes as it can, going on after a hang or a crash.

    gtest_runner.py BINARY [--filter F] [--per-test S] [--budget S] [--name NAME] [--log FILE]
                           [--dump-signal USR1]

Every selected test runs in one process. When a test runs longer than --per-test seconds, or its
process dies under it, the runner kills the process and everything it forked (its process group),
records that test as hung or crashed, and starts a new process for the tests that have not run.
It does so after a failed test too: a GPU fault there (an illegal address) would fail every later
test of the process.
No test is started once --budget seconds have passed; a test still running then is stopped (with
a hang's report where it had run for more than a few seconds).

One process for many tests is what makes this worth having on a GPU: each process pays the CUDA
start once, where a process per test pays it for every test.

Prints one line per test (ok, FAILED, skipped, HUNG, CRASHED, with its seconds), the last lines
of each failure's output (for a hang, then every thread of its processes: its state, the system
call it is in and its kernel wait channel), and a summary line:
    NAME: P passed, F failed, S skipped, H hung, C crashed, N not run (time) in T s
--log FILE keeps every line the binary printed. Exits 0 only when every selected test passed or
skipped and every process ended cleanly; 3 where the only shortfall is tests the budget left
unrun (or stopped); 1 otherwise.
"""

import argparse
import ctypes
import os
import platform
import select
import signal
import subprocess
import sys
import time

RUN, OK, FAILED, SKIPPED = "[ RUN      ] ", "[       OK ] ", "[  FAILED  ] ", "[  SKIPPED ] "
FAILURE_LINES = 40
REPORTED_AFTER = 3  # seconds a test stopped for time must have run to be reported as a hang is
# x86-64 numbers of the system calls a waiting thread is usually in.
SYSCALLS = {0: "read", 1: "write", 7: "poll", 16: "ioctl", 23: "select", 24: "sched_yield", 34: "pause",
            35: "nanosleep", 61: "wait4", 202: "futex", 230: "clock_nanosleep", 232: "epoll_wait",
            270: "pselect6", 271: "ppoll", 281: "epoll_pwait"}


def list_tests(binary, test_filter):
    """The full names of the tests that test_filter selects, in the binary's order, less the
    DISABLED_ ones, which gtest lists but does not run."""
    try:
        listed = subprocess.run([binary, "--gtest_list_tests", "--gtest_filter=" + test_filter],
                                capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        sys.exit(f"{binary} did not list its tests within 60 s")
    if listed.returncode != 0:
        sys.exit(f"{binary} could not list its tests ({describe(listed.returncode)}):\n{listed.stdout}{listed.stderr}")
    listing = listed.stdout
    names, suite = [], ""
    for line in listing.splitlines():
        if not line.strip() or line.startswith("Running main()"):
            continue
        if line.startswith("  "):
            name = suite + line.split()[0]
            if "DISABLED_" not in name:
                names.append(name)
        else:
            suite = line.split()[0]
    return names


class Run:
    """The results so far (test name -> outcome), and what went wrong outside any test."""

    def __init__(self):
        self.results = {}
        self.process_errors = []

    def record(self, name, outcome, seconds, output=(), threads=()):
        self.results[name] = outcome
        print(f"{outcome:8} {seconds:6.1f} s  {name}", flush=True)
        if outcome not in ("ok", "skipped"):
            for line in list(output)[-FAILURE_LINES:] + list(threads):
                print("    | " + line, flush=True)

    def count(self, outcome):
        return sum(1 for value in self.results.values() if value == outcome)


def marked(line, prefix, name):
    """Whether line holds gtest's `prefix` marker for test `name` (a test's own output may precede
    the marker on its line, when it did not end with a newline)."""
    at = line.find(prefix)
    return at >= 0 and line[at + len(prefix):].split(maxsplit=1)[0].rstrip(",") == name


def read(path):
    try:
        with open(path, errors="replace") as file:  # a name cut at 15 bytes may split a character
            return file.read().strip()
    except OSError:
        return ""


def catches(pid, signum):
    """Whether process pid has a handler for signal signum (its default action may be to end)."""
    for line in read(f"/proc/{pid}/status").splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def group_pids(group):
    """The processes of process group `group`."""
    pids = []
    for pid in sorted((int(entry) for entry in os.listdir("/proc") if entry.isdigit())):
        stat = read(f"/proc/{pid}/stat")
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp ...
        if len(fields) >= 3 and int(fields[2]) == group:
            pids.append(pid)
    return pids


def group_threads(group):
    """A line per thread of every process in process group `group`: what it is doing now."""
    names = SYSCALLS if platform.machine() == "x86_64" else {}
    lines = []
    for pid in group_pids(group):
        try:
            tids = sorted(int(entry) for entry in os.listdir(f"/proc/{pid}/task") if entry.isdigit())
        except OSError:  # it has just ended
            continue
        for tid in tids:
            task = f"/proc/{pid}/task/{tid}"
            state = read(f"{task}/stat")
            state = state[state.rfind(")") + 2:].split()[:1] or ["?"]
            call = read(f"{task}/syscall").split()[:1] or ["?"]
            call = names.get(int(call[0]), call[0]) if call[0].lstrip("-").isdigit() else call[0]
            lines.append(f"thread {tid} of {pid} ({read(task + '/comm')}): state {state[0]}, system call {call}, "
                         f"waits in {read(task + '/wchan') or '-'}")
    return lines


def die_with_parent():
    """In a test process, before exec: the kernel kills it if this runner dies (a KILL past the
    step's limit), so that it cannot keep the GPU for the steps after."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def run_once(binary, names, run, per_test, deadline, log, dump_signal=None):
    """Runs names in one process until it ends, a test outlasts per_test, or deadline passes.
    Before killing a hung test's process, sends dump_signal (if given) to those of its processes
    that catch it (to the others it could be fatal: a test's parent that forked ranks, say) and
    keeps 2 s of what they print then. A test stopped for time after more than REPORTED_AFTER
    seconds is reported as a hung one is."""
    global running
    process = running = subprocess.Popen([binary, "--gtest_color=no", "--gtest_filter=" + ":".join(names)],
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=die_with_parent)
    current, started, output, pending = None, time.monotonic(), [], b""
    quiet_since, failed_here = time.monotonic(), False

    def stop(outcome):
        global running
        threads = []
        report = outcome == "HUNG" or (current is not None and time.monotonic() - started > REPORTED_AFTER)
        signalled = False
        if report:
            try:
                threads = group_threads(process.pid)
                if dump_signal is not None:
                    for pid in group_pids(process.pid):
                        if catches(pid, dump_signal):
                            os.kill(pid, dump_signal)
                            signalled = True
            except Exception as error:  # the kill below must happen whatever /proc holds
                threads.append(f"(its threads could not be listed or signalled: {error!r})")
        if signalled:
            until, tail = time.monotonic() + 2, b""
            while time.monotonic() < until and select.select([process.stdout], [], [], until - time.monotonic())[0]:
                chunk = os.read(process.stdout.fileno(), 65536)
                if not chunk:
                    break
                tail += chunk
            for line in (pending + tail).decode(errors="replace").splitlines():
                log.write(line + "\n")
                output.append(line)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        running = None
        if current is not None:
            run.record(current, outcome, time.monotonic() - started, output, threads)

    while True:
        now = time.monotonic()
        limit = min(deadline, (started if current else quiet_since) + per_test)
        if now >= limit:
            if now >= deadline:
                stop("STOPPED")
                print(f"    (out of time: {current or 'the process'} stopped)", flush=True)
            else:
                stop("HUNG")
                if current is None:
                    run.process_errors.append(f"a process hung outside any test after {per_test} s")
            return
        ready, _, _ = select.select([process.stdout], [], [], limit - now)
        if not ready:
            continue
        chunk = os.read(process.stdout.fileno(), 65536)
        if not chunk:
            if pending:  # a last line without its newline: an abort's message, say
                line = pending.decode(errors="replace")
                log.write(line + "\n")
                output.append(line)
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        failed_now = False
        for raw in lines:
            line = raw.decode(errors="replace")
            log.write(line + "\n")
            if failed_now:
                continue  # logged only: what follows a failure runs again in a new process
            output.append(line)
            for prefix, outcome in ((OK, "ok"), (FAILED, "FAILED"), (SKIPPED, "skipped")):
                if current and marked(line, prefix, current):
                    run.record(current, outcome, time.monotonic() - started, output)
                    current, quiet_since = None, time.monotonic()
                    failed_now |= outcome == "FAILED"
            at = line.find(RUN)
            if at >= 0:
                if current is not None:
                    run.record(current, "FAILED", time.monotonic() - started, output + ["(no result line)"])
                    failed_here = True
                current, started, output = line[at + len(RUN):].strip(), time.monotonic(), []
        if failed_now:  # the next test (begun already in these lines, or not) starts in a new process
            if pending:
                log.write(pending.decode(errors="replace") + "\n")
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            running = None
            return
    status = process.wait()
    running = None
    if current is not None:
        run.record(current, "CRASHED", time.monotonic() - started, output + [f"(process ended: {describe(status)})"])
    elif status != 0 and not failed_here:
        run.process_errors.append(f"a process ended with {describe(status)} after its tests")


running = None  # the test process now running, for the SIGTERM handler


def end_on_signal(signum, frame):
    """Ends the test process and everything it forked (its own session), then this runner."""
    if running is not None:
        try:
            os.killpg(running.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sys.exit(128 + signum)


def describe(status):
    return f"signal {-status}" if status < 0 else f"exit code {status}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--filter", default="*")
    parser.add_argument("--per-test", type=float, default=60, help="seconds one test may run")
    parser.add_argument("--budget", type=float, default=600, help="seconds after which no test starts")
    parser.add_argument("--name", default="tests")
    parser.add_argument("--log", default=os.devnull)
    parser.add_argument("--dump-signal", help="a signal (USR1) that makes a hung test print what it waits for "
                        "(Weft's WEFT_DUMP_SIGNAL), sent before it is killed")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, end_on_signal)
    dump_signal = getattr(signal, "SIG" + args.dump_signal) if args.dump_signal else None

    began = time.monotonic()
    deadline = began + args.budget
    names = list_tests(args.binary, args.filter)
    if not names:
        print(f"{args.name}: no test matches {args.filter!r}", flush=True)
        return 1
    run = Run()
    with open(args.log, "w", buffering=1) as log:  # line by line: a killed runner loses nothing
        while True:
            remaining = [name for name in names if name not in run.results]
            if not remaining or time.monotonic() >= deadline:
                break
            before = len(run.results)
            run_once(args.binary, remaining, run, args.per_test, deadline, log, dump_signal)
            if len(run.results) == before:
                run.process_errors.append("a process ran no test: not starting another")
                break
    not_run = len(names) - len(run.results)
    for error in run.process_errors:
        print("    " + error, flush=True)
    counts = [run.count(outcome) for outcome in ("ok", "FAILED", "skipped", "HUNG", "CRASHED", "STOPPED")]
    print(f"{args.name}: {counts[0]} passed, {counts[1]} failed, {counts[2]} skipped, {counts[3]} hung, "
          f"{counts[4]} crashed, {not_run + counts[5]} not run (time) in {time.monotonic() - began:.0f} s", flush=True)
    clean = counts[0] + counts[2] == len(names) and not run.process_errors
    if clean:
        return 0
    only_time = counts[0] + counts[2] + not_run + counts[5] == len(names) and not run.process_errors
    return 3 if only_time else 1


if __name__ == "__main__":
    sys.exit(main())
