#!/usr/bin/env bash
# Hosts that share one hostname, told apart by NCCL_HOSTID alone (run under
# WEFT_HOSTS_SAME_HOSTNAME=1 tests/multinode/netns_hosts.sh -n H -s S): allreduce is exact, ranks on
# one host connect over shm, ranks on different hosts over sockets, and each ring crosses each host
# boundary once. Launched without mpirun: OpenMPI itself needs distinct hostnames (with one name for
# all, a daemon now and then never starts and mpirun waits forever).
#
#   hostid.sh PERF_DIR
set -uo pipefail
perf=${1:?usage: hostid.sh PERF_DIR}
[ "${WEFT_HOSTS_SAME_HOSTNAME:-0}" = 1 ] || { echo "hostid.sh: run with WEFT_HOSTS_SAME_HOSTNAME=1" >&2; exit 2; }
source "$(dirname "$0")/direct_launch.sh"
hosts=$WEFT_HOSTS_COUNT
out=$WEFT_HOSTS_DIR/rank
limit=120

launch_ranks "$out" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT \
  "$perf/all_reduce_perf" -b 7 -e 1M -f 13 -d int8 -c 1 -w 1 -n 2
echo "== $nranks ranks on $hosts hosts, one hostname: all_reduce_perf -b 7 -e 1M -f 13 -d int8 -c 1"

failures=0
deadline=$(($(date +%s) + limit))
for rank in $(seq 0 $((nranks - 1))); do
  while kill -0 "${rank_pids[$rank]}" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
  if kill -0 "${rank_pids[$rank]}" 2>/dev/null; then
    kill -9 "${rank_pids[$rank]}" 2>/dev/null
    echo "FAILED: rank $rank still ran after $limit s"; tail -5 "$out$rank"
    failures=$((failures + 1))
  elif ! wait "${rank_pids[$rank]}"; then
    echo "FAILED: rank $rank exited with an error"; tail -5 "$out$rank"
    failures=$((failures + 1))
  fi
done
[ "$failures" -eq 0 ] || exit 1

if ! grep -q "^# Out of bounds values : 0 OK" "${out}0"; then
  cat "${out}0"
  echo "FAILED: all_reduce_perf found wrong values"
  exit 1
fi
grep -E "^ +[0-9]+ " "${out}0" | awk '{print "   ", $1, "B", $3, $4, "time", $6, "us"}' | tail -2

# Every rank must have seen one hostname ("#  Rank  1 Group  0 Pid   4803 on  NAME device ...").
names=$(awk '/^#  Rank / { for (i = 1; i < NF; ++i) if ($i == "on") print $(i + 1) }' "${out}0" | sort -u)
if [ "$(echo "$names" | wc -l)" -ne 1 ] || [ -z "$names" ]; then
  echo "FAILED: the ranks ran on hosts named $(echo "$names" | tr '\n' ' '), not on one hostname"
  exit 1
fi

for rank in $(seq 0 $((nranks - 1))); do echo "$rank host$((rank / slots))"; done >"$WEFT_HOSTS_DIR/layout"
report=$("$(dirname "$0")/check_transports.sh" "$hosts" "$WEFT_HOSTS_DIR/layout" "$out"*)
if [ -n "$report" ]; then
  cat "$WEFT_HOSTS_DIR/layout"
  grep -h -E " via " "$out"*
  echo "FAILED: transports: $report"
  exit 1
fi
echo "== hostname $names on every host: shm inside each host, sockets between, each ring crossing $hosts host boundaries"
