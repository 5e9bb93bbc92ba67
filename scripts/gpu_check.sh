#!/usr/bin/env bash
# The GPU check of Weft, in one call on a machine with a CUDA GPU.
#
#   scripts/gpu_check.sh pack            here (any machine with nvcc): builds the CUDA build into
#                                        build-cuda/ and packs what the check runs into
#                                        .gpu-bundle/ (stripped, about 10 MB)
#   scripts/gpu_check.sh run [OUTDIR]    on the GPU machine, from the repository root: runs the
#                                        packed binaries and writes OUTDIR/gpu_check.log
#                                        (default build-cuda/gpu_check)
#
# What "run" does, in this order, within WEFT_GPU_CHECK_SECONDS (default 285: every step's limit
# is cut to the time left, and a step with under 5 s left does not run and counts as a failure):
#   1. the GPU, the driver, CUDA's version, and that the bundle's libraries resolve
#   2. the GPU suite with ranks as threads of one process (every collective, type and op at
#      1 to 4 ranks on one GPU, 8 for the direct allreduce; LL and Simple; the direct allreduce
#      and its graph replay; stream semantics; abort), through scripts/gtest_runner.py: one process
#      for the whole suite, a new one after a hang (20 s; what the hung test waits for is printed
#      first, WEFT_DUMP_SIGNAL) or a crash
#   3. the speed of allreduce on one GPU against its memory bound (gpu_allreduce_bench): the
#      direct kernel, which ranks as threads of one process take
#   4. a probe of cross-process CUDA IPC (one 2-rank test as forked processes)
#   5. the processes tests (their gtest process never touches CUDA; it forks the ranks): if the
#      probe passed, all of them; if not, it says so and runs only GPU buffers between two hosts
#      simulated with NCCL_HOSTID, one rank each (the network proxy, no CUDA IPC needed)
#   6. part of the host suite, with the CUDA build on a GPU machine (host buffers must still take
#      the host path)
#   7. PyTorch: the nccl symbols libtorch_cuda.so imports against Weft's exports, then, if none
#      is missing, tests/gpu/torch_client.py with Weft's libnccl.so.2 in place of torch's
#   8. the allreduce speed through the ring with WEFT_GPU_CHANNELS=32 (4 ranks get 16: half the GPU)
# WEFT_GPU_CHECK_STEPS="2 5" runs only those steps (and 1), for a rerun of what failed; 5 brings
# its probe, 4.
# The machine needs only the NVIDIA driver and python3 (with torch for step 7): the binaries link
# the CUDA runtime and GoogleTest statically.
set -uo pipefail
cd "$(dirname "$0")/.."

bundle=.gpu-bundle

pack() {
  set -e
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_CUDA=ON >/dev/null
  ninja -C build-cuda nccl weft_gpu_tests weft_multirank_tests gpu_allreduce_bench
  rm -rf "$bundle"
  mkdir -p "$bundle/lib"
  cp -L build-cuda/lib/libnccl.so.2 "$bundle/lib/libnccl.so.2"
  cp build-cuda/tests/gpu/weft_gpu_tests build-cuda/tests/weft_multirank_tests \
     build-cuda/perf/gpu/gpu_allreduce_bench "$bundle/"
  strip --strip-debug "$bundle/lib/libnccl.so.2" "$bundle"/weft_* "$bundle/gpu_allreduce_bench"
  du -sh "$bundle"
}

failures=()
deadline=0
steps_run=0

# The steps WEFT_GPU_CHECK_STEPS selects, as " 2 5 " (commas or spaces between numbers 2 to 8;
# step 5 needs its probe, step 4); empty: every step. Exits on anything else.
selected_steps() {
  local steps=" ${WEFT_GPU_CHECK_STEPS//,/ } "
  if ! [[ $steps =~ ^[[:space:]2-8]*$ ]]; then
    echo "WEFT_GPU_CHECK_STEPS='$WEFT_GPU_CHECK_STEPS': give step numbers 2 to 8" >&2
    exit 2
  fi
  [[ $steps != *" 5 "* ]] || steps+="4 "
  echo "$steps"
}

# wanted NAME: whether the selection (empty: every step) holds the step NAME's number ("7b. ..." is 7).
wanted() {
  local number=${1%%.*}
  [ -z "$selection" ] || [[ $selection == *" ${number%%[a-z]} "* ]]
}

# step NAME SECONDS COMMAND...: runs COMMAND under a limit cut to the time left, logs its result.
step() {
  local name=$1 limit=$2
  shift 2
  wanted "$name" || return 0
  local left=$((deadline - SECONDS))
  echo
  if [ "$left" -lt 5 ]; then
    echo "=== $name: not run, out of time"
    failures+=("$name (not run: out of time)")
    return 1
  fi
  [ "$limit" -le "$left" ] || limit=$left
  echo "=== $name (limit ${limit}s): $*"
  steps_run=$((steps_run + 1))
  local start=$SECONDS
  timeout --kill-after=5 "$limit" "$@"
  local status=$?
  echo "=== $name: exit $status after $((SECONDS - start)) s"
  [ "$status" -eq 0 ] || failures+=("$name (exit $status)")
  return "$status"
}

# suite NAME LOG FILTER BUDGET: the GPU tests that FILTER selects, through scripts/gtest_runner.py;
# LOG keeps their whole output.
suite() {
  local name=$1 log=$2 filter=$3 budget=$4
  local left=$((deadline - SECONDS - 5))
  [ "$budget" -le "$left" ] || budget=$((left > 0 ? left : 0))
  step "$name" $((budget + 10)) "${lib_env[@]}" python3 scripts/gtest_runner.py "$bundle/weft_gpu_tests" \
    --filter="$filter" --budget "$budget" --per-test 20 --dump-signal USR1 --name "$name" --log "$log"
}

