#!/bin/sh
# mpirun's remote-shell agent for namespace hosts (tests/multinode/netns_hosts.sh):
#
#   netns_agent.sh HOST COMMAND...
#
# runs COMMAND on HOST as `ssh HOST COMMAND...` would: through a shell, in HOST's network namespace,
# with HOST's own hostname (a UTS namespace), so that Weft's default host id (hostname and boot id)
# tells the hosts apart. With WEFT_HOSTS_SAME_HOSTNAME=1 the hostname stays this machine's and
# NCCL_HOSTID names the host instead (launch such hosts without mpirun: OpenMPI needs distinct
# hostnames). Hosts are read from $WEFT_HOSTS_DIR/agent_map
# ("ADDRESS NAMESPACE HOSTNAME" per line).
set -eu
host=$1
shift
line=$(grep "^$host " "${WEFT_HOSTS_DIR:?netns_agent.sh runs under netns_hosts.sh}/agent_map" || true)
if [ -z "$line" ]; then
  echo "netns_agent.sh: no namespace host $host in $WEFT_HOSTS_DIR/agent_map" >&2
  exit 255
fi
ns=$(echo "$line" | cut -d' ' -f2)
name=$(echo "$line" | cut -d' ' -f3)
if [ "${WEFT_HOSTS_SAME_HOSTNAME:-0}" = 1 ]; then
  export NCCL_HOSTID="$name"
  exec ip netns exec "$ns" /bin/sh -c "$*"
fi
exec ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$0" && exec /bin/sh -c "$1"' "$name" "$*"
