// ncclCommAbort from another thread: a call stuck in a collective (its peer never joins) returns
// an error promptly, and the communicator's resources are released only after it has left.

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <vector>

#include "nccl.h"
#include <cstring>

#include "tests/harness/deadline_guard.h"
#include "tests/harness/scoped_env.h"

namespace weft::multirank {
namespace {

using harness::DeadlineGuard;
using harness::ScopedEnv;

TEST(Abort, UnblocksACallStuckInACollective) {
  DeadlineGuard guard(std::chrono::seconds(60), "Abort.UnblocksACallStuckInACollective");
  ncclComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  std::vector<float> send(4099, 1.0f), recv(4099, 0.0f);

  // Rank 1 never calls, so rank 0's allreduce waits for it until the abort.
  auto stuck = std::async(std::launch::async, [&] {
    return ncclAllReduce(send.data(), recv.data(), send.size(), ncclFloat, ncclSum, comms[0], nullptr);
  });
  ASSERT_EQ(stuck.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "the allreduce finished although rank 1 never called it";

  auto abortStart = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  ASSERT_EQ(stuck.wait_for(std::chrono::seconds(1)), std::future_status::ready)
      << "the stuck call did not return within a second of ncclCommAbort";
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - abortStart).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_NE(stuck.get(), ncclSuccess);

  // The aborted handle is refused cleanly; the other rank can still be destroyed.
  int count = 0;
  EXPECT_EQ(ncclCommCount(comms[0], &count), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
}

TEST(FailedCommunicator, RefusesFurtherCallsUntilAborted) {
  DeadlineGuard guard(std::chrono::seconds(60), "FailedCommunicator.RefusesFurtherCallsUntilAborted");
  ScopedEnv timeout(std::vector<harness::EnvVar>{{"WEFT_TIMEOUT", "1"}});
  ncclComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  std::vector<float> send(4099, 1.0f), recv(4099, 0.0f);

  // Rank 1 never calls: after WEFT_TIMEOUT seconds without progress, rank 0's call fails.
  ncclResult_t first = ncclAllReduce(send.data(), recv.data(), send.size(), ncclFloat, ncclSum, comms[0], nullptr);
  EXPECT_EQ(first, ncclRemoteError) << ncclGetLastError(nullptr);
  ncclResult_t asyncError = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comms[0], &asyncError), ncclSuccess);
  EXPECT_EQ(asyncError, ncclRemoteError);

  // Its connections may hold that operation's data: the next call is refused, not run.
  ncclResult_t second = ncclAllReduce(send.data(), recv.data(), send.size(), ncclFloat, ncclSum, comms[0], nullptr);
  EXPECT_EQ(second, ncclRemoteError);
  EXPECT_NE(strstr(ncclGetLastError(nullptr), "earlier operation"), nullptr) << ncclGetLastError(nullptr);

  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(comms[1]), ncclSuccess);
}

}  // namespace
}  // namespace weft::multirank
