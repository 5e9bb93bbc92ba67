#pragma once
// Whether this machine can run the GPU tests, asked without touching CUDA in this process: the
// multi-rank harness forks ranks, and a process that has initialised CUDA cannot fork ranks that
// use it.

#include <string>

namespace weft::gpu_tests {

/// True if a CUDA device is usable. Otherwise false, with *why saying what is missing (for the
/// skip message). The answer comes from a forked child and is cached.
bool gpuPresent(std::string* why);

/// Whether WEFT_GPU_TESTS_REQUIRE_GPU=1 is set (as the GPU check sets it): a test that finds no
/// usable GPU then fails instead of skipping, so that a run cannot pass without testing anything.
bool gpuRequired();

/// GTEST_SKIP()s the calling test, saying why, when no GPU is present (fails it under
/// WEFT_GPU_TESTS_REQUIRE_GPU=1).
#define SKIP_WITHOUT_GPU()                                                                   \
  do {                                                                                       \
    std::string whyNoGpu;                                                                    \
    if (!::weft::gpu_tests::gpuPresent(&whyNoGpu)) {                                         \
      if (::weft::gpu_tests::gpuRequired()) FAIL() << whyNoGpu << ", and a GPU is required"; \
      GTEST_SKIP() << whyNoGpu << ": GPU test skipped";                                      \
    }                                                                                        \
  } while (0)

}  // namespace weft::gpu_tests
