# Sourced by the multi-node tests that launch ranks without mpirun (under netns_hosts.sh): Weft's
# own launch (RANK, WORLD_SIZE, NCCL_COMM_ID), each rank through the namespace agent into its host.
#
#   launch_ranks OUT_PREFIX [VAR=VALUE...] COMMAND...
#
# starts rank r on host r / slots, its output in OUT_PREFIXr, and sets nranks, slots and the array
# rank_pids (rank r's process is rank_pids[r]).
: "${WEFT_HOSTS_DIR:?run under tests/multinode/netns_hosts.sh}"
multinode_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

launch_ranks() {
  local prefix=$1
  shift
  slots=$(awk -F'slots=' 'NR == 1 {print $2}' "$WEFT_HOSTFILE")
  nranks=$((WEFT_HOSTS_COUNT * slots))
  local port=$((20000 + RANDOM % 12000))
  rank_pids=()
  for rank in $(seq 0 $((nranks - 1))); do
    local address=WEFT_HOST_ADDR_$((rank / slots))
    "$multinode_dir/netns_agent.sh" "${!address}" \
      "exec env RANK=$rank WORLD_SIZE=$nranks NCCL_COMM_ID=$WEFT_HOST_ADDR_0:$port $*" >"$prefix$rank" 2>&1 &
    rank_pids+=($!)
  done
}
