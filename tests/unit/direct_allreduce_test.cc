// The direct allreduce (src/device/direct_allreduce.h), the kernel that ranks sharing a GPU in
// one process run by default, run on the CPU: every rank's blocks at once, each block a few host
// threads (tests/unit/host_block.h), the ranks' boards in host memory. The results are compared
// exactly; calls follow each other on the same boards, as a communicator's kernels do.

#include "src/device/direct_allreduce.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/exact_inputs.h"
#include "tests/unit/host_block.h"

namespace weft::device {
namespace {

// One rank's part of a call: its buffers, count and reduction.
template <class Storage>
struct RankCall {
  const Storage* send = nullptr;
  Storage* recv = nullptr;
  uint64_t count = 0;
  Storage scalar{};  // the rank's PreMulSum multiplier
  uint64_t divisor = 1;
};

// How a call runs.
struct CallShape {
  int blocksPerRank = 2;
  uint32_t threads = 3;
  std::chrono::seconds deadline{20};
};

// Runs one call of the direct allreduce on the ranks of `calls` that `launched` says (every rank
// where it is empty), their blocks at once, on `boards` (one per rank). Returns "" or that the
// deadline passed; `noted`, if given, gets each rank's block 0's last recorded wait.
template <class Math, RedOpKind kKind>
std::string runCall(std::vector<DirectBoard>* boards, const std::vector<RankCall<typename Math::Storage>>& calls,
                    const CallShape& shape, const std::vector<bool>& launched = {},
                    std::vector<NotedWait>* noted = nullptr) {
  const int n = static_cast<int>(calls.size());
  int abortFlag = 0;
  std::vector<KernelWork> works(n);
  std::vector<Reducer<Math, kKind>> reducers(n);
  std::vector<std::unique_ptr<HostBlockState>> blocks;
  HostBlockRunner runner;
  for (int r = 0; r < n; ++r) {
    KernelWork& work = works[r];
    work.direct = {boards->data(), reinterpret_cast<const char*>(calls[r].send),
                   reinterpret_cast<char*>(calls[r].recv), calls[r].count, n, r, shape.blocksPerRank};
    work.abortFlag = &abortFlag;
    reducers[r].scalar = calls[r].scalar;
    reducers[r].divisor = calls[r].divisor;
    for (int b = 0; b < shape.blocksPerRank; ++b) {
      blocks.push_back(std::make_unique<HostBlockState>(shape.threads));
      if (!launched.empty() && !launched[r]) continue;
      runner.start(blocks.back().get(), shape.threads, [&works, &reducers, r, b](HostBlock& block) {
        runDirectAllReduce(block, works[r], static_cast<uint32_t>(b), reducers[r]);
      });
    }
  }
  const bool inTime = runner.finish(shape.deadline, &abortFlag);
  if (noted != nullptr) {
    for (int r = 0; r < n; ++r) noted->push_back(blocks[static_cast<size_t>(r) * shape.blocksPerRank]->noted());
  }
  return inTime ? "" : "the call did not end within the deadline (ended by its abort flag)";
}

// How checkSums runs its calls.
struct SumsShape {
  uint64_t offset = 0;  // the last rank's buffers start this many elements past a 16-byte boundary
  bool inPlace = false;
  int calls = 1;             // in a row, on the same boards
  bool ranksApart = false;   // each rank goes on to its next call once its own blocks are done,
                             // with the same buffers
  int span = 23;             // of the inputs (exactInput)
  CallShape call;
};

// Every rank's sum of `count` elements of Math's type, written by Codec. The last rank's buffers
// may be misaligned (the others' start on 16 bytes): then every rank's blocks go element by
// element. Calls follow each other on the same boards, every rank's at once, or each rank's as
// soon as its own previous call is done, as on a GPU where each rank has its own stream.
// (Only the first call's buffers are used where ranks go apart.)
template <class Math, class Codec = FloatCodec>
std::string checkSums(int n, uint64_t count, const SumsShape& shape) {
  using Storage = typename Math::Storage;
  std::vector<DirectBoard> boards(n);
  std::vector<std::vector<std::vector<Storage>>> send(shape.calls), recv(shape.calls);
  std::vector<std::vector<RankCall<Storage>>> calls(shape.calls);
  for (int c = 0; c < shape.calls; ++c) {
    send[c].resize(n);
    recv[c].resize(n);
    calls[c].resize(n);
    for (int r = 0; r < n; ++r) {
      const uint64_t shift = r == n - 1 ? shape.offset : 0;
      send[c][r].assign(shift + count, Storage{});
      recv[c][r].assign(shift + count, Codec::fromFloat(-100.0f));
      for (uint64_t i = 0; i < count; ++i) send[c][r][shift + i] = Codec::fromFloat(exactInput(c, r, i, shape.span));
      Storage* out = (shape.inPlace ? send[c][r].data() : recv[c][r].data()) + shift;
      calls[c][r] = {send[c][r].data() + shift, out, count};
    }
  }
  // Rank r's output of call c, against the exact sums: "" or what differs.
  const auto checkOutput = [&](int c, int r, const Storage* out) -> std::string {
    for (uint64_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int p = 0; p < n; ++p) sum += exactInput(c, p, i, shape.span);
      const Storage expected = Codec::fromFloat(sum);
      if (out[i] != expected) {
        return "call " + std::to_string(c) + ", rank " + std::to_string(r) + ", element " + std::to_string(i) + ": " +
               std::to_string(out[i]) + ", not " + std::to_string(expected);
      }
    }
    return "";
  };
  std::vector<std::string> failed(n);
  if (shape.ranksApart) {
    // Each rank reuses its first call's buffers: it writes the next input and reads its output
    // once its own blocks are done, which must be when the output is whole and the input free.
    std::vector<std::thread> ranks;
    for (int r = 0; r < n; ++r) {
      ranks.emplace_back([&, r] {
        std::vector<bool> onlyThisRank(n, false);
        onlyThisRank[r] = true;
        RankCall<Storage>& mine = calls[0][r];
        for (int c = 0; c < shape.calls && failed[r].empty(); ++c) {
          Storage* input = const_cast<Storage*>(mine.send);
          for (uint64_t i = 0; i < count; ++i) input[i] = Codec::fromFloat(exactInput(c, r, i, shape.span));
          failed[r] = runCall<Math, RedOpKind::kSum>(&boards, calls[0], shape.call, onlyThisRank);
          if (failed[r].empty()) failed[r] = checkOutput(c, r, mine.recv);
        }
      });
    }
    for (std::thread& rank : ranks) rank.join();
  } else {
    for (int c = 0; c < shape.calls && failed[0].empty(); ++c) {
      failed[0] = runCall<Math, RedOpKind::kSum>(&boards, calls[c], shape.call);
      for (int r = 0; r < n && failed[0].empty(); ++r) failed[0] = checkOutput(c, r, calls[c][r].recv);
    }
  }
  for (int r = 0; r < n; ++r) {
    if (!failed[r].empty()) return failed[r];
    if (boards[r].finished != static_cast<unsigned long long>(shape.calls)) {
      return "rank " + std::to_string(r) + " finished call " + std::to_string(boards[r].finished);
    }
  }
  return "";
}

TEST(DirectAllReduceOnHost, EveryRankGetsTheExactSumInWordsOrElements) {
  for (int n : {1, 2, 3, 4, 8}) {
    for (uint64_t count : {0, 1, 3, 4, 5, 17, 1000}) {
      for (uint64_t offset : {0, 1}) {  // 16-byte words, or one element at a time (one rank misaligned)
        for (bool inPlace : {false, true}) {
          SumsShape shape;
          shape.offset = offset;
          shape.inPlace = inPlace;
          shape.call.blocksPerRank = count % 2 == 0 ? 1 : 3;
          shape.call.threads = n > 4 ? 2 : 4;
          ASSERT_EQ(checkSums<FloatMath>(n, count, shape), "")
              << n << " ranks, " << count << " elements, offset " << offset << (inPlace ? ", in place" : "");
        }
      }
    }
  }
}

TEST(DirectAllReduceOnHost, NarrowFloatsSumExactlyInWordsOrElements) {
  for (int n : {2, 4}) {
    for (uint64_t count : {1, 8, 33, 300}) {  // 8 or 16 elements to a 16-byte word
      for (uint64_t offset : {0, 1}) {
        SumsShape shape;
        shape.offset = offset;
        shape.span = 5;
        const std::string what = std::to_string(n) + " ranks, " + std::to_string(count) + " elements, offset " +
                                 std::to_string(offset);
        ASSERT_EQ((checkSums<NarrowMath<HalfCodec>, HalfCodec>(n, count, shape)), "") << "half, " << what;
        ASSERT_EQ((checkSums<NarrowMath<Bfloat16Codec>, Bfloat16Codec>(n, count, shape)), "") << "bfloat16, " << what;
        ASSERT_EQ((checkSums<NarrowMath<Fp8Codec<__NV_E4M3>>, Fp8Codec<__NV_E4M3>>(n, count, shape)), "")
            << "fp8 e4m3, " << what;
      }
    }
  }
}

TEST(DirectAllReduceOnHost, RanksThatGoOnToTheirNextCallAtTheirOwnPaceGetEachCallsSum) {
  SumsShape shape;
  shape.calls = 20;
  shape.ranksApart = true;
  shape.call.blocksPerRank = 2;
  shape.call.threads = 2;
  for (int n : {2, 3}) ASSERT_EQ(checkSums<FloatMath>(n, 77, shape), "") << n << " ranks";
}

TEST(DirectAllReduceOnHost, CallsInARowCountOnOnTheSameBoards) {
  SumsShape shape;
  shape.calls = 5;
  ASSERT_EQ(checkSums<FloatMath>(3, 101, shape), "");
}

// An int32 call of `n` ranks over `count` elements: rank r's element i is input(r, i), its
// multiplier r + 2, the divisor `divisor`. Returns "" or the first element that is not expected(i).
template <RedOpKind kKind, class Input, class Expected>
std::string checkInt32Call(int n, uint64_t count, uint64_t divisor, const Input& input, const Expected& expected) {
  std::vector<DirectBoard> boards(n);
  std::vector<std::vector<int32_t>> send(n), recv(n);
  std::vector<RankCall<int32_t>> ranks(n);
  for (int r = 0; r < n; ++r) {
    send[r].resize(count);
    recv[r].assign(count, 0);
    for (uint64_t i = 0; i < count; ++i) send[r][i] = input(r, i);
    ranks[r] = {send[r].data(), recv[r].data(), count, static_cast<int32_t>(r + 2), divisor};
  }
  const std::string ran = runCall<IntegerMath<int32_t>, kKind>(&boards, ranks, CallShape{});
  if (!ran.empty()) return ran;
  for (int r = 0; r < n; ++r) {
    for (uint64_t i = 0; i < count; ++i) {
      if (recv[r][i] != expected(i)) {
        return "rank " + std::to_string(r) + ", element " + std::to_string(i) + ": " + std::to_string(recv[r][i]) +
               ", not " + std::to_string(expected(i));
      }
    }
  }
  return "";
}

TEST(DirectAllReduceOnHost, PreMulSumScalesEachInputByItsOwnRanksMultiplier) {
  const int n = 3;
  const auto input = [](int r, uint64_t i) { return static_cast<int32_t>(i * 1000003 + r) - 20; };
  const auto expected = [&](uint64_t i) {
    uint32_t sum = 0;  // wrapping, as the integer sum does
    for (int p = 0; p < n; ++p) sum += static_cast<uint32_t>(input(p, i)) * static_cast<uint32_t>(p + 2);
    return static_cast<int32_t>(sum);
  };
  ASSERT_EQ(checkInt32Call<RedOpKind::kPreMulSum>(n, 41, 1, input, expected), "");
}

TEST(DirectAllReduceOnHost, AnIntegerAverageDividesTheSumTruncating) {
  const int n = 4;
  const auto input = [](int r, uint64_t i) { return static_cast<int32_t>(i * 7) - 80 + r; };
  const auto expected = [&](uint64_t i) {
    int32_t sum = 0;
    for (int p = 0; p < n; ++p) sum += input(p, i);
    return sum / n;
  };
  ASSERT_EQ(checkInt32Call<RedOpKind::kSum>(n, 23, n, input, expected), "");
}

TEST(DirectAllReduceOnHost, RanksThatDisagreeOnTheCountReduceTheLeastAndOverrunNoBuffer) {
  const int n = 3;
  const uint64_t counts[n] = {30, 20, 25};
  std::vector<DirectBoard> boards(n);
  std::vector<std::vector<float>> send(n), recv(n);
  std::vector<RankCall<float>> ranks(n);
  for (int r = 0; r < n; ++r) {
    send[r].assign(counts[r], 1.0f);
    recv[r].assign(counts[r], -1.0f);
    ranks[r] = {send[r].data(), recv[r].data(), counts[r]};
  }
  ASSERT_EQ((runCall<FloatMath, RedOpKind::kSum>(&boards, ranks, CallShape{})), "");
  for (int r = 0; r < n; ++r) {
    for (uint64_t i = 0; i < counts[r]; ++i) ASSERT_EQ(recv[r][i], i < 20 ? 3.0f : -1.0f) << r << ", " << i;
  }
}

TEST(DirectAllReduceOnHost, AnAbortEndsTheWaitForARankThatNeverArrivesAndTheWaitIsRecorded) {
  const int n = 2;
  std::vector<DirectBoard> boards(n);
  std::vector<float> send(8, 1.0f), recv(8, -1.0f);
  std::vector<RankCall<float>> ranks = {{send.data(), recv.data(), 8}, {send.data(), recv.data(), 8}};
  CallShape shape;
  shape.deadline = std::chrono::seconds(1);
  std::vector<NotedWait> noted;
  EXPECT_EQ((runCall<FloatMath, RedOpKind::kSum>(&boards, ranks, shape, {true, false}, &noted)),
            "the call did not end within the deadline (ended by its abort flag)");
  ASSERT_EQ(noted.size(), 2u);
  EXPECT_EQ(noted[0].activity, core::BlockActivity::kArriving);
  EXPECT_EQ(noted[0].peer, 1);
  EXPECT_EQ(noted[0].seen, 0u);
  EXPECT_EQ(noted[0].wanted, 1u);
  EXPECT_EQ(boards[0].arrived, 1u);  // rank 0 published its call
  EXPECT_EQ(boards[0].finished, 0u);
  EXPECT_EQ(recv, std::vector<float>(8, -1.0f));  // and wrote nothing
}

TEST(DirectAllReduceOnHost, AnAbortEndsTheWaitForARankThatNeverFinishes) {
  // Rank 1 has published its buffers but runs no block: rank 0's blocks reduce their half of the
  // elements, rank 0 finishes, and its block 0 waits for rank 1 to finish until the abort.
  const int n = 2;
  const uint64_t count = 64;
  std::vector<DirectBoard> boards(n);
  std::vector<float> send0(count, 1.0f), send1(count, 2.0f), recv0(count, -1.0f), recv1(count, -1.0f);
  boards[1].sendbuff = reinterpret_cast<const char*>(send1.data());
  boards[1].recvbuff = reinterpret_cast<char*>(recv1.data());
  boards[1].count = count;
  boards[1].arrived = 1;
  std::vector<RankCall<float>> ranks = {{send0.data(), recv0.data(), count}, {send1.data(), recv1.data(), count}};
  CallShape shape;
  shape.blocksPerRank = 1;
  shape.deadline = std::chrono::seconds(1);
  std::vector<NotedWait> noted;
  EXPECT_EQ((runCall<FloatMath, RedOpKind::kSum>(&boards, ranks, shape, {true, false}, &noted)),
            "the call did not end within the deadline (ended by its abort flag)");
  ASSERT_EQ(noted.size(), 2u);
  EXPECT_EQ(noted[0].activity, core::BlockActivity::kFinishing);
  EXPECT_EQ(noted[0].peer, 1);
  EXPECT_EQ(noted[0].wanted, 1u);
  EXPECT_EQ(boards[0].finished, 1u);
  for (uint64_t i = 0; i < count; ++i) {  // rank 0's blocks wrote the first half, into both outputs
    const float expected = i < count / 2 ? 3.0f : -1.0f;
    ASSERT_EQ(recv0[i], expected) << i;
    ASSERT_EQ(recv1[i], expected) << i;
  }
}

}  // namespace
}  // namespace weft::device
