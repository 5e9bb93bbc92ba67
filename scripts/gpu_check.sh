#!/usr/bin/env bash
# The GPU check of Weft, in one call on a machine with a CUDA GPU.
#
#   scripts/gpu_check.sh pack            here (any machine with nvcc): builds the CUDA build into
#                                        build-cuda/ and packs what the check runs into
#                                        .gpu-bundle/ (stripped, about 20 MB)
#   scripts/gpu_check.sh run [OUTDIR]    on the GPU machine, from the repository root: runs the
#                                        packed binaries and writes OUTDIR/gpu_check.log
#                                        (default build-cuda/gpu_check)
#
# What "run" does, in the order 1, 4, 2, 3, 5 to 8, within WEFT_GPU_CHECK_SECONDS (default 285:
# every step's limit is cut to the time left, and a step with under 5 s left does not run and
# counts as a failure):
#   1. the bundle's commit (and whether the sources beside it changed since: the check then fails,
#      after running), the GPU (the run stops where nvidia-smi sees none), the driver, CUDA's
#      version, glibc's, persistence and compute modes, whether MPS runs, and that the bundle's
#      libraries resolve; an nvidia-smi in the background logs the GPU every 5 s (gpu_monitor.csv)
#      and keeps the driver loaded between the processes that the steps start
#   2. the GPU suite with ranks as threads of one process (every collective, type and op at
#      1 to 4 ranks on one GPU, 8 for the direct allreduce; LL and Simple; the direct allreduce;
#      CUDA graph capture and replay; stream semantics; abort), through scripts/gtest_runner.py:
#      one process for the whole suite, a new one after a failure, a hang (20 s; what each of
#      the hung test's threads is in, and what its communicators and their GPU blocks wait for,
#      WEFT_DUMP_SIGNAL, are printed first) or a crash
#   3. the speed of allreduce on one GPU against its memory bound (gpu_allreduce_bench): the
#      direct kernel, which ranks as threads of one process take (a bench past its limit, once it
#      has a communicator, prints what its kernels wait for before it is killed, as a hung test
#      does)
#   4. whether CUDA IPC works across processes here, asked without Weft (cuda_ipc_probe), first,
#      on a GPU no step has used; a "no" is the machine's, not a failure (a probe that hangs, or
#      cannot set itself up, counts as a no and as a failure)
#   5. PyTorch: the nccl symbols libtorch_cuda.so imports against Weft's exports (where nm or
#      readelf is here), and `import torch` with Weft's library preloaded (which binds them all);
#      then, if torch imported, tests/gpu/torch_client.py with Weft's libnccl.so.2 in place of
#      torch's (2 ranks on the GPU; 1 if step 4 found no CUDA IPC)
#   6. the processes tests, in all the time left but steps 7 and 8's (their gtest process never
#      touches CUDA; it forks the ranks, each of which starts CUDA): if the
#      probe passed, all of them (with a peer process that dies while a kernel waits for it); if
#      not, it says so and runs only GPU buffers between two hosts simulated with NCCL_HOSTID, one
#      rank each (the network proxy, no CUDA IPC needed), a lost host among them
#   7. part of the host suite, with the CUDA build on a GPU machine (host buffers must still take
#      the host path)
#   8. the allreduce speed through the ring with WEFT_GPU_CHANNELS=32 (4 ranks get 16: half the GPU)
# WEFT_GPU_TESTS_REQUIRE_GPU=1 is set: a GPU test that finds no usable GPU fails, never skips.
# WEFT_GPU_TEST_DEADLINE_S=15 is set: each GPU test's own time limit, under the runner's 20 s.
# WEFT_GPU_CHECK_STEPS="2 6" runs only those steps (and 1), for a rerun of what failed; 5 and 6
# bring the probe, 4.
# The machine needs only the NVIDIA driver and python3 (with torch for step 5): the binaries link
# the CUDA runtime and GoogleTest statically; they need libudev.so.1 and a glibc as new as the one
# pack names.
set -uo pipefail
cd "$(dirname "$0")/.."

