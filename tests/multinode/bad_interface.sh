#!/usr/bin/env bash
# A wrong NCCL_SOCKET_IFNAME across namespace hosts (under tests/multinode/netns_hosts.sh): the run
# must fail promptly with an error that names the variable and lists the interfaces that exist.
#
#   bad_interface.sh PERF_DIR
set -uo pipefail
perf=${1:?usage: bad_interface.sh PERF_DIR}
read -r -a mpi_flags <<<"${WEFT_HOSTS_MPI_FLAGS:?run under tests/multinode/netns_hosts.sh}"
nranks=$(awk -F'slots=' '{sum += $2} END {print sum}' "$WEFT_HOSTFILE")
output=$(timeout 60 mpirun "${mpi_flags[@]}" -np "$nranks" -x NCCL_SOCKET_IFNAME=nosuch0 \
         "$perf/all_reduce_perf" -b 8 -e 8 2>&1)
status=$?
echo "$output" | grep -v "^#"
[ "$status" -ne 124 ] || { echo "FAILED: the run hung (killed after 60 s)"; exit 1; }
[ "$status" -ne 0 ] || { echo "FAILED: the run succeeded with NCCL_SOCKET_IFNAME=nosuch0"; exit 1; }
for expected in "no usable network interface" "NCCL_SOCKET_IFNAME=nosuch0" "interfaces that are up: " "eth0 $WEFT_HOST_ADDR_0"; do
  if ! grep -qF "$expected" <<<"$output"; then
    echo "FAILED: the error does not say \"$expected\""
    exit 1
  fi
done
echo "== the wrong interface was refused with a clear error (exit $status)"
