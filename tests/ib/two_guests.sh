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
# A free port below the kernel's ephemeral range for the guests' link.
port=
for _ in $(seq 50); do
  candidate=$((20000 + RANDOM % 12000))
  if ! ss -Htln "sport = :$candidate" | grep -q .; then port=$candidate; break; fi
done
[[ -n $port ]] || { echo "two_guests.sh: no free port for the guests' link"; exit 1; }
link() { echo "-netdev socket,id=net0,$1=127.0.0.1:$port -device virtio-net-pci,netdev=net0,mac=52:54:00:00:03:0$2"; }
# shellcheck disable=SC2046
WEFT_GUEST_ADDR=10.0.3.1/24 "$here/guest/run.sh" "$image" "$jobs/0" $(link listen 1) &
first=$!
# The listening side's socket must exist before the other connects.
for _ in $(seq 300); do
  ss -Htln "sport = :$port" | grep -q . && break
  sleep 0.1
done
# shellcheck disable=SC2046
WEFT_GUEST_ADDR=10.0.3.2/24 WEFT_GUEST_MTU=1100 "$here/guest/run.sh" "$image" "$jobs/1" $(link connect 2) || status=$?
wait $first || status=$?
for guest in 0 1; do
  echo "== guest $guest"
  cat "$jobs/$guest/output" 2>/dev/null || true
done
echo "(guest consoles, rank logs: $jobs)"
if [[ $case == link_cut && ${status:-0} == 0 ]] && ! grep -qh "VERBS ERROR" "$jobs"/*/output; then
  echo "FAIL: neither rank saw the cut link as a verbs error (both learned it from the liveness channel)"
  status=1
fi
exit "${status:-0}"
