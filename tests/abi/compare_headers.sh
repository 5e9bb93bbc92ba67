#!/usr/bin/env bash
# Checks that Weft's include/nccl.h is a drop-in for NVIDIA's nccl.h:
#   1. layout_probe.cc built against each header prints identical sizes, offsets, enum and macro
#      values and initializer contents (ours is built both with and without the CUDA headers);
#   2. every function NVIDIA's header declares, redeclared verbatim after including ours, compiles
#      as C++ (extern "C" redeclarations with another signature are errors) and as C11;
#   3. our header compiles warning-free as C99 -Wpedantic and C++11/C++20, with and without CUDA.
# Usage: compare_headers.sh OUR_INCLUDE_DIR NVIDIA_NCCL_H [CXX] [CC]
set -u
our_dir=$1
nvidia_header=$2
cxx=${3:-c++}
cc=${4:-cc}
nvidia_dir=$(dirname "$nvidia_header")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
failed=0

fail() { echo "FAIL: $*"; failed=1; }

# The NVIDIA build sees only the toolkit's include directory; ours never sees the toolkit's nccl.h
# because our directory comes first.
"$cxx" -std=c++17 -I"$nvidia_dir" "$here/layout_probe.cc" -o "$work/probe_nvidia" ||
  fail "layout_probe does not build against $nvidia_header"
"$cxx" -std=c++17 -I"$our_dir" -I"$nvidia_dir" "$here/layout_probe.cc" -o "$work/probe_ours_cuda" ||
  fail "layout_probe does not build against $our_dir/nccl.h with CUDA headers"
"$cxx" -std=c++17 -I"$our_dir" "$here/layout_probe.cc" -o "$work/probe_ours" ||
  fail "layout_probe does not build against $our_dir/nccl.h without CUDA headers"
if [[ $failed == 0 ]]; then
  "$work/probe_nvidia" > "$work/nvidia.txt"
  "$work/probe_ours_cuda" > "$work/ours_cuda.txt"
  "$work/probe_ours" > "$work/ours.txt"
  diff -u "$work/nvidia.txt" "$work/ours_cuda.txt" || fail "layout differs (ours with CUDA headers)"
  diff -u "$work/nvidia.txt" "$work/ours.txt" || fail "layout differs (ours without CUDA headers)"
  echo "layout: $(wc -l < "$work/nvidia.txt") facts compared"
fi

# NVIDIA's function declarations, comments and attributes removed, one per line.
perl -0777 -ne '
  s{/\*.*?\*/}{}gs; s{//[^\n]*}{}g;
  s{__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)}{}g;
  while (/((?:const\s+char\s*\*|ncclResult_t|void)\s*p?nccl\w+\s*\([^;{}]*\)\s*;)/g) {
    my $d = $1; $d =~ s/\s+/ /g; print "$d\n";
  }' "$nvidia_header" > "$work/decls.h"
ndecl=$(wc -l < "$work/decls.h")
[[ $ndecl -gt 50 ]] || fail "only $ndecl declarations extracted from $nvidia_header"
{
  echo '#include "nccl.h"'
  echo '#ifdef __cplusplus'
  echo 'extern "C" {'
  echo '#endif'
  cat "$work/decls.h"
  echo '#ifdef __cplusplus'
  echo '}'
  echo '#endif'
} > "$work/redeclare.h"
printf '#include "redeclare.h"\nint main() { return 0; }\n' > "$work/redeclare.cc"
printf '#include "redeclare.h"\nint main(void) { return 0; }\n' > "$work/redeclare.c"
"$cxx" -std=c++11 -Wall -Werror -I"$our_dir" -I"$work" -c "$work/redeclare.cc" -o /dev/null ||
  fail "a declaration differs (C++, no CUDA headers)"
"$cxx" -std=c++20 -Wall -Werror -I"$our_dir" -I"$nvidia_dir" -I"$work" -c "$work/redeclare.cc" -o /dev/null ||
  fail "a declaration differs (C++, CUDA headers)"
"$cc" -std=c11 -Wall -Werror -I"$our_dir" -I"$work" -c "$work/redeclare.c" -o /dev/null ||
  fail "a declaration differs (C11)"
echo "declarations: $ndecl of NVIDIA's redeclared after ours"

# Our header alone, strict.
printf '#include "nccl.h"\nncclConfig_t config = NCCL_CONFIG_INITIALIZER;\nncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;\n' > "$work/strict.c"
cp "$work/strict.c" "$work/strict.cc"
"$cc" -std=c99 -Wall -Wextra -Wpedantic -Werror -I"$our_dir" -c "$work/strict.c" -o /dev/null ||
  fail "C99 -Wpedantic without CUDA headers"
# -isystem: the toolkit's own headers are not C99-pedantic clean; ours must be.
"$cc" -std=c99 -Wall -Wextra -Wpedantic -Werror -I"$our_dir" -isystem "$nvidia_dir" -c "$work/strict.c" -o /dev/null ||
  fail "C99 -Wpedantic with CUDA headers"
for std in c++11 c++20; do
  "$cxx" -std=$std -Wall -Wextra -Wpedantic -Werror -I"$our_dir" -c "$work/strict.cc" -o /dev/null ||
    fail "$std without CUDA headers"
  "$cxx" -std=$std -Wall -Wextra -Wpedantic -Werror -I"$our_dir" -I"$nvidia_dir" -c "$work/strict.cc" -o /dev/null ||
    fail "$std with CUDA headers"
done
# Our fallback typedef must equal CUDA's: include cuda_runtime.h after ours while ours cannot see it.
printf '#include "nccl.h"\n#include "%s/cuda_runtime.h"\n' "$nvidia_dir" > "$work/after.cc"
cp "$work/after.cc" "$work/after.c"
if [[ -f "$nvidia_dir/cuda_runtime.h" ]]; then
  "$cxx" -std=c++11 -Wall -Werror -I"$our_dir" -c "$work/after.cc" -o /dev/null ||
    fail "cuda_runtime.h after our header (C++)"
  "$cc" -std=c11 -Wall -Werror -I"$our_dir" -c "$work/after.c" -o /dev/null ||
    fail "cuda_runtime.h after our header (C11)"
fi

if [[ $failed == 0 ]]; then echo "OK: $our_dir/nccl.h matches $nvidia_header"; fi
exit $failed
