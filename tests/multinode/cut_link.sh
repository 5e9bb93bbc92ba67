#!/usr/bin/env bash
# A link cut in the middle of a collective (under tests/multinode/netns_hosts.sh -n 2 -s S):
# every rank must fail within 30 s with an error that names the host it lost and says it is
# unreachable, though every process is still alive. Launched without mpirun (RANK, WORLD_SIZE,
# NCCL_COMM_ID through the namespace agent), since mpirun's own daemons would lose the link too.
#
#   cut_link.sh PERF_DIR
set -uo pipefail
perf=${1:?usage: cut_link.sh PERF_DIR}
: "${WEFT_HOSTS_DIR:?run under tests/multinode/netns_hosts.sh}"
source "$(dirname "$0")/direct_launch.sh"
hosts=$WEFT_HOSTS_COUNT
limit=30

launch_ranks "$WEFT_HOSTS_DIR/rank" WEFT_SOCKET_TIMEOUT=5 "$perf/all_reduce_perf" -b 16M -e 16M -w 1 -n 1000000 -c 0
pids=("${rank_pids[@]}")

# Cut once every rank is in its timed loop (rank 0 prints the table's header first).
for _ in $(seq 1 300); do
  grep -q "(B)" "$WEFT_HOSTS_DIR/rank0" 2>/dev/null && break
  sleep 0.1
done
sleep 1
cut=WEFT_HOST_VETH_$((hosts - 1))
start=$(date +%s%N)
ip link set "${!cut}" down
echo "== cut ${!cut} (host$((hosts - 1))) with $nranks ranks in all_reduce_perf"

failures=0
deadline=$((start / 1000000000 + limit))
for rank in $(seq 0 $((nranks - 1))); do
  # Every rank must be done `limit` seconds after the cut; one still running then is killed.
  while kill -0 "${pids[$rank]}" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
  if kill -0 "${pids[$rank]}" 2>/dev/null; then
    kill -9 "${pids[$rank]}" 2>/dev/null
    echo "FAILED: rank $rank still ran $limit s after the cut"
    failures=$((failures + 1))
    continue
  fi
  wait "${pids[$rank]}"
  status=$?
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  host=$((rank / slots))
  lost=$(( host == hosts - 1 ? 0 : hosts - 1 ))
  line=$(grep -m1 "NCCL failure" "$WEFT_HOSTS_DIR/rank$rank" || true)
  if [ "$status" -eq 0 ]; then
    echo "FAILED: rank $rank exited 0 after the cut"
    failures=$((failures + 1))
  elif ! grep -q "host host$lost" <<<"$line" || ! grep -q "unreachable" <<<"$line"; then
    echo "FAILED: rank $rank's error does not name host$lost as unreachable:"
    tail -5 "$WEFT_HOSTS_DIR/rank$rank"
    failures=$((failures + 1))
  else
    echo "   rank $rank (host$host) failed after ${took} ms: ${line#*NCCL failure }" | cut -c1-250
  fi
done
ip link set "${!cut}" up
[ "$failures" -eq 0 ] || exit 1
echo "== every rank reported the unreachable host within $limit s"