bundle=.gpu-bundle

pack() {
  set -e
  rm -rf "$bundle"  # a failed build leaves no bundle behind to be taken for this one
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_CUDA=ON >/dev/null
  ninja -C build-cuda nccl weft_gpu_tests weft_multirank_tests gpu_allreduce_bench cuda_ipc_probe
  mkdir -p "$bundle/lib"
  cp -L build-cuda/lib/libnccl.so.2 "$bundle/lib/libnccl.so.2"
  cp build-cuda/tests/gpu/weft_gpu_tests build-cuda/tests/weft_multirank_tests \
     build-cuda/perf/gpu/gpu_allreduce_bench build-cuda/tests/gpu/cuda_ipc_probe "$bundle/"
  strip --strip-debug "$bundle/lib/libnccl.so.2" "$bundle"/weft_* "$bundle/gpu_allreduce_bench" \
    "$bundle/cuda_ipc_probe"
  { git rev-parse HEAD; git status --short; } > "$bundle/commit.txt"
  # What the bundle was built from, so that run can tell a bundle older than the sources beside it.
  # (A tracked file deleted here is left out, and counts as changed at run. Scripts run from the
  # tree, not the bundle: they are left out.)
  git ls-files -z --cached --others --exclude-standard $source_dirs | grep -zv -e '\.py$' -e '\.sh$' \
    | xargs -0 sha256sum > "$bundle/sources.sha256" 2>/dev/null || true
  echo "newest glibc the bundle needs: $(objdump -T "$bundle"/lib/libnccl.so.2 "$bundle"/weft_* \
    "$bundle"/gpu_allreduce_bench "$bundle"/cuda_ipc_probe | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
  du -sh "$bundle"
}

# Where the bundle's build reads its sources.
source_dirs="CMakeLists.txt include src algorithms transport topology sim tests perf"

# new_sources: the source files beside the bundle that it was not built from (a glob of the build
# takes in any new .cc), one line each.
new_sources() {
  # shellcheck disable=SC2086
  find $source_dirs -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.c' \
      -o -name CMakeLists.txt \) 2>/dev/null | sort | comm -23 - <(awk '{print $2}' "$bundle/sources.sha256" | sort) \
    | sed 's/$/: new since the bundle was packed/'
}

failures=()
deadline=0
steps_run=0

# The steps WEFT_GPU_CHECK_STEPS selects, as " 2 6 " (commas or spaces between numbers 2 to 8;
# steps 5 and 6 need the probe, step 4); empty: every step. Exits on anything else.
selected_steps() {
  local steps=" ${WEFT_GPU_CHECK_STEPS//,/ } "
  if ! [[ $steps =~ ^[[:space:]2-8]*$ ]]; then
    echo "WEFT_GPU_CHECK_STEPS='$WEFT_GPU_CHECK_STEPS': give step numbers 2 to 8" >&2
    exit 2
  fi
  [[ $steps != *" 5 "* && $steps != *" 6 "* ]] || steps+="4 "
  echo "$steps"
}

# wanted NAME: whether the selection (empty: every step) holds the step NAME's number ("7b. ..." is 7).
wanted() {
  local number=${1%%.*}
  [ -z "$selection" ] || [[ $selection == *" ${number%%[a-z]} "* ]]
}

# step NAME SECONDS COMMAND...: runs COMMAND under a limit cut to the time left, logs its result.
# At the limit COMMAND gets $step_signal (default TERM; USR1 makes Weft's binaries print what they
# wait for, WEFT_DUMP_SIGNAL) and, 5 s later, KILL.
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
  timeout --signal="${step_signal:-TERM}" --kill-after=5 "$limit" "$@"
  local status=$?
  echo "=== $name: exit $status after $((SECONDS - start)) s"
  [ "$status" -eq 0 ] || failures+=("$name (exit $status)")
  return "$status"
}

