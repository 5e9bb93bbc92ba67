#!/usr/bin/env bash
# Boots a soft-RoCE guest (build_image.sh) that runs one job and powers off.
#
#   run.sh IMAGE_DIR JOB_DIR [qemu network options...]
#
# JOB_DIR/job.sh runs in the guest as root, chrooted into this machine's root (shared read-only,
# so the build under test is there at the same path) with JOB_DIR writable at /mnt. Its output
# lands in JOB_DIR/output and its exit status becomes run.sh's. The guest's eth0 carries rxe0;
# without network options it leads nowhere (qemu user networking, restricted). Set
# WEFT_GUEST_ADDR / WEFT_GUEST_MTU for eth0's address and MTU, WEFT_GUEST_TIMEOUT (seconds,
# default 600) to bound the whole boot.
set -euo pipefail
image=$1 job=$2
shift 2
network=("$@")
if [[ ${#network[@]} -eq 0 ]]; then
  network=(-netdev user,id=net0,restrict=on -device virtio-net-pci,netdev=net0)
fi
rm -f "$job/status" "$job/output"
append="console=ttyS0 quiet panic=-1 weft.addr=${WEFT_GUEST_ADDR:-10.0.2.15/24}"
[[ -n ${WEFT_GUEST_MTU:-} ]] && append+=" weft.mtu=$WEFT_GUEST_MTU"
timeout "${WEFT_GUEST_TIMEOUT:-600}" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 2048 \
  -nographic -no-reboot -kernel "$image/vmlinuz" -initrd "$image/initramfs.gz" -append "$append" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$job,mount_tag=job,security_model=none" \
  "${network[@]}" >"$job/console" 2>&1 || true
if [[ ! -s $job/status ]]; then
  echo "run.sh: the guest ended without finishing its job; its console:" >&2
  tail -n 30 "$job/console" >&2
  exit 1
fi
exit "$(cat "$job/status")"
