#!/usr/bin/env bash
# Checks the transports and rings that ranks reported in their INFO lines (NCCL_DEBUG=INFO,
# NCCL_DEBUG_SUBSYS=INIT) against where the ranks ran:
#
#   check_transports.sh HOSTS LAYOUT LOG...
#
# LAYOUT holds "RANK HOST" per line. Ranks on one host must be connected over shm, ranks on
# different hosts over sockets (every connection, the rings' and the trees'), and each channel's
# ring must cross between hosts once per host (never back and forth). Prints each problem found, nothing when all is well; exits 0 either way
# unless it cannot read its input.
set -euo pipefail
hosts=${1:?usage: check_transports.sh HOSTS LAYOUT LOG...}
layout=${2:?usage: check_transports.sh HOSTS LAYOUT LOG...}
shift 2
# Connections: "... NCCL INFO Channel 00 : 2[2] -> 3[3] via shm" (rings' and trees' alike);
# rings: "... NCCL INFO Channel 00/02 :    0   2   1   3" (every rank prints them; the same).
awk -v hosts="$hosts" '
  FNR == NR { host[$1] = $2; next }
  / NCCL INFO Channel [0-9]+ : [0-9]+\[[0-9]+\] -> [0-9]+\[[0-9]+\] via / {
    for (i = 1; i <= NF; ++i) if ($i == "Channel") channel = $(i + 1)
    split($0, after, " : "); split(after[2], words, " ")
    from = words[1]; sub(/\[.*/, "", from); to = words[3]; sub(/\[.*/, "", to); via = words[5]
    same = host[from] == host[to]
    if (same && via != "shm") print "channel " channel ": ranks " from " and " to " share host " host[from] " but use " via
    if (!same && via != "socket") print "channel " channel ": ranks " from " (" host[from] ") and " to " (" host[to] ") use " via
    ++connections
    next
  }
  / NCCL INFO Channel [0-9]+\/[0-9]+ : / {
    for (i = 1; i <= NF; ++i) if ($i == "Channel") { split($(i + 1), numbers, "/"); first = i + 3 }
    if (numbers[1] in ring) next
    ring[numbers[1]] = 1; crossings = 0; n = NF - first + 1
    for (k = 0; k < n; ++k) {
      a = $(first + k); b = $(first + (k + 1) % n)
      if (host[a] != host[b]) ++crossings
    }
    if (hosts > 1 && crossings != hosts) print "channel " numbers[1] ": the ring crosses between hosts " crossings " times, not " hosts
  }
  END {
    if (connections == 0) print "no connection lines in the log"
    if (length(ring) == 0) print "no ring lines in the log"
    if (length(host) == 0) print "no rank lines in the layout"
  }' "$layout" "$@"
