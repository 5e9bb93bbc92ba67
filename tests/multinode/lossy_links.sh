#!/usr/bin/env bash
# Packet loss on the links of namespace hosts (under tests/multinode/netns_hosts.sh):
#
#   lossy_links.sh PERCENT -- COMMAND [ARGS...]
#
# Drops PERCENT % of the TCP segments that reach each host (an nftables rule in each host's
# namespace: `numgen random mod 100 < PERCENT`; this kernel has no netem), runs COMMAND, then fails
# unless COMMAND succeeded and the rules' counters show that segments were in fact dropped.
set -uo pipefail
percent=${1:?usage: lossy_links.sh PERCENT -- COMMAND...}
shift
[ "${1:-}" = "--" ] && shift
: "${WEFT_HOSTS_COUNT:?run under tests/multinode/netns_hosts.sh}"
command -v nft >/dev/null || { echo "SKIPPED: no nft (apt-get install nftables)" >&2; exit 77; }

for i in $(seq 0 $((WEFT_HOSTS_COUNT - 1))); do
  ns=WEFT_HOST_NS_$i
  ip netns exec "${!ns}" nft -f - <<EOF || { echo "SKIPPED: nftables does not work here" >&2; exit 77; }
table inet weft_loss {
  chain input {
    type filter hook input priority 0; policy accept;
    meta l4proto tcp numgen random mod 100 < $percent counter drop
  }
}
EOF
done
echo "== dropping $percent % of the TCP segments into each of $WEFT_HOSTS_COUNT hosts"

"$@"
status=$?

dropped=0
for i in $(seq 0 $((WEFT_HOSTS_COUNT - 1))); do
  ns=WEFT_HOST_NS_$i
  packets=$(ip netns exec "${!ns}" nft list chain inet weft_loss input | grep -o "counter packets [0-9]*" |
            awk '{print $3}')
  echo "   host$i dropped ${packets:-0} segments"
  dropped=$((dropped + ${packets:-0}))
done
[ "$status" -eq 0 ] || exit "$status"
[ "$dropped" -gt 0 ] || { echo "FAILED: no segment was dropped: the loss rules did not act"; exit 1; }
echo "== exact under loss: $dropped segments dropped in all"
