#!/usr/bin/env bash
# Hosts made of network namespaces on this machine, for the multi-node tests (run as root).
#
#   tests/multinode/netns_hosts.sh [-n HOSTS] [-s SLOTS] -- COMMAND [ARGS...]
#
# Makes HOSTS hosts (default 2): one network namespace each, its own eth0 (one end of a veth pair
# whose other end is in a bridge on this machine) with an address in a private /24 that nothing on
# this machine uses, and its loopback. Namespace, interface and subnet names are new for each run.
# Runs COMMAND with the variables below, then removes every namespace, veth and the bridge, also
# after a failure or an interrupt, and exits with COMMAND's status. Exits 77 (a skip for ctest),
# saying why, where namespaces cannot be made (not root, no netns support).
#
#   WEFT_HOSTS_DIR        a private folder: the hostfile and the agent's map of hosts
#   WEFT_HOSTS_COUNT      HOSTS
#   WEFT_HOSTFILE         mpirun's hostfile: each host's address with SLOTS slots
#   WEFT_HOSTS_SUBNET     the hosts' subnet, e.g. 10.211.7.0/24 (this machine is .1 on the bridge)
#   WEFT_HOSTS_MPI_FLAGS  mpirun's flags that launch across the hosts: the hostfile, the agent
#                         (tests/multinode/netns_agent.sh), OpenMPI's interface options, and no
#                         binding (every host's rank 0 would be bound to the same core)
#   WEFT_HOST_NS_i, WEFT_HOST_ADDR_i, WEFT_HOST_NAME_i, WEFT_HOST_VETH_i (the bridge's end), i = 0..HOSTS-1
set -euo pipefail

hosts=2
slots=1
while [ $# -gt 0 ]; do
  case $1 in
    -n) hosts=$2; shift 2 ;;
    -s) slots=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "netns_hosts.sh: unknown argument $1 (usage: netns_hosts.sh [-n HOSTS] [-s SLOTS] -- COMMAND...)" >&2
       exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "netns_hosts.sh: no command given" >&2; exit 2; }

skip() { echo "SKIPPED: $*" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "namespace hosts need root (they create network namespaces, veths and a bridge)"
command -v ip >/dev/null || skip "no ip command (apt-get install iproute2)"
command -v unshare >/dev/null || skip "no unshare command (apt-get install util-linux)"

here=$(cd "$(dirname "$0")" && pwd)
run=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')  # 6 hex digits: names stay under 15 characters
bridge=wb$run
dir=$(mktemp -d /tmp/weft-hosts-XXXXXX)
namespaces=()
child=

cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  [ -z "$child" ] || kill -TERM "$child" 2>/dev/null || true
  for ns in "${namespaces[@]}"; do
    # Whatever still runs on the host (an orted that lost its mpirun) goes with it.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true  # takes its end of the veth, and so the pair, with it
  done
  ip link del "$bridge" 2>/dev/null || true
  rm -rf "$dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# A /24 in 10.200.0.0-10.249.255.0 that no address or route on this machine touches.
subnet=
for _ in $(seq 1 50); do
  a=$((200 + RANDOM % 50)); b=$((RANDOM % 256))
  if ! ip -4 route show | grep -q "^10\.$a\.$b\." && ! ip -4 addr show | grep -q "inet 10\.$a\.$b\."; then
    subnet=10.$a.$b
    break
  fi
done
[ -n "$subnet" ] || { echo "netns_hosts.sh: found no free subnet in 10.200-249.x.0/24" >&2; exit 1; }

ip link add "$bridge" type bridge || skip "cannot create a bridge (no bridge support in this kernel or container)"
ip addr add "$subnet.1/24" dev "$bridge"
ip link set "$bridge" up

: >"$dir/hostfile"
: >"$dir/agent_map"
for i in $(seq 0 $((hosts - 1))); do
  ns=weft-$run-h$i
  veth=wv${run}h$i
  address=$subnet.$((i + 2))
  name=host$i
  ip netns add "$ns" || skip "cannot create a network namespace"
  namespaces+=("$ns")
  ip link add "$veth" type veth peer name "${veth}p"
  ip link set "${veth}p" netns "$ns"
  ip netns exec "$ns" ip link set "${veth}p" name eth0
  ip netns exec "$ns" ip addr add "$address/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  ip netns exec "$ns" ip link set lo up
  ip link set "$veth" master "$bridge"
  ip link set "$veth" up
  echo "$address slots=$slots" >>"$dir/hostfile"
  echo "$address $ns $name" >>"$dir/agent_map"
  export "WEFT_HOST_NS_$i=$ns" "WEFT_HOST_ADDR_$i=$address" "WEFT_HOST_NAME_$i=$name" "WEFT_HOST_VETH_$i=$veth"
done

export WEFT_HOSTS_DIR=$dir WEFT_HOSTS_COUNT=$hosts WEFT_HOSTFILE=$dir/hostfile WEFT_HOSTS_SUBNET=$subnet.0/24
WEFT_HOSTS_MPI_FLAGS="--hostfile $dir/hostfile --mca plm_rsh_agent $here/netns_agent.sh --mca plm_rsh_no_tree_spawn 1"
WEFT_HOSTS_MPI_FLAGS+=" --mca oob_tcp_if_include $subnet.0/24 --mca btl_tcp_if_include $subnet.0/24 --mca btl self,tcp"
# The hosts share this machine's cores: mpirun would bind each host's first rank to the same core.
WEFT_HOSTS_MPI_FLAGS+=" --bind-to none"
[ "$(id -u)" -eq 0 ] && WEFT_HOSTS_MPI_FLAGS+=" --allow-run-as-root"
export WEFT_HOSTS_MPI_FLAGS
echo "== $hosts namespace hosts on $subnet.0/24 (bridge $bridge): $(cut -d' ' -f1,3 "$dir/agent_map" | tr '\n' ' ')"
# In the background, so that a signal is handled at once rather than when COMMAND ends.
"$@" &
child=$!
wait "$child"
