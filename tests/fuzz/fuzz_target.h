#pragma once
// What every fuzz target shares: libFuzzer's entry point, which each target defines, and how a
// target reports a property that does not hold.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

/// Runs one input. Returns 0, or -1 for an input that must not join the corpus (libFuzzer's
/// convention). Called from one thread, many times per process: it must leave no state behind.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace weft::fuzz {

/// Aborts, naming `property`, when it does not hold: libFuzzer saves the input as a crash and the
/// corpus replay test fails.
inline void requireProperty(bool holds, const char* property) {
  if (holds) return;
  fprintf(stderr, "fuzz property violated: %s\n", property);
  abort();
}

}  // namespace weft::fuzz
