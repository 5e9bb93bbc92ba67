#!/usr/bin/env bash
# Weft's allreduce across hosts made of network namespaces (tests/multinode/netns_hosts.sh), on
# links shaped to a known rate, side by side with OpenMPI's MPI_Allreduce (btl tcp) on the same
# hosts and links, and with the links' bound, in one run. As root:
#
#   perf/compare/across_hosts.sh [--hosts N] [--build DIR] [--rate MBIT]
#
# 1. The unshaped goodput of one host's link, both ways at once (iperf3 --bidir between two hosts).
# 2. Every host's veth shaped with tbf on both ends (into and out of the host) to --rate Mbit/s, by
#    default a quarter of (1): two cores carry every host's TCP and reductions, so the links, not
#    the cores, must be the limit.
# 3. The shaped link's goodput both ways: the bound. A ring allreduce sends and receives
#    2(n-1)/n x size per rank, so its busbw can reach the goodput of one link in each direction.
# 4. all_reduce_perf and mpi_allreduce_perf, one rank per host, 4 MiB to 64 MiB, under mpirun.
# Prints each program's table and a summary (busbw at the largest size against the bound).
set -euo pipefail
self=$(realpath "$0")
root=$(cd "$(dirname "$self")/../.." && pwd)

hosts=4
build=$root/build
rate=
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --build) build=$(realpath "$2"); shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    *) echo "across_hosts.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [ -z "${WEFT_HOSTS_DIR:-}" ]; then
  command -v iperf3 >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null
  exec "$root/tests/multinode/netns_hosts.sh" -n "$hosts" -s 1 -- "$self" --hosts "$hosts" --build "$build" \
    ${rate:+--rate "$rate"}
fi

read -r -a mpi_flags <<<"$WEFT_HOSTS_MPI_FLAGS"
in_host() { local ns=WEFT_HOST_NS_$1; shift; ip netns exec "${!ns}" "$@"; }

# Goodput in Mbit/s both ways at once between host0 and host1: the smaller direction.
bidir_goodput() {
  in_host 1 iperf3 -s -1 -D -I "$WEFT_HOSTS_DIR/iperf.pid" >/dev/null
  sleep 0.3
  in_host 0 iperf3 -c "$WEFT_HOST_ADDR_1" --bidir -t 4 -f m 2>&1 |
    awk '/receiver/ { for (i = 1; i <= NF; ++i) if ($i == "Mbits/sec") print $(i - 1) }' |
    sort -n | head -1
}

unshaped=$(bidir_goodput)
echo "== unshaped link, both ways: $unshaped Mbit/s (iperf3 --bidir, host0 <-> host1)"
[ -n "$rate" ] || rate=$((${unshaped%.*} / 4))
burst=$((rate * 1000 / 8 / 100))  # kilobytes ("kb" to tc) sent in 10 ms at the rate
[ "$burst" -ge 64 ] || burst=64
for i in $(seq 0 $((hosts - 1))); do
  veth=WEFT_HOST_VETH_$i
  tc qdisc add dev "${!veth}" root tbf rate "${rate}mbit" burst "${burst}kb" latency 50ms
  in_host "$i" tc qdisc add dev eth0 root tbf rate "${rate}mbit" burst "${burst}kb" latency 50ms
done
bound=$(bidir_goodput)
echo "== links shaped to $rate Mbit/s each way (tbf on both ends of every host's veth);" \
     "goodput both ways: $bound Mbit/s = $(awk -v m="$bound" 'BEGIN { printf "%.3f", m / 8000 }') GB/s"

sweep=(-b 4M -e 64M -f 4 -w 2 -n 5)
echo "== Weft: mpirun -np $hosts all_reduce_perf ${sweep[*]}"
mpirun "${mpi_flags[@]}" -np "$hosts" "$build/perf/all_reduce_perf" "${sweep[@]}" -c 1 | tee "$WEFT_HOSTS_DIR/weft"
echo "== OpenMPI (btl tcp): mpirun -np $hosts mpi_allreduce_perf ${sweep[*]}"
mpirun "${mpi_flags[@]}" -np "$hosts" "$build/perf/mpi_allreduce_perf" "${sweep[@]}" | tee "$WEFT_HOSTS_DIR/mpi"

# busbw at the largest size, from its size and out-of-place time (the table rounds to 0.01 GB/s).
largest() {
  awk -v n="$hosts" '/^ +[0-9]+ / { busbw = $1 / ($6 * 1000) * 2 * (n - 1) / n } END { printf "%.4f", busbw }' "$1"
}
weft=$(largest "$WEFT_HOSTS_DIR/weft")
mpi=$(largest "$WEFT_HOSTS_DIR/mpi")
awk -v weft="$weft" -v mpi="$mpi" -v bound="$bound" -v rate="$rate" -v hosts="$hosts" -v unshaped="$unshaped" 'BEGIN {
  b = bound / 8000
  printf "\n== %d hosts x 1 rank, links shaped to %d Mbit/s (unshaped: %s Mbit/s both ways)\n", hosts, rate, unshaped
  printf "   bound (one shaped link, both ways): %.3f GB/s\n", b
  printf "   Weft busbw at 64 MiB:  %.3f GB/s = %.0f%% of the bound\n", weft, 100 * weft / b
  ratio = (mpi > 0) ? weft / mpi : 0
  printf "   MPI  busbw at 64 MiB:  %.3f GB/s = %.0f%% of the bound; Weft / MPI = %.2f\n", mpi, 100 * mpi / b, ratio
}'
