#!/usr/bin/env bash
# Builds the fuzz targets of tests/fuzz/ with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer into build-fuzz/, runs each for a while, then merges what it found into
# its corpus (tests/fuzz/corpus/<target>/), minimised: the inputs that add coverage, smallest first.
#   scripts/fuzz.sh [--time SECONDS] [TARGET...]   (default: 600 s each, every target)
# A crash or a broken property stops the script; the input is kept in build-fuzz/crashes/<target>/
# and `build-fuzz/tests/fuzz/fuzz_<target> <input>` reproduces it. The corpus is checked in: the
# unit tests replay it.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=600
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time)
      seconds=${2:?--time needs a number of seconds}
      shift 2
      ;;
    -h | --help)
      sed -n '2,8p' "$0"
      exit 0
      ;;
    *)
      targets+=("$1")
      shift
      ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  for source in tests/fuzz/*_fuzz.cc; do
    targets+=("$(basename "$source" _fuzz.cc)")
  done
fi
for target in "${targets[@]}"; do
  if [ ! -f "tests/fuzz/${target}_fuzz.cc" ]; then
    echo "no fuzz target '$target': the targets are the files tests/fuzz/<target>_fuzz.cc" >&2
    exit 2
  fi
done

# clang and its runtimes (libFuzzer, the sanitizers); cmake and GoogleTest to configure the tree.
packages=(clang libclang-rt-14-dev cmake make libgtest-dev)
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

build=build-fuzz
echo "== building ${targets[*]} into $build/"
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DWEFT_SANITIZE=fuzzer-no-link,address,undefined -DWEFT_BUILD_PERF=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

for target in "${targets[@]}"; do
  binary=$build/tests/fuzz/fuzz_$target
  corpus=tests/fuzz/corpus/$target
  found=$build/found/$target
  crashes=$build/crashes/$target
  log=$build/fuzz_$target.log
  rm -rf "$found"
  mkdir -p "$corpus" "$found" "$crashes"
  echo "== fuzzing $target for $seconds s (log: $log)"
  # New inputs go to the first folder; the corpus is read only. -timeout: a run that takes this
  # many seconds counts as a hang.
  if ! "$binary" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 -artifact_prefix="$crashes/" \
    "$found" "$corpus" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "== $target failed: the input is in $crashes/ (reproduce: $binary <input>)" >&2
    exit 1
  fi
  grep -E '^#[0-9]+\s+DONE|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true

  merged=$build/merged/$target
  rm -rf "$merged"
  mkdir -p "$merged"
  "$binary" -merge=1 "$merged" "$corpus" "$found" >"$build/merge_$target.log" 2>&1
  before=$(find "$corpus" -type f | wc -l)
  find "$corpus" -type f -delete
  cp "$merged"/* "$corpus"/
  echo "== $target: corpus $before -> $(find "$corpus" -type f | wc -l) inputs, $(cat "$corpus"/* | wc -c) bytes"
done
