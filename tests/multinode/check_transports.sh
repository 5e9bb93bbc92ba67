#!/usr/bin/env bash
# Checks the transports and rings that ranks reported in their INFO lines (NCCL_DEBUG=INFO,
# NCCL_DEBUG_SUBSYS=INIT) against where the ranks ran:
#
#   check_transports.sh HOSTS LAYOUT LOG...
#
# LAYOUT holds "RANK HOST" per line. Ranks on one host must be connected over shm, ranks on
# different hosts over sockets, and each channel's ring must cross between hosts once per host
# (never back and forth). Prints each problem found, nothing when all is well; exits 0 either way
# unless it cannot read its input.
set -euo pipefail
hosts=${1:?usage: check_transports.sh HOSTS LAYOUT LOG...}
layout=${2:?usage: check_transports.sh HOSTS LAYOUT LOG...}
shift 2
# "... NCCL INFO Channel 00 : 2[2] -> 3[3] via shm"
awk -v hosts="$hosts" '
  FNR == NR { host[$1] = $2; next }
  / NCCL INFO Channel [0-9]+ : [0-9]+\[[0-9]+\] -> [0-9]+\[[0-9]+\] via / {
    for (i = 1; i <= NF; ++i) if ($i == "Channel") channel = $(i + 1)
    split($0, after, " : "); split(after[2], words, " ")
    from = words[1]; sub(/\[.*/, "", from); to = words[3]; sub(/\[.*/, "", to); via = words[5]
    edge = from ">" to ":" via
    if (!((channel, edge) in seen)) { seen[channel, edge] = 1; edges[channel] = edges[channel] " " edge }
  }
  END {
    nchannels = 0
    for (c in edges) {
      ++nchannels; crossings = 0; n = split(edges[c], list, " ")
      for (k = 1; k <= n; ++k) {
        split(list[k], parts, /[>:]/); a = parts[1]; b = parts[2]; via = parts[3]
        same = host[a] == host[b]
        if (same && via != "shm") print "channel " c ": ranks " a " and " b " share host " host[a] " but use " via
        if (!same && via != "socket") print "channel " c ": ranks " a " (" host[a] ") and " b " (" host[b] ") use " via
        if (!same) ++crossings
      }
      if (hosts > 1 && crossings != hosts) print "channel " c ": the ring crosses between hosts " crossings " times, not " hosts
    }
    if (nchannels == 0) print "no channel lines in the log"
    if (length(host) == 0) print "no rank lines in the layout"
  }' "$layout" "$@"
