#!/usr/bin/env bash
# Checks summarize.awk on a compare.csv with known numbers: the ratios, the fractions of the bounds
# and each target's verdict, at and around its limit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
cat > "$csv" <<'EOF'
system,path,ranks,bytes,time_us,busbw_gbps
weft,shm,2,8,1.2,0.0000067
mpi,shm,2,8,0.8,0.00001
weft,shm,2,67108864,22369.6,3
mpi,shm,2,67108864,67108.9,1
visible-bound,shm,2,67108864,16777.2,4
staged-bound,shm,2,67108864,33554.4,2
memcpy-bound,memory,1,67108864,11184.8,6
weft,shm,2,268435456,134217.7,2
mpi,shm,2,268435456,268435.5,1
visible-bound,shm,2,268435456,67108.9,4
weft,socket,2,8,20,0.0000004
gloo,socket,2,8,100,0.00000008
weft,socket,2,67108864,134217.7,0.5
gloo,socket,2,67108864,134217.7,0.5
tcp-bound,socket,2,67108864,111848.1,0.6
EOF

text=$(awk -F, -v format=text -f "$here/summarize.awk" "$csv")
markdown=$(awk -F, -v format=markdown -f "$here/summarize.awk" "$csv")
failed=0
expect() {  # expect OUTPUT LINE: LINE must be one of OUTPUT's lines
  if ! grep -qxF -- "$2" <<< "$1"; then
    echo "missing line: $2"
    failed=1
  fi
}
expect "$text" "  MET      shm 64 MiB: busbw >= 2.5x MPI_Allreduce's: Weft 3.00 GB/s, MPI 1.00 GB/s: 3.00x"
expect "$text" "  MET      shm 64 MiB: busbw >= 65% of the visible-buffers bound: Weft 3.00 GB/s, bound 4.00 GB/s: 75%"
expect "$text" "  NOT MET  shm 256 MiB: busbw >= 2.5x MPI_Allreduce's: Weft 2.00 GB/s, MPI 1.00 GB/s: 2.00x"
expect "$text" "  NOT MET  shm 256 MiB: busbw >= 65% of the visible-buffers bound: Weft 2.00 GB/s, bound 4.00 GB/s: 50%"
expect "$text" "  MET      shm 8 B: time <= 1.5x MPI_Allreduce's: Weft 1.20 us, MPI 0.80 us: 1.50x"
expect "$text" "  NOT MET  socket 64 MiB: busbw >= 1.3x Gloo's: Weft 0.50 GB/s, Gloo 0.50 GB/s: 1.00x"
expect "$text" "  MET      socket 64 MiB: busbw >= 70% of the two-way TCP loopback bound: Weft 0.50 GB/s, \
bound 0.60 GB/s: 83%"
expect "$text" "  MET      socket 8 B: time <= 1/5 of Gloo's: Weft 20.0 us, Gloo 100 us: 0.20x"
expect "$text" "  note     shm 64 MiB: staging through shared memory: the staged bound 2.00 GB/s is 50% of the \
visible-buffers bound; Weft is 150% of the staged bound"
expect "$text" "  2      64 MiB   3.00          -     1.00           3.00x           4.00           75%          2.00                 150%    6.00"
expect "$markdown" "| 2 | 64 MiB | 3.00 | - | 1.00 | 3.00x | 4.00 | 75% | 2.00 | 150% | 6.00 |"
expect "$markdown" "- **NOT MET** socket 64 MiB: busbw >= 1.3x Gloo's: Weft 0.50 GB/s, Gloo 0.50 GB/s: 1.00x"
# Nothing measured: every target says so instead of passing.
missing=$(echo "system,path,ranks,bytes,time_us,busbw_gbps" | awk -F, -v format=text -f "$here/summarize.awk")
expect "$missing" "  MISSING  shm 64 MiB: busbw >= 2.5x MPI_Allreduce's: not measured"
expect "$missing" "  MISSING  socket 8 B: time <= 1/5 of Gloo's: not measured"
if [ "$failed" -ne 0 ]; then
  echo "--- text summary:"; echo "$text"
  echo "--- markdown summary:"; echo "$markdown"
  exit 1
fi
echo "summarize.awk: all expected lines present"
