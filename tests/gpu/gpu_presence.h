#pragma once
// Whether this machine can run the GPU tests, asked without touching CUDA in this process: the
// multi-rank harness forks ranks, and a process that has initialised CUDA cannot fork ranks that
// use it.

#include <chrono>
#include <string>

namespace weft::gpu_tests {

/// True if a CUDA device is usable. Otherwise false, with *why saying what is missing (for the
/// skip message). The answer comes from a forked child and is cached.
bool gpuPresent(std::string* why);

/// Whether WEFT_GPU_TESTS_REQUIRE_GPU=1 is set (as the GPU check sets it): a test that finds no
/// usable GPU then fails instead of skipping, so that a run cannot pass without testing anything.
bool gpuRequired();

/// Whether CUDA was started in this process (the driver, libcuda, is mapped): ranks forked from
/// here then fail or hang in their first CUDA call.
bool cudaStartedHere();

/// Fails the calling test (a fatal failure) where CUDA was started in its process: the ranks it
/// is about to fork could not use CUDA.
#define ASSERT_CUDA_NOT_STARTED_HERE()                                                                   \
  ASSERT_FALSE(::weft::gpu_tests::cudaStartedHere())                                                    \
      << "CUDA was started in this test process before it forked ranks, which then cannot use CUDA: run " \
         "the tests whose ranks are processes in a process of their own (--gtest_filter="                 \
         "'*processes*:GpuLostPeer.*')"

/// A test's time limit: `usual`, or WEFT_GPU_TEST_DEADLINE_S seconds where that is set (the GPU
/// check sets it below its runner's limit per test, so that the test's own report of where its
/// ranks were comes first).
std::chrono::seconds gpuTestDeadline(std::chrono::seconds usual);

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
