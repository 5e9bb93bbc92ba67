#!/usr/bin/env bash
# Two soft-RoCE guests joined by a qemu socket network are two RoCE hosts, each running CASE of
# tests/ib/cases.sh with GUEST set (0 or 1): across_guests (two ranks each, every collective) or
# link_cut (one rank each, the second guest's link cut mid-run). The second guest's eth0 has MTU
# 1100, so its RoCE MTU is 512 and the first's 1024: connections between them must agree on 512.
#
#   two_guests.sh IMAGE_DIR PERF_DIR CASE
set -euo pipefail
image=$1 perf=$2 case=$3
here=$(cd "$(dirname "$0")" && pwd)
command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 is missing: run scripts/setup.sh"; exit 77; }
jobs=$(dirname "$image")/ib-jobs/$case
rm -rf "$jobs"
mkdir -p "$jobs/0" "$jobs/1"
for guest in 0 1; do
  printf '%s\n' "GUEST=$guest exec $here/cases.sh $perf $case" >"$jobs/$guest/job.sh"
done
port=$((30000 + RANDOM % 20000))
link() { echo "-netdev socket,id=net0,$1=127.0.0.1:$port -device virtio-net-pci,netdev=net0,mac=52:54:00:00:03:0$2"; }
# shellcheck disable=SC2046
WEFT_GUEST_ADDR=10.0.3.1/24 "$here/guest/run.sh" "$image" "$jobs/0" $(link listen 1) &
first=$!
sleep 2  # the listening side's socket must exist before the other connects
# shellcheck disable=SC2046
WEFT_GUEST_ADDR=10.0.3.2/24 WEFT_GUEST_MTU=1100 "$here/guest/run.sh" "$image" "$jobs/1" $(link connect 2) || status=$?
wait $first || status=$?
for guest in 0 1; do
  echo "== guest $guest"
  cat "$jobs/$guest/output" 2>/dev/null || true
done
echo "(guest consoles, rank logs: $jobs)"
exit "${status:-0}"
