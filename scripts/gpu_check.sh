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
# What "run" does, each step under its own time limit (at most about 6.5 minutes in all, on one H200):
#   1. the GPU, the driver and CUDA's version
#   2. the GPU suite with ranks as threads of one process (every collective, type and op at
#      1 to 4 ranks on one GPU, 8 for the direct allreduce; LL and Simple; the direct allreduce
#      and its graph replay; stream semantics; abort)
#   3. a probe of cross-process CUDA IPC (one 2-rank test as forked processes); if it passes, the
#      rest of the processes tests, each in a process of its own (a process that has used CUDA
#      cannot fork ranks that use it); if not, it says so and the ranks stay threads. Then GPU
#      buffers between two hosts simulated with NCCL_HOSTID, one rank each (the network proxy over
#      sockets, no CUDA IPC needed), and a lost host ending a waiting kernel
#   4. part of the host suite, with the CUDA build on a GPU machine (host buffers must still take
#      the host path)
#   5. PyTorch with Weft's libnccl.so.2 preloaded (tests/gpu/torch_client.py), if torch is there
#   6. the speed of allreduce on one GPU against its memory bound (gpu_allreduce_bench): the
#      direct kernel (ranks as threads of one process take it), then the ring with 32 channels
# The machine needs only the NVIDIA driver (and python3 with torch for step 5): the binaries link
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

# step NAME SECONDS COMMAND...: runs COMMAND under a limit, logs its output and result.
failures=()
step() {
  local name=$1 limit=$2
  shift 2
  echo
  echo "=== $name (limit ${limit}s): $*"
  local start=$SECONDS
  timeout --kill-after=5 "$limit" "$@"
  local status=$?
  echo "=== $name: exit $status after $((SECONDS - start)) s"
  [ "$status" -eq 0 ] || failures+=("$name (exit $status)")
  return "$status"
}

# run_each NAME FILTER BUDGET PER_TEST OUTDIR: runs each GPU test that FILTER selects in a process
# of its own (a hang or crash ends that test only; a process that has used CUDA cannot fork ranks
# that use it), until BUDGET seconds have passed.
run_each() {
  local name=$1 filter=$2 budget=$3 limit=$4 out=$5
  local tests="$bundle/weft_gpu_tests" start=$SECONDS passed=0 failed=0 skipped=0
  echo
  echo "=== $name (budget ${budget}s, ${limit}s per test)"
  local names
  names=$("$tests" --gtest_list_tests --gtest_filter="$filter" | awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}')
  for test in $names; do
    if [ $((SECONDS - start)) -gt "$budget" ]; then
      skipped=$((skipped + 1))
      continue
    fi
    local began=$SECONDS
    if timeout --kill-after=5 "$limit" "$tests" --gtest_filter="$test" --gtest_brief=1 >"$out/one_test.log" 2>&1; then
      passed=$((passed + 1))
      echo "ok $((SECONDS - began)) s $test"
    else
      failed=$((failed + 1))
      echo "--- $test failed after $((SECONDS - began)) s:"
      tail -40 "$out/one_test.log"
      failures+=("$name: $test")
    fi
  done
  echo "=== $name: $passed passed, $failed failed, $skipped not run (time) in $((SECONDS - start)) s"
  [ "$skipped" -eq 0 ] || failures+=("$name: $skipped tests not run for lack of time")
  [ "$failed" -eq 0 ]
}

run() {
  local out=${1:-build-cuda/gpu_check}
  mkdir -p "$out"
  exec > >(tee "$out/gpu_check.log") 2>&1
  export LD_LIBRARY_PATH="$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local tests="$bundle/weft_gpu_tests"
  export NCCL_DEBUG=${NCCL_DEBUG:-WARN}

  echo "=== 1. machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  nvidia-smi | grep -m1 "CUDA Version" || true
  nproc

  run_each "2. GPU suite, ranks as threads" '-*processes*' 120 25 "$out" || true

  echo
  if step "3a. cross-process CUDA IPC probe" 20 "$tests" \
      --gtest_filter='Collectives/GpuCollective.MatchesReference/SendRecvRing_2ranks_processes' --gtest_brief=1; then
    run_each "3b. GPU suite, ranks as processes" '*processes*:-*SendRecvRing_2ranks_processes:*2ranks_processes*hosts' \
      60 20 "$out" || true
  else
    echo "=== 3. cross-process CUDA IPC does not work here: ranks were run as threads only"
  fi
  # One gtest process: its tests fork every rank, and the parent itself never touches CUDA.
  step "3c. GPU buffers across simulated hosts (network proxy)" 70 "$tests" \
    --gtest_filter='*2ranks_processes*hosts:GpuAcrossHosts.*' --gtest_brief=1

  step "4. host suite on a GPU machine (part)" 15 "$bundle/weft_multirank_tests" \
    --gtest_filter='Collectives/ExactCollective.MatchesReference/*_2ranks_shm:Groups*' --gtest_brief=1

  if python3 -c 'import torch' 2>/dev/null; then
    step "5a. nccl symbols torch imports" 15 tests/gpu/torch_symbols.sh "$bundle/lib/libnccl.so.2"
    step "5b. torch.distributed with Weft" 50 python3 tests/gpu/torch_client.py --lib "$bundle/lib/libnccl.so.2" --timeout 45
  else
    echo "=== 5. no torch here: PyTorch client not run"
  fi

  step "6a. allreduce speed on one GPU" 20 "$bundle/gpu_allreduce_bench" --max-bytes 1G --iters 20
  WEFT_GPU_DIRECT=0 WEFT_GPU_CHANNELS=32 step "6b. the same through the ring, 32 channels" 15 \
    "$bundle/gpu_allreduce_bench" --max-bytes 256M --iters 10

  echo
  if [ ${#failures[@]} -eq 0 ]; then
    echo "=== GPU check: every step passed"
    return 0
  fi
  echo "=== GPU check: ${#failures[@]} step(s) failed:"
  printf '    %s\n' "${failures[@]}"
  return 1
}

case "${1:-}" in
  pack) pack ;;
  run) shift; run "$@" ;;
  *) sed -n '2,11p' "$0"; exit 2 ;;
esac
