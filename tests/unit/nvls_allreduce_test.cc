// The NVLS allreduce (src/device/nvls_allreduce.h) run on the CPU: every rank's blocks at once, each
// block a few host threads (tests/unit/host_block.h), and a fabric that does in host memory what
// the NVSwitches do on a multicast address: a load reduced across every rank's area, a store into
// each, an add to each rank's barrier counter. No machine here has NVLS (a team needs two GPUs on
// NVSwitches), so this is where the loop runs. The switches' own arithmetic (the PTX of
// src/device/nvls_switch.cuh) and fence.proxy.alias are the GPU's alone.

#include "src/device/nvls_allreduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "src/device/device_reduce.cuh"
#include "tests/unit/exact_inputs.h"
#include "tests/unit/host_block.h"

namespace weft::device {
namespace {

/// Each rank's memory bound to the multicast object, and an address range that stands for the
/// multicast address: never read or written, only its offsets mean something. Every barrier
/// counter starts just below 2^32 (kCounterStart), so that the barriers of every test wrap.
class HostNvlsTeam {
 public:
  static constexpr unsigned kCounterStart = 0xfffffff0u;

  HostNvlsTeam(int nranks, int blocks)
      : bytes_(nvlsTeamBytes(blocks)), multicast_(bytes_ / 16), areas_(static_cast<size_t>(nranks)) {
    for (int r = 0; r < nranks; ++r) {
      areas_[static_cast<size_t>(r)].assign(bytes_ / 16, Word16{});
      for (int b = 0; b < kMaxNvlsBlocks; ++b) {
        *arrived(r, b) = kCounterStart;
        *passed(r, b) = kCounterStart;
      }
    }
  }

  int nranks() const { return static_cast<int>(areas_.size()); }
  char* unicast(int rank) { return reinterpret_cast<char*>(areas_[static_cast<size_t>(rank)].data()); }
  char* multicast() { return reinterpret_cast<char*>(multicast_.data()); }
  /// Block `block`'s barrier counter in rank `rank`'s memory, and the barriers it has passed.
  unsigned* arrived(int rank, int block) {
    return reinterpret_cast<unsigned*>(unicast(rank) + static_cast<size_t>(block) * kNvlsControlLineBytes);
  }
  unsigned* passed(int rank, int block) {
    return reinterpret_cast<unsigned*>(unicast(rank) + kMaxNvlsBlocks * kNvlsControlLineBytes +
                                       static_cast<size_t>(block) * kNvlsControlLineBytes);
  }
  /// Rank `rank`'s byte at the offset of `multicastAddress`.
  char* alias(int rank, const char* multicastAddress) {
    const size_t offset = static_cast<size_t>(multicastAddress - multicast());
    if (offset + 16 > bytes_) __builtin_trap();  // the loop left the bound memory
    return unicast(rank) + offset;
  }

 private:
  size_t bytes_;
  std::vector<Word16> multicast_;  // Word16: 16-byte aligned, as the driver's mappings are
  std::vector<std::vector<Word16>> areas_;
};

/// The switches, in host memory: what a multicast address reaches is every rank's copy.
template <class Math, RedOpKind kKind>
class HostNvlsFabric {
 public:
  explicit HostNvlsFabric(HostNvlsTeam* team) : team_(team) {}

  Word16 loadReduce(const char* multicast) const {
    Word16 result = loadWord(team_->alias(0, multicast), 0);
    for (int r = 1; r < team_->nranks(); ++r) {
      result = combineWords<typename Math::Storage>(
          result, loadWord(team_->alias(r, multicast), 0),
          [](auto reduced, auto x) { return Combine<Math, kKind>::apply(reduced, x); });
    }
    return result;
  }
  void storeEverywhere(char* multicast, const Word16& word) const {
    for (int r = 0; r < team_->nranks(); ++r) storeWord(team_->alias(r, multicast), 0, word);
  }
  void arrive(unsigned* multicast) const {
    for (int r = 0; r < team_->nranks(); ++r) {
      std::atomic_ref<unsigned>(*reinterpret_cast<unsigned*>(team_->alias(r, reinterpret_cast<char*>(multicast))))
          .fetch_add(1, std::memory_order_release);
    }
  }
  static unsigned loadAcquire(const unsigned* unicast) {
    return std::atomic_ref<unsigned>(*const_cast<unsigned*>(unicast)).load(std::memory_order_acquire);
  }
  static void fenceAliases() {}  // host memory has one address per byte
  static Word16 loadFresh(const void* words, uint64_t index) { return loadWord(words, index); }
  static char loadFreshByte(const char* address) { return *address; }

