#!/usr/bin/env bash
# Hosts with two links each, eth0 and eth1 on separate bridges like the rails of a cluster (under
# tests/multinode/netns_hosts.sh -n 2 -s 1 -l 2): the socket transport spreads the channels over
# both interfaces, as NCCL's socket network does, and the topology layer says which channel takes
# which. With NCCL_MIN/MAX_NCHANNELS=2, a 2-rank ring allreduce must
#   - be exact;
#   - log, on every rank, channel 0 on eth0 and channel 1 on eth1 (NCCL_DEBUG_SUBSYS=GRAPH), and
#     listen for each channel on that interface's address (NET);
#   - move each channel's share of the ring's bytes over its own link: each bridge's veths carried
#     at least half of an even share (calls x hosts x 2(n-1)/n x size / 2 channels).
#
#   two_links.sh PERF_DIR
set -euo pipefail
perf=${1:?usage: two_links.sh PERF_DIR}
: "${WEFT_HOSTS_MPI_FLAGS:?run under tests/multinode/netns_hosts.sh -l 2}"
: "${WEFT_HOSTS_SUBNET_1:?run under tests/multinode/netns_hosts.sh -l 2}"
read -r -a mpi_flags <<<"$WEFT_HOSTS_MPI_FLAGS"
hosts=$WEFT_HOSTS_COUNT
nranks=$(awk -F'slots=' '{sum += $2} END {print sum}' "$WEFT_HOSTFILE")
log=$WEFT_HOSTS_DIR/log
channels=2
size=$((4 << 20))
iterations=4
failures=0

fail() {
  echo "FAILED: $*" >&2
  failures=$((failures + 1))
}

# Bytes the bridge's ends of link k transmitted (what entered the hosts over it).
link_bytes() {
  local total=0 veth
  for i in $(seq 0 $((hosts - 1))); do
    veth=WEFT_HOST_VETH_${i}_$1
    total=$((total + $(cat "/sys/class/net/${!veth}/statistics/tx_bytes")))
  done
  echo "$total"
}

before=($(link_bytes 0) $(link_bytes 1))
echo "== mpirun -np $nranks all_reduce_perf -b $size -e $size -n $iterations -c 1, $channels ring channels"
if ! mpirun "${mpi_flags[@]}" -np "$nranks" -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=GRAPH,NET \
    -x NCCL_MIN_NCHANNELS=$channels -x NCCL_MAX_NCHANNELS=$channels -x NCCL_ALGO=ring -x NCCL_PROTO=simple \
    "$perf/all_reduce_perf" -b "$size" -e "$size" -w 0 -n "$iterations" -c 1 >"$log" 2>&1; then
  cat "$log" >&2
  echo "FAILED: all_reduce_perf exited with an error" >&2
  exit 1
fi
after=($(link_bytes 0) $(link_bytes 1))
grep -q "^# Out of bounds values : 0 OK" "$log" || fail "all_reduce_perf found wrong values"

# Each rank's choice, e.g. "rank 1: network device per channel, from the NICs of hwloc detection: 0:eth0 1:eth1".
chosen=$(grep -c "network device per channel, from the NICs of .*: 0:eth0 1:eth1$" "$log" || true)
[ "$chosen" -eq "$nranks" ] || fail "$chosen of $nranks ranks logged channel 0 on eth0 and channel 1 on eth1"
for k in 0 1; do
  subnet=WEFT_HOSTS_SUBNET_$k
  prefix=${!subnet%.0/24}
  listening=$(grep -c "Channel 0$k : listening for rank .* on eth$k ${prefix//./\\.}\.[0-9]*:[0-9]*$" "$log" || true)
  elsewhere=$(grep "Channel 0$k : listening for rank" "$log" | grep -vc " on eth$k " || true)
  [ "$listening" -eq "$nranks" ] && [ "$elsewhere" -eq 0 ] ||
    fail "channel $k: $listening of $nranks ranks listened on eth$k in $prefix.0/24, $elsewhere elsewhere"
  calls=$((2 * iterations))  # out of place, then in place
  floor=$((calls * hosts * 2 * (nranks - 1) * size / nranks / channels / 2))
  carried=$((after[k] - before[k]))
  if [ "$carried" -lt "$floor" ]; then
    fail "link $k (eth$k) carried $carried bytes; channel $k's share of the ring's bytes is at least $floor"
  else
    echo "   link $k (eth$k) carried $carried bytes (at least $floor expected of channel $k)"
  fi
done
if [ "$failures" -gt 0 ]; then
  grep -E "network device per channel|listening for rank|over socket" "$log" >&2 || true
  exit 1
fi
echo "== both links carried their channel's share, as every rank logged"
