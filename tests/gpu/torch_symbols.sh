#!/usr/bin/env bash
# Checks that Weft's libnccl.so.2 can stand in for NVIDIA's NCCL under PyTorch, at the symbol level:
# every nccl* function that torch's libtorch_cuda.so imports (undefined dynamic symbol) must be
# defined and exported by Weft's library. Other libraries in torch's lib/ folder that import nccl*
# symbols are checked too and named. Versioned names ("ncclAllReduce@NCCL_2") are reduced to the
# plain name.
#
# Usage: tests/gpu/torch_symbols.sh LIB
#   LIB     Weft's libnccl.so.2
#   PYTHON  (environment) the interpreter that has torch installed; python3 by default
# Prints the missing symbols, if any, and a one-line summary. Exit status: 0 when every imported
# symbol is exported, 1 when some are missing, 2 on a usage or setup error, 3 when torch's libraries
# import no nccl* symbol at all (NCCL linked in statically, or loaded with dlopen: only a run shows
# which), 4 when this machine has neither nm nor readelf to read them with.
set -euo pipefail

die() {
  echo "torch_symbols.sh: $*" >&2
  exit 2
}

[[ $# -eq 1 ]] || die "usage: torch_symbols.sh LIB"
lib=$1
[[ -f $lib ]] || die "no such library: $lib"
python=${PYTHON:-python3}
if ! command -v nm >/dev/null 2>&1 && ! command -v readelf >/dev/null 2>&1; then
  echo "torch_symbols.sh: neither nm nor readelf is installed here (binutils): the symbols were not compared" >&2
  exit 4
fi

# The dynamic symbols of an ELF file, one "STATE NAME" a line, STATE being U (undefined), W (weak
# undefined) or D (defined), NAME without its version suffix. nm when it is installed, readelf
# otherwise.
dynamic_symbols() {
  local file=$1
  if command -v nm >/dev/null 2>&1; then
    nm -D "$file" 2>/dev/null | awk '
      NF == 2 && $1 ~ /^[UvVwW]$/ { name = $2; sub(/@.*/, "", name); print ($1 == "U" ? "U" : "W"), name; next }
      NF >= 3 && $2 != "A" { name = $3; sub(/@.*/, "", name); print ($2 == "U" ? "U" : "D"), name }'
  else
    readelf --dyn-syms -W "$file" 2>/dev/null | awk '
      $1 ~ /^[0-9]+:$/ && NF >= 8 { name = $8; sub(/@.*/, "", name); print ($7 != "UND" ? "D" : $5 == "WEAK" ? "W" : "U"), name }'
  fi
}

# nccl* symbols FILE needs (undefined), sorted and unique. A weak undefined reference (nm's "w"/"v"
# with no address) is not among them: the loader leaves it null where no library defines it.
imported_nccl() {
  dynamic_symbols "$1" | awk '$1 == "U" && $2 ~ /^nccl/ { print $2 }' | sort -u
}

# Symbols FILE defines and exports, sorted and unique.
exported() {
  dynamic_symbols "$1" | awk '$1 == "D" { print $2 }' | sort -u
}

# Found without importing torch (which starts CUDA and takes seconds).
torch_lib_dir=$("$python" -c 'import importlib.util, os
spec = importlib.util.find_spec("torch")
print(os.path.join(spec.submodule_search_locations[0], "lib"))') || die "no torch for $python"
torch_cuda=$torch_lib_dir/libtorch_cuda.so
[[ -f $torch_cuda ]] || die "no libtorch_cuda.so in $torch_lib_dir (a CPU-only torch?)"

echo "Weft library:   $lib"
echo "torch library:  $torch_cuda"
soname=$(readelf -d -W "$lib" 2>/dev/null | awk '/\(SONAME\)/ { gsub(/[\[\]]/, "", $NF); print $NF }' || true)
echo "Weft SONAME:    ${soname:-<none>}"
needed=$(readelf -d -W "$torch_cuda" 2>/dev/null | awk '/\(NEEDED\)/ && /nccl/ { gsub(/[\[\]]/, "", $NF); print $NF }' || true)
echo "torch NEEDED:   ${needed:-<no libnccl entry: NCCL may be linked statically>}"
if [[ -n $needed && -n $soname && $needed != *"$soname"* ]]; then
  echo "warning: torch needs '$needed' but Weft's SONAME is '$soname'; LD_PRELOAD will not replace it" >&2
fi

# Imports of libtorch_cuda.so first, then of every other library in torch's lib/ folder.
declare -A importer=()
while read -r sym; do
  [[ -n $sym ]] && importer[$sym]=libtorch_cuda.so
done < <(imported_nccl "$torch_cuda")
for other in "$torch_lib_dir"/*.so*; do
  [[ -f $other && $other != "$torch_cuda" ]] || continue
  case $(basename "$other") in libnccl*) continue ;; esac # a bundled NCCL is what Weft replaces
  count=0
  while read -r sym; do
    [[ -n $sym ]] || continue
    count=$((count + 1))
    [[ -n ${importer[$sym]:-} ]] || importer[$sym]=$(basename "$other")
  done < <(imported_nccl "$other")
  ((count == 0)) || echo "also imports $count nccl symbols: $(basename "$other")"
done

total=${#importer[@]}
if ((total == 0)); then
  echo "torch imports no nccl symbols: NCCL is linked into torch statically (Weft cannot replace it) or loaded with dlopen"
  exit 3
fi

weft_exports=$(exported "$lib")
missing=()
for sym in $(printf '%s\n' "${!importer[@]}" | sort); do
  if ! grep -qxF -- "$sym" <<<"$weft_exports"; then
    missing+=("$sym")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "torch imports $total nccl symbols; Weft exports all of them"
  exit 0
fi
echo "MISSING (${#missing[@]}):"
for sym in "${missing[@]}"; do
  echo "  $sym (imported by ${importer[$sym]})"
done
echo "torch imports $total nccl symbols; Weft is missing ${#missing[@]}: ${missing[*]}"
exit 1