 private:
  HostNvlsTeam* team_;
};

/// Writes integers from the exact inputs (through int64_t, so that an unsigned type wraps).
template <class T>
struct IntegerCodec {
  using Storage = T;
  static T fromFloat(float x) { return static_cast<T>(static_cast<int64_t>(x)); }
};

// How the calls run.
struct CallShape {
  int blocks = 2;
  uint32_t threads = 3;
  uint64_t misalign = 0;  // the last rank's buffers start this many bytes past a 16-byte boundary
  bool inPlace = false;
  int calls = 1;            // in a row, on the same bound memory
  bool ranksApart = false;  // each rank's blocks go on to its next call at their own pace
  int span = 23;            // of the inputs (exactInput)
  std::chrono::seconds deadline{20};
};

// One rank's buffers of one call.
struct RankBuffers {
  const char* send = nullptr;
  char* recv = nullptr;
};

// Runs calls[0], calls[1], ... (each one's buffers by rank) on the ranks that `launched` says
// (every rank where it is empty), every block of every rank at once, each block going from one
// call to the next by itself. Returns "" or that the deadline passed; `noted`, if given, gets
// each rank's block 0's last recorded wait.
template <class Math, RedOpKind kKind>
std::string runCalls(HostNvlsTeam* team, const std::vector<std::vector<RankBuffers>>& calls, uint64_t bytes,
                     const CallShape& shape, const std::vector<bool>& launched = {},
                     std::vector<NotedWait>* noted = nullptr) {
  const int n = team->nranks();
  int abortFlag = 0;
  std::vector<std::vector<KernelWork>> works(calls.size(), std::vector<KernelWork>(static_cast<size_t>(n)));
  for (size_t c = 0; c < calls.size(); ++c) {
    for (int r = 0; r < n; ++r) {
      KernelWork& work = works[c][static_cast<size_t>(r)];
      const RankBuffers& buffers = calls[c][static_cast<size_t>(r)];
      work.nvls = {team->unicast(r), team->multicast(), buffers.send, buffers.recv, bytes, n, r, shape.blocks};
      work.abortFlag = &abortFlag;
    }
  }
  std::vector<std::unique_ptr<HostBlockState>> blocks;
  const HostNvlsFabric<Math, kKind> fabric(team);
  HostBlockRunner runner;
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < shape.blocks; ++b) {
      blocks.push_back(std::make_unique<HostBlockState>(shape.threads));
      if (!launched.empty() && !launched[static_cast<size_t>(r)]) continue;
      runner.start(blocks.back().get(), shape.threads, [&works, &fabric, r, b](HostBlock& block) {
        for (const std::vector<KernelWork>& call : works) {
          runNvlsAllReduce(block, call[static_cast<size_t>(r)], static_cast<uint32_t>(b), fabric);
        }
      });
    }
  }
  const bool inTime = runner.finish(shape.deadline, &abortFlag);
  if (noted != nullptr) {
    for (int r = 0; r < n; ++r) noted->push_back(blocks[static_cast<size_t>(r) * shape.blocks]->noted());
  }
  return inTime ? "" : "the calls did not end within the deadline (ended by their abort flag)";
}

// The expected element: the inputs of every rank reduced in float (exact for these inputs), then
// written by Codec.
template <class Codec, RedOpKind kKind>
typename Codec::Storage expectedElement(int call, int nranks, uint64_t i, int span) {
  static_assert(kKind == RedOpKind::kSum || kKind == RedOpKind::kMin || kKind == RedOpKind::kMax);
  float result = exactInput(call, 0, i, span);
  for (int r = 1; r < nranks; ++r) {
    const float x = exactInput(call, r, i, span);
    if (kKind == RedOpKind::kSum) result += x;
    if (kKind == RedOpKind::kMin) result = std::min(result, x);
    if (kKind == RedOpKind::kMax) result = std::max(result, x);
  }
  return Codec::fromFloat(result);
}

// A byte the tests fill buffers with, to see what the loop wrote.
constexpr unsigned char kFill = 0x5a;

