#!/usr/bin/env bash
# The ib tests, run inside a soft-RoCE guest (tests/ib/guest) against its rxe0 device.
#
#   cases.sh PERF_DIR CASE
#
# Ranks are launched as Weft launches without MPI (RANK, WORLD_SIZE, NCCL_COMM_ID), with
# NCCL_NET=IB and NCCL_SHM_DISABLE=1, so every byte between them goes over verbs. Each case checks
# the collective is exact (the perf binary's -c check), that every connection said "via ib", and
# that the device's sent-packet counter grew by at least the packets the collective must send
# while its RNR and retry-exceeded error counters stayed 0. Rank logs stay in /mnt (the job
# folder).
#
# On a host with a real NIC the single-host cases run as they are, through the NIC's loopback:
#   WEFT_IB_DEVICE=mlx5_0 WEFT_IB_LOGS=/tmp/ib-logs WEFT_GUEST_ADDR=<an address of this host>/24 \
#     NCCL_SOCKET_IFNAME=<its interface> tests/ib/cases.sh build/perf allreduce_2ranks
# (counters: hw_counters/sent_pkts where the driver has it, else counters/port_xmit_packets; an
# error counter the driver lacks is reported as not available).
set -uo pipefail
perf=$1 case=$2
device=${WEFT_IB_DEVICE:-rxe0}
logs=${WEFT_IB_LOGS:-/mnt}
mkdir -p "$logs"
port_dir=/sys/class/infiniband/$device/ports/1
sent_counter=$port_dir/hw_counters/sent_pkts
[[ -e $sent_counter ]] || sent_counter=$port_dir/counters/port_xmit_packets
address=${WEFT_GUEST_ADDR:-10.0.2.15/24}
export NCCL_NET=IB NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-eth0} NCCL_DEBUG=INFO
export NCCL_DEBUG_SUBSYS=INIT,NET WEFT_TIMEOUT=120

fail() { echo "FAIL: $*"; exit 1; }
sent_packets() { cat "$sent_counter"; }
# An error counter of the device, 0 where the driver has none (then reported as not available).
counter() { if [[ -e $port_dir/hw_counters/$1 ]]; then cat "$port_dir/hw_counters/$1"; else echo 0; fi; }
counter_text() { if [[ -e $port_dir/hw_counters/$1 ]]; then counter "$1"; else echo "n/a"; fi; }

# in_exit PID: every thread of the process is in the kernel's exit path (or already a zombie).
in_exit() {
  local task
  for task in "/proc/$1/task/"*; do
    [[ $(awk '/^State/ {print $2}' "$task/status" 2>/dev/null) == Z ]] && continue
    grep -q do_exit "$task/stack" 2>/dev/null || return 1
  done
}
# show_threads PID: each thread's state and kernel stack.
show_threads() {
  local task
  for task in "/proc/$1/task/"*; do
    echo "  thread ${task##*/}: $(awk '/^State/ {print $2}' "$task/status" 2>/dev/null)" \
      "in $(cat "$task/wchan" 2>/dev/null)"
    sed 's/^/    /' "$task/stack" 2>/dev/null
  done
}

