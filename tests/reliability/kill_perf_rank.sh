#!/usr/bin/env bash
# A rank killed in the middle of all_reduce_perf, launched by hand (RANK/WORLD_SIZE/NCCL_COMM_ID,
# no mpirun): the other two must exit with an error naming the dead rank within 15 seconds.
#   kill_perf_rank.sh PATH/TO/all_reduce_perf
set -euo pipefail
perf=$1
logs=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$logs"
}
trap cleanup EXIT

# Starts the three ranks on NCCL_COMM_ID port $1 and waits until the table has started (every
# rank past init, inside the timed loop). Returns 2 if rank 0 could not listen on the port (another
# socket holds it: the caller tries another), 1 on any other failure.
launch() {
  local port=$1
  pids=()
  for rank in 0 1 2; do
    NCCL_COMM_ID=127.0.0.1:$port RANK=$rank WORLD_SIZE=3 stdbuf -oL -eL \
      "$perf" -b 1M -e 1M -n 100000000 -w 1 >"$logs/rank$rank.log" 2>&1 &
    pids+=($!)
  done
  for _ in $(seq 1 600); do
    grep -q "(elements)" "$logs/rank0.log" 2>/dev/null && return 0
    if ! kill -0 "${pids[0]}" 2>/dev/null; then
      for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
      wait 2>/dev/null || true
      grep -q "the port is in use" "$logs/rank0.log" && return 2
      cat "$logs"/rank*.log; echo "FAIL: rank 0 ended before the run started"; return 1
    fi
    sleep 0.1
  done
  cat "$logs"/rank*.log; echo "FAIL: the run never started"; return 1
}

started=1
for attempt in 1 2 3 4 5; do
  port=$((20000 + (RANDOM * 7 + $$ + attempt) % 12000))  # below the ephemeral ports (32768 up)
  set +e
  launch "$port"
  started=$?
  set -e
  [ "$started" -eq 2 ] && { echo "port $port is in use; trying another"; continue; }
  break
done
[ "$started" -eq 0 ] || exit 1
sleep 2
kill -KILL "${pids[2]}"
killed_at=$(date +%s.%N)

status=0
for rank in 0 1; do
  for _ in $(seq 1 150); do kill -0 "${pids[$rank]}" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "${pids[$rank]}" 2>/dev/null; then
    echo "FAIL: rank $rank still runs 15 s after rank 2 was killed"
    status=1
    continue
  fi
  if wait "${pids[$rank]}"; then echo "FAIL: rank $rank exited with status 0"; status=1; fi
  if ! grep -q "rank 2 (host " "$logs/rank$rank.log"; then
    echo "FAIL: rank $rank's output does not name rank 2:"; tail -n 5 "$logs/rank$rank.log"; status=1
  fi
done
echo "survivors ended $(echo "$(date +%s.%N) - $killed_at" | bc) s after rank 2 was killed"
[ "$status" -eq 0 ] && grep -h "rank 2 (host " "$logs/rank0.log" | head -n 1
exit "$status"
