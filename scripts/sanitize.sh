#!/usr/bin/env bash
# Builds Weft with gcc's sanitizers and runs its tests under them:
#   scripts/sanitize.sh [asan]  AddressSanitizer + UndefinedBehaviorSanitizer (and LeakSanitizer),
#                               into build-asan/: the unit and multirank suites
#   scripts/sanitize.sh tsan    ThreadSanitizer, into build-tsan/: the tests whose ranks are threads
#                               of one process (TSan sees the threads of one process only)
#   scripts/sanitize.sh ci      build-asan/ without the perf binaries: the unit tests and a subset of
#                               the multirank suite, 10 to 15 minutes on 2 cores with the build (CI)
# Extra arguments go to ctest (e.g. -R Bootstrap). Every binary, libnccl.so.2 included, is built
# with the sanitizer, so each process loads one sanitizer runtime, named by its executable. A program
# built without it can use build-asan/lib/libnccl.so.2 with the runtime preloaded (it must come
# first): LD_PRELOAD=$(gcc -print-file-name=libasan.so) LD_LIBRARY_PATH=build-asan/lib ./app
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-asan}
[ $# -gt 0 ] && shift

# What a sanitizer build needs (scripts/setup.sh installs these and more).
packages=(cmake g++ make libgtest-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# -O1 keeps stacks readable and the large tests fast enough; no NDEBUG, so assert() checks too.
build() {  # build_dir sanitizers [cmake options...]
  local dir=$1 sanitizers=$2
  shift 2
  echo "== building into $dir/ with -fsanitize=$sanitizers"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
    -DWEFT_SANITIZE="$sanitizers" "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc)"
}

run_tests() {  # build_dir [ctest options...]
  local dir=$1
  shift
  # LeakSanitizer suppressions, each with its reason.
  cat >"$dir/lsan_suppressions.txt" <<'END'
# The ncclComm handle of a destroyed or aborted communicator stays allocated as a tombstone, so that
# a later call on it returns ncclInvalidArgument instead of reading freed memory (src/api/comm_api.cc,
# retireHandle). Only the handle (56 bytes) is kept; its communicator is released.
leak:newHandle
END
  echo "== running the tests in $dir/ under the sanitizer"
  LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/$dir/lsan_suppressions.txt:print_suppressions=0} \
    ctest --test-dir "$dir" --output-on-failure --timeout 900 -j 2 "$@"
}

# A report fails the test that made it. LeakSanitizer checks each process at exit, and the harness
# has it check forked ranks before their _exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# TSan goes on after a race and fails the process at exit, so that one run shows every race.
export TSAN_OPTIONS=${TSAN_OPTIONS:-second_deadlock_stack=1}

# The runs launched by mpirun. OpenMPI leaves its own allocations at MPI_Finalize, and its plugins
# (dlopened, then closed) defeat LeakSanitizer's stack traces, so no suppression can name them:
# these runs are checked with leak detection off.
mpi_runs='^abi_nvidia_collectives_|_mpi$|^compare_mpi_'

# TSan sees the threads of one process, so it runs the tests whose ranks are threads. Left out: the
# multirank tests in processes mode, the unit tests that fork, perf/compare's forked teams, and the
# runs under mpirun (whose OpenMPI is not built with TSan either).
forked_ranks='^Collectives/|^ApiErrors\.|^RankRunnerProcesses\.|/Processes$'
forked_ranks+='|^BootstrapTest\.RanksAsForkedProcesses$|^ShmTransport\.ForkedSenderProcessStreamsToParent$'
forked_ranks+='|^ProxyThreadFork\.'
forked_ranks+="|^compare_(visible_allreduce|tcp_loopback)_bound_|$mpi_runs"

# CI's share of the multirank suite: every collective (and the trees) at 2 and 3 ranks over both
# transports, the trees at 5 ranks and over hosts, LL, pat and rhd at 2 and 3 ranks, and all the rest
# of the suite; the other rank counts and the large collectives add time more than code paths.
ci_skipped='^(Collectives|Trees)/(LargeCollective\.|ExactCollective\.MatchesReference/[A-Za-z]+_[148]ranks_)'
ci_skipped+='|^(LowLatency|Pat|Rhd)/(LargeCollective\.|ExactCollective\.MatchesReference/[A-Za-z]+_[145678]ranks_)'

# The tests of build-asan/ with the given labels, but for those matching `skipped`; the mpirun ones
# without leak checks.
run_asan_tests() {  # labels skipped [ctest options...]
  local labels=$1 skipped=$2 failed=0
  shift 2
  run_tests build-asan -L "$labels" -E "${skipped:+$skipped|}$mpi_runs" "$@" || failed=1
  ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 run_tests build-asan -L "$labels" -R "$mpi_runs" \
    ${skipped:+-E "$skipped"} "$@" || failed=1
  return $failed
}

case "$mode" in
  asan)
    build build-asan address,undefined -DWEFT_BUILD_PERF=ON
    run_asan_tests 'unit|multirank' '' "$@"
    ;;
  tsan)
    build build-tsan thread
    run_tests build-tsan -L 'unit|multirank' -E "$forked_ranks" "$@"
    ;;
  ci)
    build build-asan address,undefined -DWEFT_BUILD_PERF=OFF
    run_asan_tests 'unit|multirank' "$ci_skipped" "$@"
    ;;
  *)
    echo "usage: $0 [asan|tsan|ci] [ctest options...]" >&2
    exit 2
    ;;
esac
