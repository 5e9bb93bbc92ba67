#!/usr/bin/env bash
# Sets up and builds Weft (scripts/setup.sh), then runs the main job: all_reduce_perf launched by
# mpirun on 2 ranks of host memory, over shared memory, 8 B to 128 MiB, checking every result.
# Extra arguments go to all_reduce_perf (nccl-tests' flags), e.g. ./scripts/perf.sh -b 1M -e 1G
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
ranks=${WEFT_RANKS:-2}
mpi_flags=()
[ "$(id -u)" -eq 0 ] && mpi_flags+=(--allow-run-as-root)
[ "$ranks" -gt "$(nproc)" ] && mpi_flags+=(--oversubscribe --bind-to none)
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-b 8 -e 128M -f 2 -c 1)
echo "== mpirun -np $ranks build/perf/all_reduce_perf ${args[*]}"
exec mpirun -np "$ranks" "${mpi_flags[@]}" build/perf/all_reduce_perf "${args[@]}"
