#!/usr/bin/env bash
# Measures Weft's allreduce side by side with OpenMPI's MPI_Allreduce and Gloo's ring allreduce over
# TCP, and with the machine's bounds (memcpy; an allreduce whose buffers are all directly visible;
# the same with private buffers, staged through shared slots; a ring of TCP loopback streams), in
# one go on this machine: 2 and 4 ranks, shm and socket paths,
# 8 B to 256 MiB, float sum, out of place.
#
#   perf/compare/run.sh [--quick] [--out DIR] [--build DIR]
#
#   --quick      2 ranks only, 8 B to 64 MiB, fewer iterations (about a minute)
#   --out DIR    where results go (default build/compare)
#   --build DIR  use this build directory and build only the programs needed; the default, build/,
#                is set up and built by scripts/setup.sh
#
# Writes DIR/compare.csv (system,path,ranks,bytes,time_us,busbw_gbps), DIR/busbw.png and
# DIR/latency.png, DIR/summary.txt (printed at the end: ratios, fractions of the bounds, targets)
# and DIR/summary.md (the same tables in markdown, for docs/PERFORMANCE.md), DIR/machine.txt, and
# each program's output in DIR/logs/. Exits non-zero if a program failed or returned wrong data.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/../.."
compare_dir=perf/compare

quick=0
out=build/compare
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) out=${2:?--out needs a directory}; shift ;;
    --build) build=${2:?--build needs a directory}; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$self"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# --- packages and build -------------------------------------------------------------------------
extra_packages=(libgloo-dev gnuplot-nox)
missing=()
for package in "${extra_packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

programs=(all_reduce_perf mpi_allreduce_perf gloo_allreduce_perf memcpy_bound visible_allreduce_bound
          staged_allreduce_bound tcp_loopback_bound)
if [ "$build" = build ]; then
  ./scripts/setup.sh
else
  echo "== building ${programs[*]} into $build/"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j "$(nproc)" --target "${programs[@]}"
fi
bin=$build/perf
for program in "${programs[@]}"; do
  [ -x "$bin/$program" ] || { echo "run.sh: $bin/$program was not built (see the cmake output above)" >&2; exit 1; }
done

# --- what to run ----------------------------------------------------------------------------------
# Two sweeps per configuration, through the same programs and flags: small sizes with many
# iterations (steady latencies), large sizes with few (the run stays short). The warmup is as long
# as the timed loop, so that it has used every buffer offset the timed loop uses: on some virtual
# machines the first touch of a page costs tens of microseconds, which would otherwise be timed.
if [ "$quick" -eq 1 ]; then
  rank_counts=(2)
  sweeps=("-b 8 -e 512K -f 2 -n 20 -w 20" "-b 1M -e 64M -f 2 -n 4 -w 4")
else
  rank_counts=(2 4)
  sweeps=("-b 8 -e 512K -f 2 -n 100 -w 100" "-b 1M -e 256M -f 2 -n 8 -w 8")
fi

mkdir -p "$out/logs"
csv=$out/compare.csv
echo "system,path,ranks,bytes,time_us,busbw_gbps" > "$csv"
failures=()

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# measure SYSTEM PATH RANKS COMMAND...: runs COMMAND with each sweep's flags appended (an argument
# "{fresh-dir}" becomes a new empty directory), keeps its output in logs/, and appends its table
# rows to the CSV. Columns 1 and 6 of a row are the size and the out-of-place time; busbw is
# computed again from them (the table rounds it to 0.01 GB/s, too coarse at small sizes) with the
# same definition: bytes / time * 2(n-1)/n for n > 1 ranks, bytes / time for one.
measure() {
  local system=$1 path=$2 ranks=$3
  shift 3
  local log=$out/logs/${system}_${path}_${ranks}.txt
  local part=$scratch/output
  : > "$log"
  echo "== $system, $path path, $ranks rank(s)"
  local sweep sweep_flags
  for sweep in "${sweeps[@]}"; do
    read -r -a sweep_flags <<< "$sweep"
    local command=() arg
    for arg in "$@"; do
      if [ "$arg" = "{fresh-dir}" ]; then command+=("$(mktemp -d -p "$scratch")"); else command+=("$arg"); fi
    done
    command+=("${sweep_flags[@]}")
    echo "\$ ${command[*]}" >> "$log"
    local status=0
    timeout 600 "${command[@]}" > "$part" 2>&1 || status=$?
    cat "$part" >> "$log"
    if [ "$status" -ne 0 ]; then
      failures+=("$system, $path path, $ranks rank(s): exit status $status, see $log")
      tail -n 5 "$part" | sed 's/^/   /'
      continue
    fi
    awk -v prefix="$system,$path,$ranks" -v ranks="$ranks" '
      $1 ~ /^[0-9]+$/ && NF >= 9 && $6 > 0 {
        factor = ranks > 1 ? 2 * (ranks - 1) / ranks : 1
        printf "%s,%s,%s,%.6g\n", prefix, $1, $6, $1 / ($6 * 1000) * factor
      }' "$part" >> "$csv"
  done
}