# run_ranks NRANKS PERF_BINARY ARGS...: runs ranks FIRST_RANK .. FIRST_RANK + LOCAL_RANKS - 1 of
# NRANKS here (default: all of them), the bootstrap root at ROOT (default: this guest, a random
# port); fails unless every one exits 0.
run_ranks() {
  local nranks=$1 binary=$2
  shift 2
  local first=${FIRST_RANK:-0} count=${LOCAL_RANKS:-$nranks}
  local root=${ROOT:-${address%/*}:$((20000 + RANDOM % 12000))} pids=() rank
  rm -f $logs/rank*.log
  for rank in $(seq "$first" $((first + count - 1))); do
    RANK=$rank WORLD_SIZE=$nranks NCCL_COMM_ID=$root timeout 240 "$perf/$binary" "$@" >$logs/rank$rank.log 2>&1 &
    pids+=($!)
  done
  local status=0
  for pid in "${pids[@]}"; do
    wait "$pid" || { echo "a rank exited with $?"; status=1; }
  done
  if ((status != 0)); then
    for log in $logs/rank*.log; do echo "== $log"; tail -n 12 "$log"; done
  fi
  return $status
}

# check_run NRANKS: rank 0's table is exact, the ranks connected over ib and only over ib, and
# the counters show the traffic (sent_pkts_before given as $3).
check_run() {
  local nranks=$1 iters=$2 before=$3
  [[ ! -e $logs/rank0.log ]] || grep -q "Out of bounds values : 0 OK" $logs/rank0.log || fail "wrong data: $(grep -i 'out of bounds\|wrong' $logs/rank0.log)"
  grep -qh " via ib" $logs/rank*.log || fail "no connection went over ib"
  local others
  others=$(grep -h " via " $logs/rank*.log | grep -vc " via ib")
  ((others == 0)) || fail "$others connections did not use ib"
  # At least (n-1)/n of each size crosses the network per timed iteration, out-of-place and
  # in-place; a packet carries at most 4096 bytes.
  local bytes
  bytes=$(awk -v n="$nranks" -v iters="$iters" '/^ +[0-9]+ +[0-9]+ / {sum += $1 * (n - 1) / n * 2 * iters} END {printf "%d", sum}' $logs/rank*.log)
  local sent=$(($(sent_packets) - before)) least=$((bytes / 4096))
  echo "sent_pkts grew by $sent (at least $least needed for $bytes bytes); rnr errors $(counter_text rcvd_rnr_err), retries exceeded $(counter_text retry_exceeded_err)"
  ((sent >= least && sent > 0)) || fail "sent_pkts grew by $sent, less than the $least packets the collective needs"
  [[ $(counter rcvd_rnr_err) == 0 ]] || fail "rcvd_rnr_err is $(counter rcvd_rnr_err): a write found no receive posted"
  [[ $(counter retry_exceeded_err) == 0 ]] || fail "retry_exceeded_err is $(counter retry_exceeded_err)"
}

# collective NRANKS BINARY ARGS...: one exact run over ib with the counters checked.
collective() {
  local nranks=$1 binary=$2
  shift 2
  local before
  before=$(sent_packets)
  run_ranks "$nranks" "$binary" -c 1 -n 2 -w 1 "$@" || fail "$binary at $nranks ranks failed"
  check_run "$nranks" 2 "$before"
  echo "PASS: $binary at $nranks ranks ($*)"
}

# direct_writes / no_direct_writes: the last run's receiving ends did / did not write posts straight
# into registered buffers (their NET line at teardown).
direct_posts() {
  grep -h "were written directly into registered buffers" $logs/rank*.log |
  awk '{for (i = 2; i < NF; i++) if ($i == "of" && $(i + 2) == "posts") sum += $(i - 1)} END {print sum + 0}'
}
direct_writes() {
  local posts
  posts=$(direct_posts)
  ((posts > 0)) || fail "no post was written directly into a registered buffer"
  echo "PASS: $posts posts written directly into registered buffers"
}
no_direct_writes() {
  local posts
  posts=$(direct_posts)
  ((posts == 0)) || fail "$posts posts were written directly without -R 1"
  echo "PASS: without -R 1 every post went through the slots"
}

case $case in
  allreduce_2ranks) collective 2 all_reduce_perf -b 8 -e 1M -f 8 ;;
  allreduce_4ranks_ops) collective 4 all_reduce_perf -b 64 -e 64K -f 32 -o all -d int32 ;;
  odd_sizes) # sizes 0 and 1 and odd counts of bytes
    collective 3 all_reduce_perf -b 0 -e 0 -d int8 &&
      collective 3 all_reduce_perf -b 1 -e 37 -i 9 -d int8 &&
      collective 3 all_gather_perf -b 3 -e 1003 -i 500 -d int8 ;;
  allgather_3ranks) collective 3 all_gather_perf -b 24 -e 768K -f 32 ;;
  reducescatter_3ranks) collective 3 reduce_scatter_perf -b 24 -e 768K -f 32 ;;
  broadcast_reduce_every_root)
    collective 3 broadcast_perf -b 8 -e 64K -f 64 -r -1 && collective 3 reduce_perf -b 8 -e 64K -f 64 -r -1 ;;
  alltoall_4ranks) collective 4 alltoall_perf -b 64 -e 256K -f 64 && collective 4 alltoallv_perf -b 64 -e 64K -f 32 &&
      collective 4 hypercube_perf -b 64 -e 64K -f 32 ;;
  p2p_gather_scatter)
    collective 2 sendrecv_perf -b 8 -e 256K -f 32 && collective 3 gather_perf -b 24 -e 96K -f 64 &&
      collective 3 scatter_perf -b 24 -e 96K -f 64 ;;
  registered_buffers) # -R 1: pieces that land unreduced in a registered buffer are written there directly
    collective 4 all_reduce_perf -b 8 -e 512K -f 8 -R 1 && direct_writes && collective 3 all_gather_perf -b 24 -e 768K -f 32 -R 1 &&
      direct_writes && collective 3 broadcast_perf -b 8 -e 64K -f 64 -r -1 -R 1 && direct_writes &&
      collective 2 sendrecv_perf -b 8 -e 256K -f 32 -R 1 && direct_writes &&
      collective 3 all_gather_perf -b 24 -e 768K -f 32 && no_direct_writes ;;
  slot_ring_wraps) # 8 slots of 4 KiB: a 1 MiB allreduce wraps the ring of each connection many times
    NCCL_BUFFSIZE=32768 collective 2 all_reduce_perf -b 1M -e 1M && NCCL_BUFFSIZE=32768 collective 3 alltoall_perf -b 768K -e 768K ;;
  queue_pairs) # each slot split over 3 queue pairs, odd sizes and a wrapping slot ring included
    export NCCL_IB_QPS_PER_CONNECTION=3 NCCL_BUFFSIZE=65536
    collective 3 all_reduce_perf -b 1 -e 1M -f 7 -d int8 || exit 1
    grep -q "over ib $device:1, 3 queue pairs" $logs/rank0.log || fail "the connections did not use 3 queue pairs"
    collective 4 alltoall_perf -b 4 -e 400K -f 10 ;;
  bad_hca) # a device that does not exist: init fails on every rank and says what exists
    NCCL_IB_HCA==mlx5_9 run_ranks 2 all_reduce_perf -b 8 -e 8 && fail "init succeeded with NCCL_IB_HCA==mlx5_9"
    for log in $logs/rank0.log $logs/rank1.log; do
      grep -q "has no usable verbs port.*$device:1 (excluded by NCCL_IB_HCA)" $log ||
        fail "$log does not say why: $(grep -m2 -i 'error\|warn' $log)"
    done
    echo "PASS: NCCL_IB_HCA==mlx5_9 fails init naming $device:1"
    # A malformed value fails init even when ib is only the default, not forced.
    NCCL_NET= NCCL_IB_HCA=rxe0:one run_ranks 2 all_reduce_perf -b 8 -e 8 && fail "init succeeded with NCCL_IB_HCA=rxe0:one"
    grep -q 'NCCL_IB_HCA=rxe0:one: port "one" of rxe0 is not a port number' $logs/rank0.log ||
      fail "a malformed NCCL_IB_HCA did not fail init saying why: $(grep -m2 -i 'warn' $logs/rank0.log)"
    echo "PASS: NCCL_IB_HCA=rxe0:one fails init saying why" ;;
  peer_killed) # rank 1 killed mid-run: rank 0 reports it within the liveness limits, not hangs
    port=$((20000 + RANDOM % 12000))
    RANK=0 WORLD_SIZE=2 NCCL_COMM_ID=${address%/*}:$port timeout 120 "$perf/all_reduce_perf" -b 256K -e 256K -n 100000 -w 0 -c 0 >$logs/rank0.log 2>&1 &
    survivor=$!
    RANK=1 WORLD_SIZE=2 NCCL_COMM_ID=${address%/*}:$port "$perf/all_reduce_perf" -b 256K -e 256K -n 100000 -w 0 -c 0 >$logs/rank1.log 2>&1 &
    victim=$!
    for _ in $(seq 900); do grep -q "Init COMPLETE" $logs/rank1.log 2>/dev/null && break; sleep 0.1; done
    grep -q "Init COMPLETE" $logs/rank1.log || fail "rank 1 did not finish init: $(tail -n 5 $logs/rank1.log)"
    sleep 3
    kill -9 $victim
    start=$SECONDS
    wait $survivor
    status=$?
    elapsed=$((SECONDS - start))
    ((status != 0 && status != 124)) || fail "rank 0 exited with $status after rank 1 was killed (124: it hung)"
    grep "WARN" $logs/rank0.log | grep -q "rank 1 " || fail "rank 0's error does not name rank 1: $(tail -n 5 $logs/rank0.log)"
    echo "rank 0 failed $elapsed s after rank 1 was killed: $(grep -m1 -i 'error\|warn' $logs/rank0.log)"
    ((elapsed <= 60)) || fail "rank 0 took $elapsed s to report the dead peer"
    echo "PASS: a killed peer is reported" ;;
  two_nics) # a second NIC (eth1, given by tests/ib/CMakeLists.txt), each NIC with its own device,
    # named against the NICs' PCI order: rxe1 on eth0, rxe0 on eth1. Channel c takes the
    # topology's NIC c mod 2 (eth0 first), whatever the devices' names, so each device carries its
    # channel's half of the bytes.
    ip link set eth1 up && ip addr add 10.0.4.15/24 dev eth1 && rdma link delete rxe0 &&
      rdma link add rxe1 type rxe netdev eth0 && rdma link add rxe0 type rxe netdev eth1 ||
      fail "could not put rxe1 on eth0 and rxe0 on eth1"
    hw_counter() { cat /sys/class/infiniband/$1/ports/1/hw_counters/$2; }
    before=($(hw_counter rxe1 sent_pkts) $(hw_counter rxe0 sent_pkts))
    NCCL_MIN_NCHANNELS=2 NCCL_MAX_NCHANNELS=2 NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH \
      run_ranks 2 all_reduce_perf -c 1 -n 2 -w 1 -b 1M -e 1M || fail "all_reduce_perf over two devices failed"
    grep -q "Out of bounds values : 0 OK" $logs/rank0.log || fail "wrong data: $(grep -i 'out of bounds' $logs/rank0.log)"
    channel_device=(rxe1 rxe0)
    for rank in 0 1; do
      grep -q "network device per channel, from the NICs of .*: 0:rxe1:1 1:rxe0:1$" $logs/rank$rank.log ||
        fail "rank $rank did not take rxe1 (eth0) for channel 0 and rxe0 (eth1) for channel 1:" \
          "$(grep -m2 'device' $logs/rank$rank.log)"
      for channel in 0 1; do
        grep -q "Channel 0$channel : sending to rank .* over ib ${channel_device[channel]}:1" $logs/rank$rank.log ||
          fail "rank $rank's channel $channel does not send over ${channel_device[channel]}"
      done
    done
    # Each channel moves half of what crosses the network: (n-1)/n of 1 MiB, out-of-place and in
    # place, 4 times (warm-up, 2 timed, check); a packet carries at most 4096 bytes.
    least=$((1048576 / 2 * 2 * 4 / 2 / 4096))
    for channel in 0 1; do
      device=${channel_device[channel]}
      grown=$(($(hw_counter $device sent_pkts) - before[channel]))
      errors=$(($(hw_counter $device rcvd_rnr_err) + $(hw_counter $device retry_exceeded_err)))
      echo "channel $channel's $device: sent_pkts grew by $grown (at least $least needed), rnr and retry-exceeded" \
        "errors $errors"
      ((grown >= least)) || fail "$device sent $grown packets, less than its channel's $least"
      ((errors == 0)) || fail "$device counted $errors rnr or retry-exceeded errors"
    done
    echo "PASS: channel 0 over eth0's rxe1, channel 1 over eth1's rxe0, as the topology orders the NICs" ;;
  across_guests) # ranks 2 GUEST and 2 GUEST + 1 of 4, two per guest (tests/ib/two_guests.sh sets GUEST)
    port=29600
    for binary in all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf \
                  sendrecv_perf; do
      port=$((port + 1))
      FIRST_RANK=$((2 * GUEST)) LOCAL_RANKS=2 ROOT=10.0.3.1:$port collective 4 $binary -b 8 -e 32K -f 64 || exit 1
      # Guest 1's RoCE MTU is 512, guest 0's 1024: a connection uses the smaller end's.
      for log in $logs/rank*.log; do
        awk -v guest="$GUEST" 'match($0, /connected to rank [0-9]+ .*MTU [0-9]+/) {
            split(substr($0, RSTART, RLENGTH), word, " "); peer = word[4]; mtu = word[length(word)]
            want = (guest == 0 && peer < 2) ? 1024 : 512; seen++
            if (mtu != want) { print "rank log " FILENAME ": connection to rank " peer " used MTU " mtu ", not " want; bad = 1 }
          } END { exit bad || !seen }' "$log" || fail "the path MTUs are not the smaller ends' (see above)"
      done
    done
    echo "PASS: every collective across two guests, path MTUs agreed (1024 inside guest 0, 512 with guest 1)" ;;
  link_cut) # rank 0 in guest 0, rank 1 in guest 1, whose eth0 goes down mid-run (tests/ib/two_guests.sh)
    export NCCL_IB_TIMEOUT=12 NCCL_IB_RETRY_CNT=2  # about 17 ms per try: the verbs error comes first
    log=$logs/rank$GUEST.log
    # 4 MiB allreduces: both ranks keep RDMA writes in flight nearly all the time.
    RANK=$GUEST WORLD_SIZE=2 NCCL_COMM_ID=10.0.3.1:29700 timeout 120 "$perf/all_reduce_perf" -b 4M -e 4M \
      -n 1000000 -w 0 -c 0 >"$log" 2>&1 &
    rank=$!
    for _ in $(seq 900); do grep -q "Init COMPLETE" "$log" 2>/dev/null && break; sleep 0.1; done
    grep -q "Init COMPLETE" "$log" || fail "rank $GUEST did not finish init: $(tail -n 5 "$log")"
    sleep 3
    [[ $GUEST == 1 ]] && ip link set eth0 down
    start=$SECONDS reported= exiting=
    # The report (the first WARN) and the exit are timed apart. A rank may report at once and then
    # spend minutes in exit_group: rxe's queue-pair teardown (__rxe_cleanup) waits for the packets
    # it had queued on the downed link. That wait is the kernel's, past every user-space step.
    while kill -0 $rank 2>/dev/null; do
      if [[ -z $reported ]] && grep -q "WARN" "$log"; then reported=$((SECONDS - start)); fi
      if [[ -n $reported ]] && ((SECONDS - start - reported >= 10)); then
        pid=$(pgrep -P $rank | head -n 1)
        if [[ -n $pid ]] && in_exit $pid; then exiting=$((SECONDS - start)); break; fi
      fi
      sleep 0.5
    done
    if [[ -n $exiting ]]; then
      echo "rank $GUEST reported the cut after $reported s; $exiting s after the cut its exit waits in the kernel:"
      show_threads $pid
      grep -q "Test NCCL failure" "$log" || fail "rank $GUEST exits without the perf test's failure line"
    else
      wait $rank
      status=$? elapsed=$((SECONDS - start))
      [[ -n $reported ]] || reported=$elapsed
      echo "rank $GUEST reported the cut after $reported s and exited with $status after $elapsed s"
      ((status != 0 && status != 124)) || fail "rank $GUEST exited with $status (124: it hung)"
    fi
    grep -m3 "WARN" "$log"
    ((reported <= 60)) || fail "rank $GUEST took $reported s to report the cut link"
    peer=$((1 - GUEST))
    grep "WARN" "$log" | grep -q "rank $peer " || fail "rank $GUEST's error does not name rank $peer"
    # A rank whose writes were all acknowledged at the cut learns it from the liveness channel
    # instead; two_guests.sh checks that at least one rank saw the verbs error.
    # The status depends on where the write met the cut: retries exceeded (the peer's side went
    # silent), a remote invalid request (its queue pair had already failed), or a local queue-pair
    # operation error (rxe could not send on this guest's downed link).
    if grep -Eq "ib transport: a work request on $device:1 to rank $peer .* failed: [A-Za-z ]+ \(status [0-9]+(, vendor error [0-9a-fx]+)?\)" "$log"; then
      if grep -q "failed: transport retry counter exceeded" "$log"; then
        (($(counter retry_exceeded_err) > 0)) || fail "rxe0's retry_exceeded_err did not count the failed writes"
      fi
      echo "VERBS ERROR: rank $GUEST's write to rank $peer failed with the verbs status"
    fi
    echo "PASS: rank $GUEST reported the cut link" ;;
  proxy) # the network proxy of GPU buffers over ib, a host thread in the kernel's place (PERF_DIR: the unit tests')
    "$perf/weft_unit_tests" --gtest_filter='Networks/ProxiedNetwork.*/ib' >$logs/proxy.log 2>&1 ||
      fail "the proxy tests over ib failed: $(grep -B3 -A12 -m3 'Failure\|FAILED' $logs/proxy.log)"
    ran=$(grep -c '^\[       OK \]' $logs/proxy.log)
    skipped=$(grep -c '^\[  SKIPPED \] .* ms)$' $logs/proxy.log)
    ((ran >= 4)) || fail "only $ran proxy tests ran over ib ($skipped skipped): $(grep -m3 -A2 SKIPPED $logs/proxy.log)"
    echo "PASS: $ran proxy tests over ib ($skipped skipped: ib learns of a lost peer in ib_peer_killed)" ;;
  *) fail "unknown case $case" ;;
esac
