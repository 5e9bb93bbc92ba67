#!/usr/bin/env bash
# Builds the soft-RoCE guest that the ib tests boot: Debian's own kernel (it has the rdma_rxe
# driver that this machine's kernel lacks) and a busybox initramfs holding the modules rxe needs.
#
#   build_image.sh DIR     writes DIR/vmlinuz and DIR/initramfs.gz (kept if already there)
#
# Needs qemu-system-x86, busybox-static, kmod and cpio, and Debian's package archive for the
# kernel package (apt-get download). The guest's /init is tests/ib/guest/init.
set -euo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
if [[ -s $out/vmlinuz && -s $out/initramfs.gz && $out/initramfs.gz -nt $here/init ]]; then
  exit 0
fi
for tool in busybox depmod modprobe cpio; do
  command -v $tool >/dev/null || { echo "build_image: $tool is missing (apt-get install busybox-static kmod cpio)" >&2; exit 1; }
done
mkdir -p "$out"
work=$(mktemp -d "$out/image.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The kernel package the archive currently calls linux-image-amd64.
kernel_package() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}'; }
package=$(kernel_package)
if [[ -z $package && $(id -u) -eq 0 ]]; then
  apt-get update -qq && package=$(kernel_package)
fi
[[ -n $package ]] || { echo "build_image: apt-cache knows no linux-image-amd64 (apt-get update?)" >&2; exit 1; }
(cd "$work" && apt-get download -qq "$package" 2>/dev/null) ||
  { echo "build_image: could not download $package from Debian's archive" >&2; exit 1; }
dpkg-deb -x "$work"/*.deb "$work/kernel"
version=${package#linux-image-}
depmod -b "$work/kernel" "$version"

# The modules in load order: crc32_generic first (rdma_rxe fails to add a link without it).
root=$work/initramfs
mkdir -p "$root"/{bin,modules,proc,sys,dev,host}
for module in crc32_generic virtio_pci virtio_net 9pnet_virtio 9p rdma_rxe ib_uverbs; do
  modprobe -d "$work/kernel" -S "$version" --show-depends $module
done | awk '$1 == "insmod" && !seen[$2]++ {print $2}' | while read -r path; do
  cp "$path" "$root/modules/"
  basename "$path" >>"$root/modules/order"
done
cp "$(command -v busybox)" "$root/bin/busybox"
cp "$here/init" "$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.gz"
cp "$work/kernel/boot/vmlinuz-$version" "$out/vmlinuz"
mv "$work/initramfs.gz" "$out/initramfs.gz"