# preflight: the bundle is there and its libraries resolve on this machine.
preflight() {
  local missing=0
  for file in "$bundle/lib/libnccl.so.2" "$bundle/weft_gpu_tests" "$bundle/weft_multirank_tests" \
              "$bundle/gpu_allreduce_bench"; do
    if [ ! -f "$file" ]; then
      echo "missing: $file (run 'scripts/gpu_check.sh pack' first, where nvcc is, and bring .gpu-bundle/ along)"
      missing=1
    fi
  done
  [ "$missing" -eq 0 ] || return 1
  if "${lib_env[@]}" ldd "$bundle/lib/libnccl.so.2" "$bundle/weft_gpu_tests" | grep 'not found'; then
    echo "the bundle needs libraries this machine lacks (above)"
    return 1
  fi
}

run() {
  local out=${1:-build-cuda/gpu_check}
  selection=
  [ -z "${WEFT_GPU_CHECK_STEPS:-}" ] || selection=$(selected_steps) || exit 2
  mkdir -p "$out"
  exec 3>&1 4>&2
  exec > >(tee "$out/gpu_check.log") 2>&1
  local tee_pid=$!
  deadline=$((SECONDS + ${WEFT_GPU_CHECK_SECONDS:-285}))
  # Only the test and benchmark binaries get the bundle's folder: torch must find Weft's library
  # the way torch_client.py puts it in place, not through LD_LIBRARY_PATH. SIGUSR1 makes them
  # print what each communicator waits for: the runner sends it to a test before killing it.
  lib_env=(env "LD_LIBRARY_PATH=$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" WEFT_DUMP_SIGNAL=USR1)
  local tests="$bundle/weft_gpu_tests"
  export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  # More hardware queues than ranks' streams: no rank's kernel queues behind another's.
  export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-32}

  echo "=== 1. machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  nvidia-smi | grep -m1 "CUDA Version" || true
  nproc
  preflight || failures+=("1. the bundle (above)")

  if [ ${#failures[@]} -eq 0 ]; then
    # GpuAcrossHosts forks ranks that use CUDA: it runs with the processes tests (step 5).
    suite "2. GPU suite, ranks as threads" "$out/threads.log" '-*processes*:GpuAcrossHosts.*' 80
    WEFT_GPU_DIRECT=1 step "3. allreduce speed on one GPU, direct kernel" 20 "${lib_env[@]}" \
      "$bundle/gpu_allreduce_bench" --max-bytes 1G --iters 20

    local ipc=yes processes='*processes*:GpuAcrossHosts.*:-*SendRecvRing_2ranks_processes'
    if wanted 4 || wanted 5; then
      local probe='Collectives/GpuCollective.MatchesReference/SendRecvRing_2ranks_processes'
      if ! step "4. cross-process CUDA IPC probe" 15 "${lib_env[@]}" "$tests" --gtest_filter="$probe" --gtest_brief=1
      then
        ipc=no
        processes='*2ranks_processes*hosts:GpuAcrossHosts.*'
        echo "=== 4. cross-process CUDA IPC does not work here: step 5 runs only the simulated hosts"
      fi
    fi
    suite "5. GPU suite, ranks as processes" "$out/processes.log" "$processes" 60

    step "6. host suite on a GPU machine (part)" 10 "${lib_env[@]}" "$bundle/weft_multirank_tests" \
      --gtest_filter='Collectives/ExactCollective.MatchesReference/*_2ranks_shm:Groups*' --gtest_brief=1

    if wanted 7; then
      if ! python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)'; then
        echo "=== 7. no torch for python3 here: PyTorch client not run"
        failures+=("7. PyTorch (no torch)")
      elif step "7a. nccl symbols torch imports" 10 tests/gpu/torch_symbols.sh "$bundle/lib/libnccl.so.2"; then
        [ "$ipc" = yes ] || echo "=== 7b. needs cross-process CUDA IPC, which step 4 found missing"
        local rank_logs
        rank_logs=$(mktemp -d)
        step "7b. torch.distributed with Weft" 65 python3 tests/gpu/torch_client.py \
          --lib "$bundle/lib/libnccl.so.2" --timeout 55 --log-dir "$rank_logs"
        tail -n +1 "$rank_logs"/*.out "$rank_logs"/*.err "$rank_logs"/*.nccl > "$out/torch_ranks.log" 2>&1
        rm -rf "$rank_logs"
      else
        echo "=== 7b. not run: torch would not load with symbols Weft lacks (7a)"
      fi
    fi

    WEFT_GPU_DIRECT=0 WEFT_GPU_CHANNELS=32 step "8. allreduce speed through the ring, WEFT_GPU_CHANNELS=32" 15 \
      "${lib_env[@]}" "$bundle/gpu_allreduce_bench" --max-bytes 256M --iters 10
  fi

  echo
  local status=0
  if [ "$steps_run" -eq 0 ] && [ -n "$selection" ]; then
    failures+=("WEFT_GPU_CHECK_STEPS='$WEFT_GPU_CHECK_STEPS' ran no step")
  fi
  if [ ${#failures[@]} -eq 0 ]; then
    echo "=== GPU check: every step passed"
  else
    echo "=== GPU check: ${#failures[@]} step(s) failed:"
    printf '    %s\n' "${failures[@]}"
    status=1
  fi
  exec 1>&3 2>&4 3>&- 4>&-
  wait "$tee_pid"
  return "$status"
}

case "${1:-}" in
  pack) pack ;;
  run) shift; run "$@" ;;
  *) sed -n '2,9p' "$0"; exit 2 ;;
esac
