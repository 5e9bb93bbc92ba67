#!/usr/bin/env bash
# Hosts made of network namespaces on this machine, for the multi-node tests (run as root).
#
#   tests/multinode/netns_hosts.sh [-n HOSTS] [-s SLOTS] [-l LINKS] -- COMMAND [ARGS...]
#
# Makes HOSTS hosts (default 2): one network namespace each, its loopback and LINKS links
# (default 1), eth0, eth1, ...: link k of each host is one end of a veth pair whose other end is in
# bridge k on this machine, with an address in that bridge's private /24, which nothing on this
# machine uses. So a host's eth1 reaches the other hosts' eth1 only, as the rails of a cluster do.
# Namespace, interface and subnet names are new for each run. Runs COMMAND with the variables
# below, then removes every namespace, veth and bridge, also after a failure or an interrupt, and
# exits with COMMAND's status. Exits 77 (a skip for ctest), saying why, where namespaces cannot be
# made (not root, no netns support).
#
#   WEFT_HOSTS_DIR        a private folder: the hostfile and the agent's map of hosts
#   WEFT_HOSTS_COUNT      HOSTS
#   WEFT_HOSTFILE         mpirun's hostfile: each host's address with SLOTS slots
#   WEFT_HOSTS_SUBNET     the subnet of the hosts' eth0, e.g. 10.211.7.0/24 (this machine is .1 on
#                         its bridge); mpirun and its daemons use it
#   WEFT_HOSTS_SUBNET_k   the subnet of link k (ethk), k = 0..LINKS-1
#   WEFT_HOSTS_MPI_FLAGS  mpirun's flags that launch across the hosts: the hostfile, the agent
#                         (tests/multinode/netns_agent.sh), OpenMPI's interface options, and no
#                         binding (every host's rank 0 would be bound to the same core)
#   WEFT_HOST_NS_i, WEFT_HOST_ADDR_i (eth0's), WEFT_HOST_NAME_i, i = 0..HOSTS-1
#   WEFT_HOST_VETH_i_k    the bridge's end of host i's link k; WEFT_HOST_VETH_i is link 0's
set -euo pipefail

hosts=2
slots=1
links=1
while [ $# -gt 0 ]; do
  case $1 in
    -n) hosts=$2; shift 2 ;;
    -s) slots=$2; shift 2 ;;
    -l) links=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "netns_hosts.sh: unknown argument $1 (usage: netns_hosts.sh [-n HOSTS] [-s SLOTS] [-l LINKS] -- COMMAND...)" >&2
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
dir=$(mktemp -d /tmp/weft-hosts-XXXXXX)
namespaces=()
bridges=()
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
  for bridge in "${bridges[@]}"; do ip link del "$bridge" 2>/dev/null || true; done
  rm -rf "$dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# A /24 in 10.200.0.0-10.249.255.0 that no address or route on this machine touches.
free_subnet() {
  local a b
  for _ in $(seq 1 50); do
    a=$((200 + RANDOM % 50)); b=$((RANDOM % 256))
    if ! ip -4 route show | grep -q "^10\.$a\.$b\." && ! ip -4 addr show | grep -q "inet 10\.$a\.$b\."; then
      echo "10.$a.$b"
      return 0
    fi
  done
  echo "netns_hosts.sh: found no free subnet in 10.200-249.x.0/24" >&2
  return 1
}

# One bridge per link, each with its own subnet (taken before the next is chosen).
subnets=()
for k in $(seq 0 $((links - 1))); do
  subnet=$(free_subnet)
  bridge=wb${run}l$k
  ip link add "$bridge" type bridge || skip "cannot create a bridge (no bridge support in this kernel or container)"
  bridges+=("$bridge")
  ip addr add "$subnet.1/24" dev "$bridge"
  ip link set "$bridge" up
  subnets+=("$subnet")
  export "WEFT_HOSTS_SUBNET_$k=$subnet.0/24"
done

: >"$dir/hostfile"
: >"$dir/agent_map"
for i in $(seq 0 $((hosts - 1))); do
  ns=weft-$run-h$i
  address=${subnets[0]}.$((i + 2))
  name=host$i
  ip netns add "$ns" || skip "cannot create a network namespace"
  namespaces+=("$ns")
  ip netns exec "$ns" ip link set lo up
  for k in $(seq 0 $((links - 1))); do
    veth=wv${run}h${i}l$k
    ip link add "$veth" type veth peer name "${veth}p"
    ip link set "${veth}p" netns "$ns"
    ip netns exec "$ns" ip link set "${veth}p" name "eth$k"
    ip netns exec "$ns" ip addr add "${subnets[$k]}.$((i + 2))/24" dev "eth$k"
    ip netns exec "$ns" ip link set "eth$k" up
    ip link set "$veth" master "${bridges[$k]}"
    ip link set "$veth" up
    export "WEFT_HOST_VETH_${i}_$k=$veth"
  done
  echo "$address slots=$slots" >>"$dir/hostfile"
  echo "$address $ns $name" >>"$dir/agent_map"
  link0=WEFT_HOST_VETH_${i}_0
  export "WEFT_HOST_NS_$i=$ns" "WEFT_HOST_ADDR_$i=$address" "WEFT_HOST_NAME_$i=$name" "WEFT_HOST_VETH_$i=${!link0}"
done
subnet=${subnets[0]}

export WEFT_HOSTS_DIR=$dir WEFT_HOSTS_COUNT=$hosts WEFT_HOSTFILE=$dir/hostfile WEFT_HOSTS_SUBNET=$subnet.0/24
WEFT_HOSTS_MPI_FLAGS="--hostfile $dir/hostfile --mca plm_rsh_agent $here/netns_agent.sh --mca plm_rsh_no_tree_spawn 1"
WEFT_HOSTS_MPI_FLAGS+=" --mca oob_tcp_if_include $subnet.0/24 --mca btl_tcp_if_include $subnet.0/24 --mca btl self,tcp"
# The hosts share this machine's cores: mpirun would bind each host's first rank to the same core.
WEFT_HOSTS_MPI_FLAGS+=" --bind-to none"
[ "$(id -u)" -eq 0 ] && WEFT_HOSTS_MPI_FLAGS+=" --allow-run-as-root"
export WEFT_HOSTS_MPI_FLAGS
echo "== $hosts namespace hosts, $links link(s) each, on ${subnets[*]/%/.0/24} (bridges ${bridges[*]}):" \
  "$(cut -d' ' -f1,3 "$dir/agent_map" | tr '\n' ' ')"
# In the background, so that a signal is handled at once rather than when COMMAND ends.
"$@" &
child=$!
wait "$child"