// Every rank's allreduce of `count` elements of Math's type, written by Codec, `shape.calls` calls
// in a row on one team, each with buffers of its own: "" or the first element that differs.
template <class Math, RedOpKind kKind, class Codec>
std::string checkAllReduce(int n, uint64_t count, const CallShape& shape) {
  using Storage = typename Math::Storage;
  HostNvlsTeam team(n, shape.blocks);
  const uint64_t bytes = count * sizeof(Storage);
  const auto slot = [n](int c, int r) { return static_cast<size_t>(c * n + r); };
  // Word16, so that a buffer starts on 16 bytes before its shift; one word more than it needs.
  std::vector<std::vector<Word16>> sendWords(slot(shape.calls, 0)), recvWords(slot(shape.calls, 0));
  std::vector<std::vector<RankBuffers>> calls(static_cast<size_t>(shape.calls),
                                              std::vector<RankBuffers>(static_cast<size_t>(n)));
  for (int c = 0; c < shape.calls; ++c) {
    for (int r = 0; r < n; ++r) {
      const uint64_t shift = r == n - 1 ? shape.misalign : 0;
      const size_t words = static_cast<size_t>((shift + bytes) / 16 + 1);
      for (auto* buffer : {&sendWords[slot(c, r)], &recvWords[slot(c, r)]}) {
        buffer->resize(words);
        std::memset(buffer->data(), kFill, words * 16);
      }
      char* in = reinterpret_cast<char*>(sendWords[slot(c, r)].data()) + shift;
      char* out = shape.inPlace ? in : reinterpret_cast<char*>(recvWords[slot(c, r)].data()) + shift;
      for (uint64_t i = 0; i < count; ++i) {
        const Storage x = Codec::fromFloat(exactInput(c, r, i, shape.span));
        std::memcpy(in + i * sizeof(Storage), &x, sizeof(Storage));
      }
      calls[static_cast<size_t>(c)][static_cast<size_t>(r)] = {in, out};
    }
  }
  for (int c = 0; c < shape.calls; ++c) {
    if (shape.ranksApart && c > 0) break;  // the first run made every call
    const std::vector<std::vector<RankBuffers>> run =
        shape.ranksApart ? calls : std::vector<std::vector<RankBuffers>>{calls[static_cast<size_t>(c)]};
    const std::string ran = runCalls<Math, kKind>(&team, run, bytes, shape);
    if (!ran.empty()) return "call " + std::to_string(c) + ": " + ran;
  }
  for (int c = 0; c < shape.calls; ++c) {
    for (int r = 0; r < n; ++r) {
      const char* out = calls[static_cast<size_t>(c)][static_cast<size_t>(r)].recv;
      const std::string where = "call " + std::to_string(c) + ", rank " + std::to_string(r);
      for (uint64_t i = 0; i < count; ++i) {
        Storage got;
        std::memcpy(&got, out + i * sizeof(Storage), sizeof(Storage));
        const Storage expected = expectedElement<Codec, kKind>(c, n, i, shape.span);
        if (std::memcmp(&got, &expected, sizeof(Storage)) != 0) {
          return where + ", element " + std::to_string(i) + " of " + std::to_string(count) + " differs";
        }
      }
      if (static_cast<unsigned char>(out[bytes]) != kFill) return where + ": the byte after the output was written";
    }
  }
  return "";
}

TEST(NvlsAllReduceOnHost, EveryRankGetsTheExactSumInOneOrManyRounds) {
  for (int n : {2, 3, 4}) {
    // 1 and 5 floats: less than a word, and blocks or ranks with nothing to do; 1000: one piece
    // per block; 200001 (800004 bytes): pieces of 256 KiB dealt to 2 blocks over 2 rounds, the
    // last one short and ending in a byte tail.
    for (uint64_t count : {1, 5, 1000, 200001}) {
      for (bool inPlace : {false, true}) {
        CallShape shape;
        shape.inPlace = inPlace;
        shape.blocks = count > 1000 ? 2 : 1 + static_cast<int>(count % 3);
        ASSERT_EQ((checkAllReduce<FloatMath, RedOpKind::kSum, FloatCodec>(n, count, shape)), "")
            << n << " ranks, " << count << " floats" << (inPlace ? ", in place" : "");
      }
    }
  }
}

