#pragma once
// Whether this machine can run the GPU tests, asked without touching CUDA in this process: the
// multi-rank harness forks ranks, and a process that has initialised CUDA cannot fork ranks that
// use it.

#include <string>

namespace weft::gpu_tests {

/// True if a CUDA device is usable. Otherwise false, with *why saying what is missing (for the
/// skip message). The answer comes from a forked child and is cached.
bool gpuPresent(std::string* why);

/// GTEST_SKIP()s the calling test, saying why, when no GPU is present.
#define SKIP_WITHOUT_GPU()                                                        \
  do {                                                                            \
    std::string whyNoGpu;                                                         \
    if (!::weft::gpu_tests::gpuPresent(&whyNoGpu)) GTEST_SKIP() << whyNoGpu;      \
  } while (0)

}  // namespace weft::gpu_tests
