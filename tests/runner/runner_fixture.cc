// Tests for scripts/gtest_runner.py to run (tests/runner/check_runner.sh). They all pass, skip or
// are disabled, unless WEFT_RUNNER_FIXTURE_FAULTS names a file: then one fails, one crashes, and
// one hangs after forking a child that would outlive it (the child's pid is written to that file)
// and says what it waits for on SIGUSR1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>

#include <cstdio>
#include <cstdlib>

namespace {

const char* faultsFile() { return std::getenv("WEFT_RUNNER_FIXTURE_FAULTS"); }

// What a hung test prints on SIGUSR1, as Weft does with WEFT_DUMP_SIGNAL.
void sayWhatItWaitsFor(int) {
  const char message[] = "the hung test waits for a peer that never comes\n";
  (void)!write(STDOUT_FILENO, message, sizeof(message) - 1);
}

TEST(RunnerFixture, PassesFirst) {}

// gtest's result marker then follows this output on the same line.
TEST(RunnerFixture, PrintsWithoutANewline) { std::fprintf(stderr, "no newline at the end"); }

// Listed by --gtest_list_tests, never run.
TEST(RunnerFixture, DISABLED_NeverRuns) { FAIL() << "a disabled test ran"; }

TEST(RunnerFixture, Fails) {
  if (faultsFile() != nullptr) FAIL() << "failing as asked";
}

TEST(RunnerFixture, Skips) { GTEST_SKIP() << "skipping as asked"; }

TEST(RunnerFixture, HangsWithAChild) {
  if (faultsFile() == nullptr) return;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) pause();
  }
  FILE* file = std::fopen(faultsFile(), "w");
  ASSERT_NE(file, nullptr);
  std::fprintf(file, "%d\n", static_cast<int>(child));
  std::fclose(file);
  std::signal(SIGUSR1, sayWhatItWaitsFor);
  for (;;) pause();
}

TEST(RunnerFixture, Crashes) {
  if (faultsFile() != nullptr) std::abort();
}

TEST(RunnerFixture, PassesAfterTheCrash) {}

}  // namespace
