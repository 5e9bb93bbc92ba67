#!/usr/bin/env bash
# Installs what Weft needs to build and test (Debian 12 packages), then configures and builds it
# into build/. Safe to run again: it installs only what is missing and rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ make pkg-config libgtest-dev libhwloc-dev openmpi-bin libopenmpi-dev
          libpugixml-dev nlohmann-json3-dev libcli11-dev
          libibverbs-dev  # the ib transport's headers (libibverbs itself is loaded at run time)
          qemu-system-x86 busybox-static kmod cpio  # the ib tests' soft-RoCE guests
          iproute2 util-linux nftables  # the multi-node tests: namespace hosts, packet loss
          python3)  # scripts/gtest_runner.py (the GPU check's test runner) and its test
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

echo "== building into build/"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
