#!/usr/bin/env bash
# The collectives across namespace hosts, launched by mpirun as a user would launch them across
# real hosts. Runs under tests/multinode/netns_hosts.sh, on every slot of its hostfile:
#
#   collectives_across_hosts.sh PERF_DIR [MPIRUN_FLAGS...]     e.g. --map-by node
#
# 1. Every perf binary below, exactly checked (-c 1) at odd sizes, and all_reduce_perf with every
#    type and op.
# 2. Transports, from the ranks' INFO lines: ranks on one host are connected over shm, ranks on
#    different hosts over sockets, and each channel's ring crosses between hosts once per host
#    (never back and forth), whatever the placement of ranks.
# 3. The veths carried the ring's inter-host bytes: their counters grew by at least
#    calls x hosts x 2(n-1)/n x size over an allreduce run of fixed size.
set -euo pipefail

perf=${1:?usage: collectives_across_hosts.sh PERF_DIR [MPIRUN_FLAGS...]}
shift
mpi_extra=("$@")
: "${WEFT_HOSTS_MPI_FLAGS:?run under tests/multinode/netns_hosts.sh}"
read -r -a mpi_flags <<<"$WEFT_HOSTS_MPI_FLAGS"
nranks=$(awk -F'slots=' '{sum += $2} END {print sum}' "$WEFT_HOSTFILE")
hosts=$WEFT_HOSTS_COUNT
log=$WEFT_HOSTS_DIR/log
failures=0

fail() {
  echo "FAILED: $*" >&2
  failures=$((failures + 1))
}

# Runs a perf binary on every slot; its output is in $log. Fails unless it exits 0 with no wrong value.
run_perf() {
  local binary=$1
  shift
  echo "== mpirun -np $nranks ${mpi_extra[*]} $binary $*"
  if ! mpirun "${mpi_flags[@]}" -np "$nranks" "${mpi_extra[@]}" -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT \
      "$perf/$binary" "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "$binary $* exited with an error"
    return 1
  fi
  if ! grep -q "^# Out of bounds values : 0 OK" "$log"; then
    cat "$log" >&2
    fail "$binary $* found wrong values"
    return 1
  fi
  grep -E "^ +[0-9]+ " "$log" | awk '{print "   ", $1, "B", $3, $4, "time", $6, "us"}' | tail -2
}

# 1. Exact results. Sizes 7, 91, 1183, 15379, 199927 elements of int8: none a multiple of anything.
for binary in all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf \
              sendrecv_perf; do
  run_perf "$binary" -b 7 -e 256K -f 13 -d int8 -c 1 -w 1 -n 2 || true
done
run_perf all_reduce_perf -b 1000 -e 1000 -d all -o all -c 1 -w 0 -n 1 || true

# 2. Transports and ring crossings, from the INFO lines of an allreduce. Which host each rank is
# on comes from the same launch of a shell: "RANK HOSTNAME" per line.
mpirun "${mpi_flags[@]}" -np "$nranks" "${mpi_extra[@]}" \
  sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"' >"$WEFT_HOSTS_DIR/layout"
if run_perf all_reduce_perf -b 1M -e 1M -c 1 -w 1 -n 1; then
  report=$("$(dirname "$0")/check_transports.sh" "$hosts" "$WEFT_HOSTS_DIR/layout" "$log")
  if [ -n "$report" ]; then
    cat "$WEFT_HOSTS_DIR/layout" >&2
    grep -E " via " "$log" >&2
    fail "transports: $report"
  else
    echo "   every pair on one host over shm, every other pair over sockets, each ring crossing $hosts host boundaries"
  fi
fi

# 3. Bytes on the veths (the bridge's ends: what they transmit enters a host).
veth_bytes() {
  local total=0
  for i in $(seq 0 $((hosts - 1))); do
    local veth=WEFT_HOST_VETH_$i
    total=$((total + $(cat "/sys/class/net/${!veth}/statistics/tx_bytes")))
  done
  echo "$total"
}
if [ "$hosts" -gt 1 ]; then
  size=$((4 << 20))
  iterations=4
  before=$(veth_bytes)
  if run_perf all_reduce_perf -b "$size" -e "$size" -c 0 -w 0 -n "$iterations"; then
    grew=$(($(veth_bytes) - before))
    calls=$((2 * iterations))  # out of place, then in place
    floor=$((calls * hosts * 2 * (nranks - 1) * size / nranks))
    if [ "$grew" -lt "$floor" ]; then
      fail "the veths carried $grew bytes during $calls allreduces of $size bytes; the ring alone sends $floor between hosts"
    else
      echo "   the veths carried $grew bytes; the ring's inter-host bytes are $floor"
    fi
  fi
fi

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed" >&2; exit 1; }
echo "== all checks passed across $hosts hosts, $nranks ranks"
