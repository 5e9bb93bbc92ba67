#!/usr/bin/env bash
# Is the tuner's default choice the fastest? For each rank count, runs a collective's perf binary
# with the default choice and with each algorithm x protocol forced through NCCL_ALGO and
# NCCL_PROTO, interleaved (default, ring/Simple, ring/LL, tree/Simple, tree/LL, default, ...),
# several times, and prints per size the median out-of-place time of each, the fastest forced one,
# the default's distance from it, and the spread between runs.
#
#   perf/compare/tuner_sweep.sh [--build DIR] [--collective C] [--ranks "4 8"] [--runs N]
#                               [--hostids | --hosts H] [--max BYTES]
#
#   --build DIR     the build whose perf binaries run (default build/, made by scripts/setup.sh)
#   --collective C  all_reduce (default; ring, tree and rhd), broadcast and reduce (ring and
#                   tree), all_gather and reduce_scatter (ring and pat), a quoted list of them, or
#                   all: the five, one after the other
#   --ranks         rank counts (default "4 8"), each a run of mpirun on this machine
#   --runs N        runs of each choice (default 5); the medians are compared
#   --hostids       every rank gets an NCCL_HOSTID of its own: hosts simulated, sockets between all
#   --hosts H       rank r gets NCCL_HOSTID host<r mod H>: H simulated hosts, shared memory within
#   --max BYTES     the largest size (default 16777216); sizes go from 8 bytes by factors of 4, and
#                   the largest is measured too where the factors skip it (256 MiB after 128 MiB)
#   --protos "P.."  protocols forced (default "Simple LL")
#
# Sizes up to 512 KiB run 50 timed iterations after 10 of warm-up, 2 to 8 MiB 20 after 5, and
# larger ones, where one iteration takes tens of milliseconds to seconds, 5 after 2 (one run of the
# binary per band of sizes). LL is forced only up to 512 KiB, where it already takes several times
# Simple's time (its flag in every 8 bytes halves what a slot carries); beyond, the table shows "-".
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build
ranks="4 8"
runs=5
hosts=0  # 0: one host; -1: every rank its own
collective=all_reduce
max=16777216
protos="Simple LL"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=${2:?}; shift ;;
    --ranks) ranks=${2:?}; shift ;;
    --runs) runs=${2:?}; shift ;;
    --collective) collective=${2:?}; shift ;;
    --hostids) hosts=-1 ;;
    --hosts) hosts=${2:?}; shift ;;
    --max) max=${2:?}; shift ;;
    --protos) protos=${2:?}; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "tuner_sweep.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ "$collective" = all ] && collective="all_reduce all_gather reduce_scatter broadcast reduce"
mpi=(mpirun --oversubscribe --bind-to none -x NCCL_SOCKET_IFNAME=lo)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
results=$(mktemp)
trap 'rm -f "$results"' EXIT

# The bands of sizes, one run of the binary each: "first last iterations warmup". Sizes go from 8
# bytes by factors of 4; the largest is added where they skip it.
bands=()
add_band() {  # first last iterations warmup, clipped to --max
  if [ "$1" -le "$max" ]; then bands+=("$1 $(($2 < max ? $2 : max)) $3 $4"); fi
}
add_band 8 524288 50 10
add_band 2097152 8388608 20 5
add_band 33554432 "$max" 5 2
last=8
while [ $((last * 4)) -le "$max" ]; do last=$((last * 4)); done
if [ "$last" -lt "$max" ]; then bands+=("$max $max 5 2"); fi
small_max=524288