mpirun_for() {
  local ranks=$1
  local flags=(mpirun -np "$ranks" --oversubscribe)
  [ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
  [ "$ranks" -gt "$(nproc)" ] && flags+=(--bind-to none)
  echo "${flags[@]}"
}

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
  echo "cpus: $(nproc) online; $(lscpu | sed -n 's/^Thread(s) per core: *//p') thread(s) per core"
  echo "memory: $(free -g | awk '/^Mem:/ { print $2 }') GiB"
  echo "kernel: $(uname -r)"
  echo "os: Debian $(cat /etc/debian_version 2>/dev/null || echo unknown)"
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  git diff --quiet HEAD 2>/dev/null || commit="$commit (with local changes)"
  echo "weft: $commit"
  echo "openmpi: $(dpkg-query -W -f '${Version}' libopenmpi-dev 2>/dev/null)"
  echo "gloo: $(dpkg-query -W -f '${Version}' libgloo-dev 2>/dev/null)"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/machine.txt"

start=$SECONDS
measure memcpy-bound memory 1 "$bin/memcpy_bound"
for ranks in "${rank_counts[@]}"; do
  read -r -a mpirun <<< "$(mpirun_for "$ranks")"
  # shm path
  measure visible-bound shm "$ranks" "$bin/visible_allreduce_bound" -p "$ranks"
  measure staged-bound shm "$ranks" "$bin/staged_allreduce_bound" -p "$ranks"
  measure weft shm "$ranks" "${mpirun[@]}" "$bin/all_reduce_perf"
  measure weft-registered shm "$ranks" "${mpirun[@]}" "$bin/all_reduce_perf" -R 1
  measure mpi shm "$ranks" "${mpirun[@]}" "$bin/mpi_allreduce_perf"
  # socket path
  measure tcp-bound socket "$ranks" "$bin/tcp_loopback_bound" -p "$ranks"
  measure weft socket "$ranks" "${mpirun[@]}" -x NCCL_SHM_DISABLE=1 "$bin/all_reduce_perf"
  measure gloo socket "$ranks" "${mpirun[@]}" "$bin/gloo_allreduce_perf" --store "{fresh-dir}"
  measure mpi socket "$ranks" "${mpirun[@]}" --mca pml ob1 --mca btl self,tcp "$bin/mpi_allreduce_perf"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"
echo "measured in: $((SECONDS - start)) s" >> "$out/machine.txt"

# --- plots and summary ----------------------------------------------------------------------------
gnuplot -e "csv='$csv'; out='$out'; ranks='${rank_counts[*]}'" "$compare_dir/plot.gnuplot"
awk -F, -v format=text -f "$compare_dir/summarize.awk" "$csv" > "$out/summary.txt"
awk -F, -v format=markdown -f "$compare_dir/summarize.awk" "$csv" > "$out/summary.md"
echo
cat "$out/machine.txt"
echo
cat "$out/summary.txt"
echo
echo "== wrote $csv, $out/busbw.png, $out/latency.png, $out/summary.txt, $out/summary.md"
if [ ${#failures[@]} -gt 0 ]; then
  printf 'FAILED: %s\n' "${failures[@]}" >&2
  exit 1
fi
