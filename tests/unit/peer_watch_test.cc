// The peer watch's death handler: each survivor's handler runs once, a grace period after the
// first death it learns of, with the error naming the dead rank; a rank that says goodbye first is
// never reported.

#include "src/core/peer_watch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/base/peer_info.h"
#include "src/core/bootstrap.h"
#include "tests/harness/scoped_env.h"

namespace weft::core {
namespace {

using Clock = std::chrono::steady_clock;

/// What one rank's handler saw, and when.
struct Deaths {
  std::mutex mutex;
  std::vector<std::string> messages;
  Clock::time_point firstAt;

  size_t count() {
    std::lock_guard<std::mutex> lock(mutex);
    return messages.size();
  }
};

class PeerWatchDeaths : public ::testing::Test {
 protected:
  /// Starts `nranks` ranks' bootstraps and watches as threads of this process; each rank's handler
  /// appends to deaths_[rank].
  void start(int nranks) {
    UniqueId id;
    ASSERT_TRUE(createUniqueId(&id).isOk());
    deaths_ = std::vector<Deaths>(nranks);
    contexts_.assign(nranks, WaitContext{});
    bootstraps_.resize(nranks);
    watches_.resize(nranks);
    std::vector<Status> statuses(nranks);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < nranks; ++rank) {
      threads.emplace_back([&, rank] {
        WaitContext& context = contexts_[rank];
        context.timeoutSeconds = 20;
        Status status = Bootstrap::create(id, rank, nranks, &context, &bootstraps_[rank]);
        std::vector<PeerInfo> mine(nranks);
        if (status.isOk()) status = describeLocalPeer(rank, &mine[rank]);
        if (status.isOk()) status = bootstraps_[rank]->allGather(mine.data(), sizeof(PeerInfo));
        if (status.isOk()) {
          Deaths* deaths = &deaths_[rank];
          status = PeerWatch::start(*bootstraps_[rank], mine, 0x5eed, context,
                                    [deaths](const Status& failure) {
                                      std::lock_guard<std::mutex> lock(deaths->mutex);
                                      if (deaths->messages.empty()) deaths->firstAt = Clock::now();
                                      deaths->messages.push_back(failure.message());
                                    },
                                    &watches_[rank]);
        }
        statuses[rank] = status;
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int rank = 0; rank < nranks; ++rank) ASSERT_TRUE(statuses[rank].isOk()) << statuses[rank].message();
  }

  /// Waits up to 10 s until `known(rank)` holds for every rank in `ranks`.
  template <class Known>
  static bool waitFor(const std::vector<int>& ranks, Known known) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    for (int rank : ranks) {
      while (!known(rank)) {
        if (Clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    return true;
  }

  void TearDown() override {
    for (auto& watch : watches_) {
      if (watch != nullptr) watch->sayGoodbye();
    }
    watches_.clear();  // before deaths_, which the handlers write
  }

  harness::ScopedEnv ifname_{"NCCL_SOCKET_IFNAME", "lo"};
  harness::ScopedEnv commId_{"NCCL_COMM_ID", nullptr};
  std::vector<Deaths> deaths_;
  std::vector<WaitContext> contexts_;  // each rank's, which its bootstrap keeps
  std::vector<std::unique_ptr<Bootstrap>> bootstraps_;
  std::vector<std::unique_ptr<PeerWatch>> watches_;
};

TEST_F(PeerWatchDeaths, EverySurvivorsHandlerRunsOnceAGraceAfterTheFirstDeath) {
  ASSERT_NO_FATAL_FAILURE(start(4));
  const Clock::time_point left = Clock::now();
  watches_[3].reset();  // rank 3 leaves without a goodbye, as after an abort or a crash
  ASSERT_TRUE(waitFor({0, 1, 2}, [&](int rank) { return deaths_[rank].count() > 0; }));
  watches_[1].reset();  // a second death, after every handler ran for the first
  ASSERT_TRUE(waitFor({0, 2}, [&](int rank) { return watches_[rank]->isDead(1); }));
  std::this_thread::sleep_for(PeerWatch::kDeathGrace + std::chrono::milliseconds(300));
  for (int rank : {0, 1, 2}) {
    std::lock_guard<std::mutex> lock(deaths_[rank].mutex);
    ASSERT_EQ(deaths_[rank].messages.size(), 1u) << "rank " << rank;
    EXPECT_NE(deaths_[rank].messages[0].find("rank 3 (host "), std::string::npos) << deaths_[rank].messages[0];
    EXPECT_GE(deaths_[rank].firstAt - left, PeerWatch::kDeathGrace) << "rank " << rank;
  }
}

TEST_F(PeerWatchDeaths, ARankThatSaysGoodbyeIsNeverReported) {
  ASSERT_NO_FATAL_FAILURE(start(3));
  watches_[2]->sayGoodbye();
  watches_[2].reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (int rank : {0, 1}) {
    EXPECT_FALSE(watches_[rank]->peerFailed()) << "rank " << rank;
    EXPECT_EQ(deaths_[rank].count(), 0u) << "rank " << rank;
  }
}

}  // namespace
}  // namespace weft::core
