#!/usr/bin/env bash
# Runs one case of tests/ib/cases.sh in a soft-RoCE guest and reports it here (ctest label ib).
#
#   run_case.sh IMAGE_DIR PERF_DIR CASE [qemu network options...]
#
# Without network options the guest has one NIC (guest/run.sh).
set -euo pipefail
image=$1 perf=$2 case=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 is missing: run scripts/setup.sh"; exit 77; }
job=$(dirname "$image")/ib-jobs/$case
rm -rf "$job"
mkdir -p "$job"
printf '%s\n' "exec $here/cases.sh $perf $case" >"$job/job.sh"
status=0
"$here/guest/run.sh" "$image" "$job" "$@" || status=$?
cat "$job/output" 2>/dev/null || true
echo "(guest console, rank logs: $job)"
exit $status