TEST(NvlsAllReduceOnHost, BuffersOffA16ByteBoundaryAreCopiedByteByByte) {
  for (uint64_t misalign : {4, 8, 12}) {
    CallShape shape;
    shape.misalign = misalign;
    ASSERT_EQ((checkAllReduce<FloatMath, RedOpKind::kSum, FloatCodec>(3, 777, shape)), "") << misalign << " bytes off";
  }
}

// The loop moves 16-byte words whatever the type: elements of 2, 4 and 8 bytes, summed, and the
// least and the greatest of them. (The switches' own arithmetic is the GPU's: nvls_switch.cuh.)
TEST(NvlsAllReduceOnHost, ElementsOfEveryWidthSummedOrTheirLeastOrGreatest) {
  CallShape shape;
  shape.span = 5;  // exact in half and bfloat16 at 4 ranks
  const uint64_t count = 333;
  EXPECT_EQ((checkAllReduce<DoubleMath, RedOpKind::kSum, FloatCodec>(4, count, shape)), "") << "double sum";
  EXPECT_EQ((checkAllReduce<NarrowMath<HalfCodec>, RedOpKind::kSum, HalfCodec>(4, count, shape)), "") << "half sum";
  EXPECT_EQ((checkAllReduce<NarrowMath<HalfCodec>, RedOpKind::kMin, HalfCodec>(4, count, shape)), "") << "half min";
  EXPECT_EQ((checkAllReduce<NarrowMath<Bfloat16Codec>, RedOpKind::kMax, Bfloat16Codec>(4, count, shape)), "")
      << "bfloat16 max";
  EXPECT_EQ((checkAllReduce<IntegerMath<int32_t>, RedOpKind::kMin, IntegerCodec<int32_t>>(4, count, shape)), "")
      << "int32 min";
  EXPECT_EQ((checkAllReduce<IntegerMath<int64_t>, RedOpKind::kMax, IntegerCodec<int64_t>>(4, count, shape)), "")
      << "int64 max";
  EXPECT_EQ((checkAllReduce<IntegerMath<uint32_t>, RedOpKind::kSum, IntegerCodec<uint32_t>>(4, count, shape)), "")
      << "uint32 sum";
  EXPECT_EQ((checkAllReduce<IntegerMath<uint64_t>, RedOpKind::kSum, IntegerCodec<uint64_t>>(4, count, shape)), "")
      << "uint64 sum";
}

// The barriers passed stay in the bound memory: later calls (as later launches or a graph's
// replays) go on from there, whether the calls are joined or each rank goes on at its own pace.
TEST(NvlsAllReduceOnHost, CallsInARowGoOnFromTheBarriersPassed) {
  for (bool ranksApart : {false, true}) {
    CallShape shape;
    shape.calls = 6;
    shape.blocks = 3;
    shape.threads = 2;
    shape.ranksApart = ranksApart;
    ASSERT_EQ((checkAllReduce<FloatMath, RedOpKind::kSum, FloatCodec>(3, 300001, shape)), "")
        << (ranksApart ? "ranks apart" : "calls joined");
  }
}

TEST(NvlsAllReduceOnHost, AnAbortEndsTheWaitAtTheBarrierForARankThatNeverCameAndTheWaitIsRecorded) {
  const int n = 3;
  HostNvlsTeam team(n, 1);
  std::vector<std::vector<Word16>> buffers(n, std::vector<Word16>(4));
  std::vector<RankBuffers> call;
  for (auto& buffer : buffers) call.push_back({reinterpret_cast<const char*>(buffer.data()),
                                               reinterpret_cast<char*>(buffer.data())});
  CallShape shape;
  shape.blocks = 1;
  shape.deadline = std::chrono::seconds(1);
  std::vector<NotedWait> noted;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE((runCalls<FloatMath, RedOpKind::kSum>(&team, {call}, 64, shape, {true, true, false}, &noted)), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(noted[static_cast<size_t>(r)].activity, core::BlockActivity::kAtBarrier) << "rank " << r;
    EXPECT_EQ(noted[static_cast<size_t>(r)].seen, HostNvlsTeam::kCounterStart + 2) << "rank " << r;  // 2 arrived
    EXPECT_EQ(noted[static_cast<size_t>(r)].wanted, HostNvlsTeam::kCounterStart + 3) << "rank " << r;
    EXPECT_EQ(*team.passed(r, 0), HostNvlsTeam::kCounterStart) << "rank " << r << " passed no barrier";
  }
}

}  // namespace
}  // namespace weft::device
