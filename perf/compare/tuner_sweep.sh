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
#                   tree), all_gather and reduce_scatter (ring and pat)
#   --ranks         rank counts (default "4 8"), each a run of mpirun on this machine
#   --runs N        runs of each choice (default 5); the medians are compared
#   --hostids       every rank gets an NCCL_HOSTID of its own: hosts simulated, sockets between all
#   --hosts H       rank r gets NCCL_HOSTID host<r mod H>: H simulated hosts, shared memory within
#   --max BYTES     the largest size (default 16777216); sizes go from 8 bytes by factors of 4
#   --protos "P.."  protocols forced (default "Simple LL")
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
perf=$build/perf/${collective}_perf
[ -x "$perf" ] || { echo "tuner_sweep.sh: no $perf; build first (scripts/setup.sh)" >&2; exit 1; }
mpi=(mpirun --oversubscribe --bind-to none -x NCCL_SOCKET_IFNAME=lo)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
results=$(mktemp)
trap 'rm -f "$results"' EXIT

algorithms=(ring)
case "$collective" in
  all_reduce) algorithms+=(tree rhd) ;;
  broadcast|reduce) algorithms+=(tree) ;;
  all_gather|reduce_scatter) algorithms+=(pat) ;;
esac
choices=(default)
for algorithm in "${algorithms[@]}"; do
  for proto in $protos; do choices+=("$algorithm/$proto"); done
done
for n in $ranks; do
  for run in $(seq 1 "$runs"); do
    for choice in "${choices[@]}"; do
      algo=$([ "$choice" = default ] && echo "" || echo "${choice%/*}")
      proto=$([ "$choice" = default ] && echo "" || echo "${choice#*/}")
      launch=("$perf" -b 8 -e "$max" -f 4 -w 10 -n 50 -c 0)
      if [ "$hosts" != 0 ]; then
        out=$("${mpi[@]}" -np "$n" -x NCCL_ALGO="$algo" -x NCCL_PROTO="$proto" sh -c \
          'r=$OMPI_COMM_WORLD_RANK; NCCL_HOSTID=host$([ "$0" -gt 0 ] && echo $((r % $0)) || echo "$r") exec "$@"' \
          "$hosts" "${launch[@]}")
      else
        out=$("${mpi[@]}" -np "$n" -x NCCL_ALGO="$algo" -x NCCL_PROTO="$proto" "${launch[@]}")
      fi
      echo "$out" | awk -v n="$n" -v c="$choice" '/^ +[0-9]+ / { print n, c, $1, $6 }' >>"$results"
    done
  done
done

where=""
[ "$hosts" = -1 ] && where=", every rank its own NCCL_HOSTID"
[ "$hosts" -gt 0 ] && where=", rank r on NCCL_HOSTID host<r mod $hosts>"
echo "# ${collective}_perf float sum, out of place; medians of $runs interleaved runs (us)$where"
printf "%5s %10s" ranks bytes
for choice in "${choices[@]}"; do printf " %12s" "$choice"; done
printf " %12s %8s %8s\n" fastest "default" spread
sort -k1,1n -k3,3n "$results" | awk -v runs="$runs" -v choices="${choices[*]}" '
  function median(list, count,   sorted, i) {
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
        m = median(times[key, names[c]], count[key, names[c]]); value[names[c]] = m
        printf " %12.2f", m
        if (c > 1 && m < fastest) { fastest = m; best = names[c] }
      }
      # spread: the fastest forced choice'\''s (max - min) / median over its runs
      split(times[key, best], all, " "); lo = all[1]; hi = all[1]
      for (m in all) { if (all[m] < lo) lo = all[m]; if (all[m] > hi) hi = all[m] }
      printf " %12s %+7.0f%%  %5.0f%%\n", best, 100 * (value["default"] - fastest) / fastest, 100 * (hi - lo) / fastest
    }
  }'
