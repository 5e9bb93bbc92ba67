#!/usr/bin/env bash
# Checks the dynamic symbol table of a libnccl.so against NVIDIA's nccl.h: every function the header
# declares (ncclXxx and its pncclXxx twin), and the host functions of nccl_device/*.h beside it
# (with their twins), must be defined and exported, and nothing else may be
# exported except what every shared library carries (_init, _fini, linker markers, version nodes).
# Usage: check_exports.sh LIB NVIDIA_NCCL_H
set -u
lib=$1
header=$2
[[ -f $lib ]] || { echo "no such library: $lib"; exit 2; }
[[ -f $header ]] || { echo "no such header: $header"; exit 2; }

# Function names: comments removed, then every p?nccl identifier followed by "(".
expected=$(perl -0777 -ne 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g;
  while (/\b(p?nccl[A-Za-z0-9_]*)\s*\(/g) { print "$1\n" }' "$header" | sort -u)
[[ -n $expected ]] || { echo "no function declarations found in $header"; exit 2; }
# The host functions of the device API (nccl_device/*.h beside nccl.h: "__host__ <type> ncclX("),
# which programs built against NCCL 2.28 import too, each with its pnccl twin.
device_headers=("$(dirname "$header")"/nccl_device/*.h)
if [[ -f ${device_headers[0]} ]]; then
  expected=$( (echo "$expected"; perl -0777 -ne 'while (/__host__\s+[A-Za-z_][A-Za-z0-9_]*\s+(nccl[A-Za-z0-9_]*)\s*\(/g) {
    print "$1\np$1\n" }' "${device_headers[@]}") | sort -u)
fi

# Exported, defined symbols; "name@@VERSION" is reduced to name. Version nodes show as type A.
exported=$(nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u)
allowed_extra=$'_init\n_fini\n__bss_start\n_edata\n_end'

missing=$(comm -23 <(echo "$expected") <(echo "$exported"))
extra=$(comm -13 <(echo "$expected") <(echo "$exported") | grep -vxF -f <(echo "$allowed_extra") || true)

echo "$(echo "$expected" | wc -l) functions in $(basename "$header"), $(echo "$exported" | grep -c .) symbols exported by $(basename "$lib")"
status=0
if [[ -n $missing ]]; then
  echo "MISSING ($(echo "$missing" | wc -l)):"
  echo "$missing" | sed 's/^/  /'
  status=1
fi
if [[ -n $extra ]]; then
  echo "EXTRA ($(echo "$extra" | wc -l)):"
  echo "$extra" | sed 's/^/  /'
  status=1
fi
[[ $status == 0 ]] && echo "OK: exports match the header"
exit $status
