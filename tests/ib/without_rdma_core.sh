#!/usr/bin/env bash
# libnccl.so.2 without rdma-core: it does not link libibverbs, and where libibverbs.so.1 cannot be
# loaded (hidden here by a bind mount in a private mount namespace) a run still works over
# sockets with an INFO line that says why ib is off, while NCCL_NET=IB fails init saying why.
#
#   without_rdma_core.sh PERF_DIR LIBRARY
set -uo pipefail
perf=$1 library=$2
fail() { echo "FAIL: $*"; exit 1; }
if readelf -d "$library" | grep NEEDED | grep -q ibverbs; then fail "$library links libibverbs"; fi
echo "ok: $library does not link libibverbs"
if [[ $(id -u) -ne 0 ]] || ! unshare -m true 2>/dev/null; then
  echo "skipped: hiding libibverbs needs a private mount namespace (root, outside a restricted container)"
  exit 77
fi
verbs=$(ldconfig -p | awk '/libibverbs.so.1 / {print $NF; exit}')
[[ -n $verbs ]] || verbs=none

# Runs 2 ranks of all_reduce_perf (Weft's launch without MPI) with libibverbs hidden, the root on
# `port`.
run_hidden_on() {
  local port=$1 rank status=0
  shift
  for rank in 0 1; do
    unshare -m bash -c "{ [[ $verbs == none ]] || mount --bind /dev/null $verbs; } && exec env $* RANK=$rank WORLD_SIZE=2 \
      NCCL_COMM_ID=127.0.0.1:$port NCCL_SHM_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
      timeout 120 $perf/all_reduce_perf -b 8 -e 64K -f 8 -c 1 -n 2 -w 1" >"$work/rank$rank.log" 2>&1 &
  done
  wait -n || status=1
  wait -n || status=1
  return $status
}

# run_hidden_on a port below the kernel's ephemeral range, where other tests' connections take
# theirs; where another socket still holds it (rank 0 says so), again on another port.
ephemeral_low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
run_hidden() {
  local attempt
  for attempt in 1 2 3 4 5; do
    run_hidden_on $((10000 + RANDOM % (ephemeral_low - 10000))) "$@" && return 0
    grep -q "the port is in use" "$work/rank0.log" || return 1
    echo "the root's port is in use; trying another"
  done
  return 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run_hidden || fail "a run without libibverbs failed: $(tail -n 5 "$work/rank0.log")"
grep -q "Out of bounds values : 0 OK" "$work/rank0.log" || fail "wrong data: $(tail -n 5 "$work/rank0.log")"
grep -q "NET/IB : off (could not load libibverbs.so.1" "$work/rank0.log" ||
  fail "no INFO line says why ib is off: $(grep -m3 NET "$work/rank0.log")"
grep -q " via socket" "$work/rank0.log" || fail "the ranks did not connect over sockets"
echo "ok: without libibverbs a run goes over sockets and says why"

run_hidden NCCL_NET=IB && fail "NCCL_NET=IB succeeded without libibverbs"
grep -q "NCCL_NET=IB, but rank [01] .* has no usable verbs port: could not load libibverbs.so.1" "$work/rank0.log" ||
  fail "NCCL_NET=IB did not fail saying why: $(grep -m3 'WARN\|failure' "$work/rank0.log")"
echo "ok: NCCL_NET=IB without libibverbs fails init saying why"