# suite NAME LOG FILTER BUDGET: the GPU tests that FILTER selects, through scripts/gtest_runner.py;
# LOG keeps their whole output.
suite() {
  local name=$1 log=$2 filter=$3 budget=$4
  # The runner's last stop (the hung test's dump, a CUDA process's end) fits before the step's limit.
  local left=$((deadline - SECONDS - 12))
  [ "$budget" -le "$left" ] || budget=$left
  [ "$budget" -ge 0 ] || budget=0
  step "$name" $((budget + 10)) "${lib_env[@]}" python3 scripts/gtest_runner.py "$bundle/weft_gpu_tests" \
    --filter="$filter" --budget "$budget" --per-test 20 --dump-signal USR1 --name "$name" --log "$log"
  # Exit 3: every test that ran passed, but time ran out before some ran: a rerun's, not Weft's.
  if [ $? -eq 3 ]; then
    failures[${#failures[@]}-1]="$name (out of time: some tests not run; rerun it alone with WEFT_GPU_CHECK_STEPS)"
  fi
}

# preflight: the bundle is there and its libraries resolve on this machine.
preflight() {
  local missing=0
  for file in "$bundle/lib/libnccl.so.2" "$bundle/weft_gpu_tests" "$bundle/weft_multirank_tests" \
              "$bundle/gpu_allreduce_bench" "$bundle/cuda_ipc_probe"; do
    if [ ! -f "$file" ]; then
      echo "missing: $file (run 'scripts/gpu_check.sh pack' first, where nvcc is, and bring .gpu-bundle/ along)"
      missing=1
    fi
  done
  [ "$missing" -eq 0 ] || return 1
  if "${lib_env[@]}" ldd "$bundle/lib/libnccl.so.2" "$bundle/weft_gpu_tests" 2>&1 | grep 'not found'; then
    echo "the bundle needs libraries this machine lacks (above)"
    return 1
  fi
}

run() {
  local out=${1:-build-cuda/gpu_check}
  mkdir -p "$out"
  exec 3>&1 4>&2
  exec > >(tee "$out/gpu_check.log") 2>&1
  local tee_pid=$!
  selection=
  if [ -n "${WEFT_GPU_CHECK_STEPS:-}" ] && ! selection=$(selected_steps); then
    exec 1>&3 2>&4 3>&- 4>&-
    wait "$tee_pid"
    exit 2
  fi
  # Where the copy of the tree lost the bundle's execute bits.
  chmod +x "$bundle"/weft_* "$bundle"/gpu_allreduce_bench "$bundle"/cuda_ipc_probe 2>/dev/null
  deadline=$((SECONDS + ${WEFT_GPU_CHECK_SECONDS:-285}))
  # Only the test and benchmark binaries get the bundle's folder: torch must find Weft's library
  # the way torch_client.py puts it in place, not through LD_LIBRARY_PATH. SIGUSR1 makes them
  # print what each communicator waits for: the runner sends it to a test before killing it.
  lib_env=(env "LD_LIBRARY_PATH=$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" WEFT_DUMP_SIGNAL=USR1)
  export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  # More hardware queues than ranks' streams: no rank's kernel queues behind another's.
  export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-32}
  # A GPU test that finds no usable GPU fails: the check cannot pass without testing anything.
  export WEFT_GPU_TESTS_REQUIRE_GPU=1
  # Each test's own limit comes before the runner's 20 s: the test then says where its ranks were.
  export WEFT_GPU_TEST_DEADLINE_S=15

  echo "=== 1. machine"
  if [ -f "$bundle/commit.txt" ]; then
    echo "bundle packed at commit $(head -1 "$bundle/commit.txt"), $(tail -n +2 "$bundle/commit.txt" | wc -l) files changed"
  else
    echo "bundle packed at an unknown commit (no $bundle/commit.txt)"
  fi
  # A stale bundle still runs (its results say something), but the check fails at the end. So does
  # one that cannot tell what it was built from.
  local stale=
  if [ -f "$bundle/sources.sha256" ]; then
    stale=$({ sha256sum --quiet -c "$bundle/sources.sha256" 2>&1; new_sources; } | head -5)
  else
    stale="no $bundle/sources.sha256: what the bundle was built from is unknown"
  fi
  [ -z "$stale" ] || printf '%s\nthe bundle is older than the sources beside it (above): pack it again\n' "$stale"
  # A wedged driver must not hang the check: each nvidia-smi gets 20 s.
  timeout -k 5 20 nvidia-smi -L
  local smi=$?
  case $smi in
    0) ;;
    127) echo "no nvidia-smi here: the GPU tests will say whether CUDA sees a GPU" ;;
    124 | 137) failures+=("1. nvidia-smi -L hung (its 20 s ran out)") ;;
    *) failures+=("1. nvidia-smi sees no GPU (exit $smi)") ;;
  esac
  timeout -k 5 20 nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv || true
  timeout -k 5 20 nvidia-smi | grep -m1 "CUDA Version" || true
  ldd --version | head -1
  if ! command -v pgrep >/dev/null; then
    echo "no pgrep here: whether an MPS daemon runs is unknown"
  else
    pgrep -l -f nvidia-cuda-mps || echo "no MPS daemon: processes sharing the GPU are time-sliced"
  fi
  nproc
  # Steps 5 to 7 put shared memory there.
  df -h /dev/shm || echo "no /dev/shm here: the steps that use shared memory will fail"
  preflight || failures+=("1. the bundle (above)")
  # Logs the GPU every 5 s; as an NVML client it also keeps the driver loaded between the
  # processes the steps start, where persistence mode is off.
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,clocks.sm --format=csv -l 5 \
    > "$out/gpu_monitor.csv" 2>&1 &
  local monitor=$!
  # A first `import torch` reads a few GB from disk: done meanwhile, it is not step 5's time.
  local warm_torch=
  if wanted 5 && [ ${#failures[@]} -eq 0 ]; then
    python3 -c 'import torch' >/dev/null 2>&1 &
    warm_torch=$!
  fi

  if [ ${#failures[@]} -eq 0 ]; then
    # First, on a GPU nothing has used yet: whether this machine lets processes share GPU memory.
    # A "no" is a fact of the machine, not a failure of Weft's.
    local ipc=yes
    if wanted 4; then
      step "4. cross-process CUDA IPC probe, without Weft" 15 "$bundle/cuda_ipc_probe"
      case $? in
        0) ;;
        124 | 137)
          # Processes that share GPU memory would most likely hang as the probe did.
          ipc=no
          echo "=== 4. the probe ran out of time: steps 5 and 6 use no CUDA IPC"
          ;;
        1)
          ipc=no
          unset 'failures[${#failures[@]}-1]'
          echo "=== 4. cross-process CUDA IPC does not work here: steps 5 and 6 use no CUDA IPC"
          ;;
        2)
          # Every later step would only fail, each at length: none is run.
          echo "=== 4. the probe found no usable GPU (above): no further step is run"
          selection=" none "
          ;;
        *) ipc=no; echo "=== 4. the probe failed (above): steps 5 and 6 use no CUDA IPC" ;;
      esac
    fi

    # GpuLostPeer and GpuMixedPlacement fork ranks that use CUDA: they run with the processes tests
    # (step 6).
    suite "2. GPU suite, ranks as threads" "$out/threads.log" '-*processes*:GpuLostPeer.*:GpuMixedPlacement.*' 80
    step_signal=USR1 WEFT_GPU_DIRECT=1 step "3. allreduce speed on one GPU, direct kernel" 20 "${lib_env[@]}" \
      "$bundle/gpu_allreduce_bench" --ranks 1,2,3,4 --max-bytes 1G --iters 20

    if wanted 5; then
      if ! python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)'; then
        echo "=== 5. no torch for python3 here: PyTorch client not run"
        failures+=("5. PyTorch (no torch)")
      else
        # The symbols compared (a list, where nm or readelf is here: exit 3, torch imports none, and 4,
        # no tool, only say so), then the exact test (tests/gpu/torch_import.py): `import torch` with
        # Weft's library preloaded fails (exit 5) where torch needs a symbol that Weft lacks, and
        # proves nothing (exit 6) where another libnccl was mapped beside it.
        local ran_before=$steps_run
        step "5a. nccl symbols torch imports, and torch imported with Weft's library" 30 bash -c '
          bash tests/gpu/torch_symbols.sh "$1"; s=$?
          LD_PRELOAD=$1 python3 tests/gpu/torch_import.py "$1"
          case $? in 0) ;; 6) exit 6 ;; *) exit 5 ;; esac  # 5 too where python itself crashed
          exit $((s == 3 || s == 4 ? 0 : s))' _ "$bundle/lib/libnccl.so.2"
        local symbols=$?
        [ "$steps_run" -gt "$ran_before" ] || symbols=5  # not run, out of time: nor is 5b
        if [ "$symbols" -ne 5 ] && [ "$symbols" -ne 124 ] && [ "$symbols" -ne 137 ]; then
          # The client's own timeout ends before the step's limit, so that it still reports, and
          # 95 s are kept for steps 6 to 8 (45 of them for 7 and 8: step 6 gets at least 50).
          local left=$((deadline - SECONDS - 95)) ranks=2 rank_logs
          local limit=$((left < 70 ? left : 70))
          [ "$ipc" = yes ] || ranks=1
          # Two ranks that import torch and start CUDA need about half a minute before any check.
          if [ "$limit" -lt 50 ]; then
            echo "=== 5b. not run: ${limit}s left for it"
            failures+=("5b. PyTorch (not run: out of time)")
          else
            rank_logs=$(mktemp -d)
            PYTHONUNBUFFERED=1 step "5b. torch.distributed with Weft, $ranks rank(s)" "$limit" python3 tests/gpu/torch_client.py \
              --lib "$bundle/lib/libnccl.so.2" --ranks "$ranks" --timeout $((limit - 10)) --log-dir "$rank_logs"
            tail -n +1 "$rank_logs"/*.out "$rank_logs"/*.err "$rank_logs"/*.nccl > "$out/torch_ranks.log" 2>&1
            rm -rf "$rank_logs"
          fi
        else
          echo "=== 5b. not run: 5a did not run, or torch could not be imported with Weft's library (above)"
        fi
      fi
    fi

    local processes='*processes*:GpuLostPeer.*:GpuMixedPlacement.*'
    [ "$ipc" = yes ] || processes='*2ranks_processes*hosts:GpuLostPeer.ALostHost*'
    # Every second left but those of steps 7 and 8 (each test forks ranks that start CUDA).
    suite "6. GPU suite, ranks as processes" "$out/processes.log" "$processes" $((deadline - SECONDS - 45))

    # Every test's lines, so that a hang is named. (Not the dump signal: these tests' ranks are
    # forked processes, and their parent has no handler for it.)
    step "7. host suite on a GPU machine (part)" 10 "${lib_env[@]}" "$bundle/weft_multirank_tests" \
      --gtest_filter='Collectives/ExactCollective.MatchesReference/*_2ranks_shm:Groups*'

    step_signal=USR1 WEFT_GPU_DIRECT=0 WEFT_GPU_CHANNELS=32 step "8. allreduce speed through the ring, WEFT_GPU_CHANNELS=32" 15 \
      "${lib_env[@]}" "$bundle/gpu_allreduce_bench" --ranks 2,4 --max-bytes 256M --iters 10
  fi
  # Not waited for: an nvidia-smi stuck in the driver (after a killed kernel) must not hold the
  # summary back. Their output goes to files, not to the log.
  kill -KILL "$monitor" $warm_torch 2>/dev/null
  [ -z "$stale" ] || failures+=("1. the bundle is older than the sources beside it")

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