# Runs ${collective}_perf once per band with NCCL_ALGO=$1 and NCCL_PROTO=$2 on $3 ranks and prints
# "size time" per row (out of place).
measure() {
  local algo=$1 proto=$2 n=$3 band first last iters warmup
  for band in "${bands[@]}"; do
    read -r first last iters warmup <<<"$band"
    [ "$proto" = LL ] && [ "$first" -gt "$small_max" ] && continue
    local launch=("$perf" -b "$first" -e "$last" -f 4 -w "$warmup" -n "$iters" -c 0)
    if [ "$hosts" != 0 ]; then
      "${mpi[@]}" -np "$n" -x NCCL_ALGO="$algo" -x NCCL_PROTO="$proto" sh -c \
        'r=$OMPI_COMM_WORLD_RANK; NCCL_HOSTID=host$([ "$0" -gt 0 ] && echo $((r % $0)) || echo "$r") exec "$@"' \
        "$hosts" "${launch[@]}"
    else
      "${mpi[@]}" -np "$n" -x NCCL_ALGO="$algo" -x NCCL_PROTO="$proto" "${launch[@]}"
    fi | awk '/^ +[0-9]+ / { print $1, $6 }'
  done
}

# Sweeps one collective and prints its table.
sweep() {
  local collective=$1
  perf=$build/perf/${collective}_perf
  [ -x "$perf" ] || { echo "tuner_sweep.sh: no $perf; build first (scripts/setup.sh)" >&2; exit 1; }
  local algorithms=(ring) choices=(default) algorithm proto choice n run
  case "$collective" in
    all_reduce) algorithms+=(tree rhd) ;;
    broadcast|reduce) algorithms+=(tree) ;;
    all_gather|reduce_scatter) algorithms+=(pat) ;;
    *) echo "tuner_sweep.sh: no collective '$collective' (see --help)" >&2; exit 2 ;;
  esac
  for algorithm in "${algorithms[@]}"; do
    for proto in $protos; do choices+=("$algorithm/$proto"); done
  done
  : >"$results"
  for n in $ranks; do
    for run in $(seq 1 "$runs"); do
      for choice in "${choices[@]}"; do
        if [ "$choice" = default ]; then
          measure "" "" "$n"
        else
          measure "${choice%/*}" "${choice#*/}" "$n"
        fi | awk -v n="$n" -v c="$choice" '{ print n, c, $1, $2 }' >>"$results"
      done
    done
  done

  local where=""
  [ "$hosts" = -1 ] && where=", every rank its own NCCL_HOSTID"
  [ "$hosts" -gt 0 ] && where=", rank r on NCCL_HOSTID host<r mod $hosts>"
  echo "# ${collective}_perf float sum, out of place; medians of $runs interleaved runs (us)$where"
  printf "%5s %10s" ranks bytes
  for choice in "${choices[@]}"; do printf " %12s" "$choice"; done
  printf " %12s %8s %8s\n" fastest "default" spread
  # Sorted by ranks, size, choice and then time, so each choice's times arrive in order.
  sort -k1,1n -k3,3n -k2,2 -k4,4g "$results" | awk -v runs="$runs" -v choices="${choices[*]}" '
    function median(list, count,   sorted) {  # list: the times in ascending order
      split(list, sorted, " "); return count % 2 ? sorted[(count + 1) / 2] : (sorted[count / 2] + sorted[count / 2 + 1]) / 2
    }
    { key = $1 " " $3; times[key, $2] = times[key, $2] " " $4; count[key, $2]++; if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
    END {
      nc = split(choices, names, " ")
      for (i = 1; i <= k; ++i) {
        key = order[i]; split(key, part, " ")
        printf "%5d %10d", part[1], part[2]
        fastest = 1e300; best = ""
        for (c = 1; c <= nc; ++c) {
          if (!count[key, names[c]]) { printf " %12s", "-"; continue }
          m = median(times[key, names[c]], count[key, names[c]]); value[names[c]] = m
          printf " %12.2f", m
          if (c > 1 && m < fastest) { fastest = m; best = names[c] }
        }
        # spread: the fastest forced choice'\''s (max - min) / median over its runs
        n = split(times[key, best], all, " ")
        printf " %12s %+7.0f%%  %5.0f%%\n", best, 100 * (value["default"] - fastest) / fastest, 100 * (all[n] - all[1]) / fastest
      }
    }'
}

for c in $collective; do sweep "$c"; done
