// Memory windows (ncclCommWindowRegister, src/core/windows.h) and the direct collectives through
// them (src/exec/direct_collectives.h): each rank reads its peers' inputs and writes their outputs
// in place, in windows of ncclMemAlloc's memory mapped from the peers' files (ranks in processes)
// or at the peers' own addresses (ranks in threads). WEFT_WINDOW_MIN_BYTES=1 sends every
// AllReduce, AllGather, ReduceScatter and Broadcast in windows through them, so the product of
// types, ops, counts (shares of zero elements included) and placements is checked exactly; the
// logs prove the path taken. A Reduce in windows takes its ring, and is checked too.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/harness/async_state.h"
#include "tests/harness/comm_clique.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/harness/temp_dir.h"
#include "tests/multirank/collective_run.h"
#include "tests/multirank/window_placement.h"

namespace weft::multirank {
namespace {

namespace fs = std::filesystem;
using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

constexpr size_t kCounts[] = {1, 7, 4099, 70001};
constexpr int kMostRanks = 3;
// An AllGather's output or a ReduceScatter's input at the most ranks, of the widest type.
constexpr size_t kLargestBytes = kMostRanks * kCounts[std::size(kCounts) - 1] * sizeof(double);
constexpr uint64_t kSeed = 0x3a11d0e5ULL;

RankRunOptions windowOptions(int nranks, RankMode mode) {
  RankRunOptions options;
  options.nranks = nranks;
  options.mode = mode;
  options.env = {{"WEFT_WINDOW_MIN_BYTES", "1"}};
  options.label = "collectives in windows";
  return options;
}

// "AllGather_3ranks_threads".
std::string collectiveRanksAndModeName(const ::testing::TestParamInfo<std::tuple<Collective, int, RankMode>>& info) {
  const auto [collective, nranks, mode] = info.param;
  return std::string(collectiveName(collective)) + "_" + harness::ranksAndModeLabel(nranks, mode);
}

class WindowCollectives : public ::testing::TestWithParam<std::tuple<Collective, int, RankMode>> {};

TEST_P(WindowCollectives, EveryTypeOpCountAndPlacementMatchesTheReference) {
  const auto [collective, nranks, mode] = GetParam();
  EXPECT_TRUE(harness::runRanks(windowOptions(nranks, mode), [collective](int rank, int nranks,
                                                                          const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    WindowPlacement windows(comm, kLargestBytes);
    if (harness::rankFailed()) return;
    runEveryTypeAndOp(comm, nranks, rank, collective, kCounts, kSeed, &windows, nranks - 1);
  }));
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, WindowCollectives,
    ::testing::Combine(::testing::Values(Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                                         Collective::kBroadcast, Collective::kBcast, Collective::kReduce),
                       ::testing::Range(1, kMostRanks + 1),
                       ::testing::Values(RankMode::kProcesses, RankMode::kThreads)),
    collectiveRanksAndModeName);

// Rank r's element i of an int32 input whose sums are known.
int32_t inputOf(int rank, size_t i) { return (rank + 1) * 1000 + static_cast<int32_t>(i % 997); }

// The root of the rooted calls below: the last rank.
int rootOf(int nranks) { return nranks - 1; }

// Makes the NCCL call of `collective` (AllReduce, AllGather, ReduceScatter or Broadcast, rooted at
// rootOf: an int32 sum) on `count` elements as the API takes them, from `send` into
// `recv`, which may overlap as the API's in-place form does.
ncclResult_t callInts(Collective collective, ncclComm_t comm, int nranks, const int32_t* send, int32_t* recv,
                      size_t count) {
  switch (collective) {
    case Collective::kAllGather: return ncclAllGather(send, recv, count, ncclInt32, comm, cudaStream_t{});
    case Collective::kReduceScatter:
      return ncclReduceScatter(send, recv, count, ncclInt32, ncclSum, comm, cudaStream_t{});
    case Collective::kBroadcast:
      return ncclBroadcast(send, recv, count, ncclInt32, rootOf(nranks), comm, cudaStream_t{});
    default: return ncclAllReduce(send, recv, count, ncclInt32, ncclSum, comm, cudaStream_t{});
  }
}

// Fills this rank's input in `send` with inputOf, runs callInts and checks every element of the
// output.
void callAndCheck(Collective collective, ncclComm_t comm, int nranks, int rank, int32_t* send, int32_t* recv,
                  size_t count, const char* what) {
  const BufferLayout layout = layoutOf(collective, count, nranks, rank);
  for (size_t i = 0; i < layout.sendCount; ++i) send[i] = inputOf(rank, i);
  RANK_CHECK_NCCL(callInts(collective, comm, nranks, send, recv, count)) << what;
  for (size_t i = 0; i < layout.recvCount; ++i) {
    int32_t want = 0;
    if (collective == Collective::kAllGather) {
      want = inputOf(static_cast<int>(i / count), i % count);
    } else if (collective == Collective::kBroadcast) {
      want = inputOf(rootOf(nranks), i);
    } else {
      const size_t input = collective == Collective::kReduceScatter ? rank * count + i : i;
      for (int r = 0; r < nranks; ++r) want += inputOf(r, input);
    }
    RANK_CHECK(recv[i] == want) << collectiveName(collective) << " " << what << ": element " << i << " is "
                                << recv[i] << ", want " << want;
  }
}

// Runs callAndCheck in place: `buffer` holds the larger of the collective's buffers.
void callInPlaceAndCheck(Collective collective, ncclComm_t comm, int nranks, int rank, int32_t* buffer, size_t count,
                         const char* what) {
  const BufferLayout layout = layoutOf(collective, count, nranks, rank);
  callAndCheck(collective, comm, nranks, rank, buffer + layout.inPlaceSendOffset, buffer + layout.inPlaceRecvOffset,
               count, what);
}

// The collectives that run direct in windows.
constexpr Collective kWindowed[] = {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                                    Collective::kBroadcast};

// The processes' logs, with WEFT_WINDOW_MIN_BYTES=1000000: windows in ncclMemAlloc's memory are
// reached by every rank, and each collective that takes them, out of place and in place, reads or
// writes every peer in place where its larger buffer reaches the threshold (n times 400 KB: an
// allgather's output, a reducescatter's input, the others' one size), not below it (an allreduce
// of 400 KB). Windows in the processes' own heap cannot be mapped by the others, so they stay
// registrations and the allreduce takes the slots, still right. 13 processes pass their files in
// two rounds: a mailbox queues only about 10.
class WindowCollectivesLogs : public ::testing::TestWithParam<int> {};

TEST_P(WindowCollectivesLogs, NcclMemAllocWindowsAreReachedInPlaceAndHeapWindowsAreRegistrationsOnly) {
  const int nranks = GetParam();
  constexpr size_t kCount = 100003;  // out of place; in place, kInPlaceCount
  constexpr size_t kInPlaceCount = 90001;
  harness::TempDir dir("weft-windows-");
  ASSERT_FALSE(dir.path.empty());
  RankRunOptions options = windowOptions(nranks, RankMode::kProcesses);
  options.env = {{"WEFT_WINDOW_MIN_BYTES", "1000000"},
                 {"NCCL_DEBUG", "INFO"},
                 {"NCCL_DEBUG_SUBSYS", "REG,COLL"},
                 {"NCCL_DEBUG_FILE", (dir.path / "rank.%p").string()}};
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    const size_t windowBytes = nranks * kCount * sizeof(int32_t);  // an allgather's output, a reducescatter's input
    void* send = nullptr;
    void* recv = nullptr;
    RANK_CHECK_NCCL(ncclMemAlloc(&send, windowBytes));
    RANK_CHECK_NCCL(ncclMemAlloc(&recv, windowBytes));
    ncclWindow_t sendWindow = nullptr;
    ncclWindow_t recvWindow = nullptr;
    RANK_CHECK_NCCL(ncclCommWindowRegister(comm, send, windowBytes, &sendWindow, NCCL_WIN_COLL_SYMMETRIC));
    RANK_CHECK_NCCL(ncclCommWindowRegister(comm, recv, windowBytes, &recvWindow, NCCL_WIN_COLL_SYMMETRIC));
    auto* sendInts = static_cast<int32_t*>(send);
    auto* recvInts = static_cast<int32_t*>(recv);
    for (Collective collective : kWindowed) {
      const bool perRank = collective == Collective::kAllGather || collective == Collective::kReduceScatter;
      const size_t ranks = perRank ? 1 : nranks;
      callAndCheck(collective, comm, nranks, rank, sendInts, recvInts, ranks * kCount, "in ncclMemAlloc windows");
      callInPlaceAndCheck(collective, comm, nranks, rank, recvInts, ranks * kInPlaceCount,
                          "in place in ncclMemAlloc windows");
    }
    callAndCheck(Collective::kAllReduce, comm, nranks, rank, sendInts, recvInts, kCount, "under the threshold");
    RANK_CHECK_NCCL(ncclCommWindowDeregister(comm, sendWindow));
    RANK_CHECK_NCCL(ncclCommWindowDeregister(comm, recvWindow));
    RANK_CHECK(ncclCommWindowDeregister(comm, sendWindow) == ncclInvalidArgument)
        << "a window deregistered twice was accepted";
    RANK_CHECK_NCCL(ncclMemFree(send));
    RANK_CHECK_NCCL(ncclMemFree(recv));

    const size_t heapCount = nranks * kCount;
    std::vector<int32_t> heapSend(heapCount), heapRecv(heapCount);
    ncclWindow_t heapWindows[2] = {};
    RANK_CHECK_NCCL(ncclCommWindowRegister(comm, heapSend.data(), heapCount * 4, &heapWindows[0], NCCL_WIN_DEFAULT));
    RANK_CHECK_NCCL(ncclCommWindowRegister(comm, heapRecv.data(), heapCount * 4, &heapWindows[1], NCCL_WIN_DEFAULT));
    callAndCheck(Collective::kAllReduce, comm, nranks, rank, heapSend.data(), heapRecv.data(), heapCount,
                 "in heap windows");
    for (ncclWindow_t window : heapWindows) RANK_CHECK_NCCL(ncclCommWindowDeregister(comm, window));
  }));
  // The log line of a direct call whose larger buffer holds `elements` int32 and that reached every
  // peer in place.
  const std::string peers = std::to_string(nranks - 1);
  auto everyPeerInPlace = [&](const char* collective, size_t elements) {
    return "direct " + std::string(collective) + " of " + std::to_string(elements * sizeof(int32_t)) + " bytes: " +
           peers + " of " + peers + " peers' buffers reached in windows";
  };
  const size_t larger = nranks * kCount;
  const size_t largerInPlace = nranks * kInPlaceCount;
  int reachedInPlace = 0;
  int registrationsOnly = 0;
  int rankLogs = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir.path)) {
    const std::string log = harness::readWholeFile(entry.path());
    if (log.find("window 1:") == std::string::npos) continue;  // not a rank's (the test process's own)
    ++rankLogs;
    int found = 0;
    for (const char* collective : {"AllReduce", "AllGather", "ReduceScatter", "Broadcast"}) {
      found += log.find(everyPeerInPlace(collective, larger)) != std::string::npos;
      found += log.find(everyPeerInPlace(collective, largerInPlace)) != std::string::npos;
    }
    reachedInPlace += found == 8;
    registrationsOnly += log.find("a registration only") != std::string::npos;
    EXPECT_EQ(log.find("direct AllReduce of " + std::to_string(kCount * sizeof(int32_t)) + " bytes"),
              std::string::npos)
        << "an allreduce below WEFT_WINDOW_MIN_BYTES ran direct:\n" << log;
    EXPECT_EQ(log.find(" bytes: 0 of "), std::string::npos) << "a direct call reached no peer in place:\n" << log;
  }
  EXPECT_EQ(rankLogs, nranks);
  EXPECT_EQ(reachedInPlace, nranks) << "every rank reads or writes every peer in place in each call";
  EXPECT_EQ(registrationsOnly, nranks) << "every rank sees the heap windows as registrations only";
}

INSTANTIATE_TEST_SUITE_P(Ranks, WindowCollectivesLogs, ::testing::Values(3, 13),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "processes";
                         });

class WindowCollectiveCalls : public ::testing::TestWithParam<Collective> {};

std::string collectiveOnlyName(const ::testing::TestParamInfo<Collective>& info) {
  return collectiveName(info.param);
}

// WEFT_CHECK=1 turns buffers in windows on one rank only (which would send that rank down the
// direct path and its peer through the slots) into the same clear error on every rank.
TEST_P(WindowCollectiveCalls, BuffersInWindowsOnOneRankOnlyAreInvalidUsageOnEveryRankUnderWeftCheck) {
  const Collective collective = GetParam();
  RankRunOptions options = windowOptions(2, RankMode::kProcesses);
  options.env.push_back({"WEFT_CHECK", "1"});
  EXPECT_TRUE(harness::runRanks(options, [collective](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    const size_t count = 4099;
    const size_t larger = nranks * count;  // elements of the larger buffer
    WindowedMemory windowed(comm, 2 * larger * sizeof(int32_t));
    std::vector<int32_t> heap(2 * larger, 1);
    int32_t* buffers = rank == 0 ? windowed.ints() : heap.data();
    const ncclResult_t result = callInts(collective, comm, nranks, buffers, buffers + larger, count);
    RANK_CHECK(result == ncclInvalidUsage) << "got " << ncclGetErrorString(result);
    const std::string last = ncclGetLastError(comm);
    RANK_CHECK(last.find("in windows") != std::string::npos) << last;
  }));
}

// The same call (collective, count, type, op) first on heap buffers, then in windows: the second
// runs direct, so no rank may reuse the first's plan, even one whose call comes from another
// thread.
TEST_P(WindowCollectiveCalls, TheSameCallOnHeapBuffersThenInWindowsIsRightOnEveryRank) {
  const Collective collective = GetParam();
  EXPECT_TRUE(harness::runRanks(windowOptions(3, RankMode::kProcesses), [collective](int rank, int nranks,
                                                                                     const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    const size_t count = 100003;
    const size_t larger = nranks * count;
    std::vector<int32_t> heapSend(larger), heapRecv(larger);
    callAndCheck(collective, comm, nranks, rank, heapSend.data(), heapRecv.data(), count, "on heap buffers");
    WindowedMemory windowed(comm, 2 * larger * sizeof(int32_t));
    int32_t* send = windowed.ints();
    auto inWindows = [&] { callAndCheck(collective, comm, nranks, rank, send, send + larger, count, "in windows"); };
    if (rank == 1) {
      std::thread(inWindows).join();
    } else {
      inWindows();
    }
  }));
}

INSTANTIATE_TEST_SUITE_P(Collectives, WindowCollectiveCalls, ::testing::ValuesIn(kWindowed), collectiveOnlyName);

// Every output written with non-temporal stores (WEFT_STREAM_MIN_BYTES=1), into this rank's
// buffers and its peers' alike: the same product at 3 ranks.
class WindowCollectivesStreamed : public ::testing::TestWithParam<Collective> {};

TEST_P(WindowCollectivesStreamed, EveryTypeOpCountAndPlacementMatchesTheReference) {
  const Collective collective = GetParam();
  RankRunOptions options = windowOptions(kMostRanks, RankMode::kProcesses);
  options.env.push_back({"WEFT_STREAM_MIN_BYTES", "1"});
  EXPECT_TRUE(harness::runRanks(options, [collective](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    WindowPlacement windows(comm, kLargestBytes);
    if (harness::rankFailed()) return;
    runEveryTypeAndOp(comm, nranks, rank, collective, kCounts, kSeed, &windows, nranks - 1);
  }));
}

INSTANTIATE_TEST_SUITE_P(Collectives, WindowCollectivesStreamed, ::testing::ValuesIn(kWindowed), collectiveOnlyName);

// A broadcast's non-roots pass no input, as NCCL allows: it needs no window, and the call still
// runs direct on every rank, which WEFT_CHECK=1 agrees with.
TEST(WindowBroadcast, NonRootsInputNeedsNoWindow) {
  harness::TempDir dir("weft-windows-");
  ASSERT_FALSE(dir.path.empty());
  RankRunOptions options = windowOptions(3, RankMode::kProcesses);
  options.env.push_back({"WEFT_CHECK", "1"});
  options.env.push_back({"NCCL_DEBUG", "INFO"});
  options.env.push_back({"NCCL_DEBUG_SUBSYS", "COLL"});
  options.env.push_back({"NCCL_DEBUG_FILE", (dir.path / "rank.%p").string()});
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    const size_t count = 4099;
    const int root = rootOf(nranks);
    WindowedMemory windowed(comm, count * sizeof(int32_t));
    int32_t* buffer = windowed.ints();
    for (size_t i = 0; i < count; ++i) buffer[i] = inputOf(rank, i);
    RANK_CHECK_NCCL(ncclBroadcast(rank == root ? buffer : nullptr, buffer, count, ncclInt32, root, comm,
                                  cudaStream_t{}));
    for (size_t i = 0; i < count; ++i) {
      RANK_CHECK(buffer[i] == inputOf(root, i)) << "broadcast element " << i << " is " << buffer[i];
    }
  }));
  int direct = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir.path)) {
    const std::string log = harness::readWholeFile(entry.path());
    direct += log.find("direct Broadcast of 16396 bytes: 2 of 2") != std::string::npos;
  }
  EXPECT_EQ(direct, 3) << "every rank ran the broadcast direct";
}

// Polls a nonblocking communicator until its launch has ended, and checks that it succeeded.
void waitUntilDone(ncclComm_t comm) {
  const ncclResult_t state = harness::settledState(comm);
  RANK_CHECK(state == ncclSuccess) << ncclGetErrorString(state);
}

// On a nonblocking communicator a window registered in a group with an allreduce is part of that
// launch in the background (the communicator is busy until both end), and deregistering it waits
// for a launch that may still read it.
TEST(WindowAllReduceNonblocking, RegisterAllReduceAndDeregisterInTurn) {
  EXPECT_TRUE(harness::runRanks(windowOptions(2, RankMode::kProcesses), [](int rank, int nranks,
                                                                          const ncclUniqueId& id) {
    ScopedComm comm;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t result = ncclCommInitRankConfig(comm.out(), nranks, id, rank, &config);
    RANK_CHECK(result == ncclSuccess || result == ncclInProgress) << ncclGetErrorString(result);
    waitUntilDone(comm);
    const size_t count = 100003;
    const size_t bytes = 2 * count * sizeof(int32_t);
    void* memory = nullptr;
    RANK_CHECK_NCCL(ncclMemAlloc(&memory, bytes));
    std::vector<int32_t> heap(count, 1), heapSum(count);
    ncclWindow_t window = nullptr;
    RANK_CHECK_NCCL(ncclGroupStart());
    RANK_CHECK_NCCL(ncclAllReduce(heap.data(), heapSum.data(), count, ncclInt32, ncclSum, comm, cudaStream_t{}));
    RANK_CHECK_NCCL(ncclCommWindowRegister(comm, memory, bytes, &window, NCCL_WIN_DEFAULT));
    result = ncclGroupEnd();
    RANK_CHECK(result == ncclSuccess || result == ncclInProgress) << ncclGetErrorString(result);
    waitUntilDone(comm);
    RANK_CHECK(heapSum[0] == nranks && heapSum[count - 1] == nranks) << "the allreduce beside the registration";
    auto* send = static_cast<int32_t*>(memory);
    for (size_t i = 0; i < count; ++i) send[i] = inputOf(rank, i);
    result = ncclAllReduce(send, send + count, count, ncclInt32, ncclSum, comm, cudaStream_t{});
    RANK_CHECK(result == ncclSuccess || result == ncclInProgress) << ncclGetErrorString(result);
    RANK_CHECK_NCCL(ncclCommWindowDeregister(comm, window));  // waits for the allreduce
    waitUntilDone(comm);
    for (size_t i = 0; i < count; ++i) {
      RANK_CHECK(send[count + i] == inputOf(0, i) + inputOf(1, i)) << "element " << i << " is " << send[count + i];
    }
    RANK_CHECK_NCCL(ncclMemFree(memory));
  }));
}

// One thread registers windows for every rank of its communicators inside a group, as a
// program driving several ranks must (each registration waits for every rank), then allreduces
// in them: 3 ranks and 400 KB take the direct path, not the pair exchange.
TEST(WindowRegistration, OneThreadRegistersForEveryRankInsideAGroup) {
  constexpr int kRanks = 3;
  harness::CommClique clique;
  ASSERT_EQ(clique.initAll(kRanks), ncclSuccess);
  const size_t count = 100003;
  std::vector<std::vector<int32_t>> send(kRanks, std::vector<int32_t>(count)), recv = send;
  std::vector<ncclWindow_t> windows(2 * kRanks, nullptr);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ncclCommWindowRegister(clique[r], send[r].data(), count * 4, &windows[2 * r], NCCL_WIN_DEFAULT),
              ncclSuccess);
    ASSERT_EQ(ncclCommWindowRegister(clique[r], recv[r].data(), count * 4, &windows[2 * r + 1], NCCL_WIN_DEFAULT),
              ncclSuccess);
  }
  EXPECT_EQ(ncclCommWindowDeregister(clique[0], windows[0]), ncclInvalidUsage)
      << "a window was deregistered before the group that registers it ended";
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < count; ++i) send[r][i] = inputOf(r, i);
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ncclAllReduce(send[r].data(), recv[r].data(), count, ncclInt32, ncclSum, clique[r], cudaStream_t{}),
              ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(recv[r][i], inputOf(0, i) + inputOf(1, i) + inputOf(2, i)) << "rank " << r << " element " << i;
    }
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(ncclCommWindowDeregister(clique[r], windows[2 * r]), ncclSuccess);
    EXPECT_EQ(ncclCommWindowDeregister(clique[r], windows[2 * r + 1]), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclCommWindowDeregister(clique[1], windows[0]), ncclInvalidArgument)
      << "rank 0's window was accepted by rank 1's communicator";
}

// The resident kilobytes of every mapping of ncclMemAlloc's memory of `kilobytes` in this process's
// /proc/self/smaps.
std::vector<long> residentKilobytesOfMemAllocMappings(long kilobytes) {
  std::vector<long> resident;
  std::istringstream smaps(harness::readWholeFile("/proc/self/smaps"));
  std::string line;
  bool ours = false;
  long size = -1;
  while (std::getline(smaps, line)) {
    long value = 0;
    if (line.find("weft-memalloc") != std::string::npos) {
      ours = true;
      size = -1;
    } else if (std::sscanf(line.c_str(), "Size: %ld kB", &value) == 1) {
      size = value;
    } else if (ours && size == kilobytes && std::sscanf(line.c_str(), "Rss: %ld kB", &value) == 1) {
      resident.push_back(value);
      ours = false;
    } else if (line.find("VmFlags") == 0) {
      ours = false;
    }
  }
  return resident;
}

// A peer's window is mapped with every page present when it is registered, so that no collective
// pays its page faults (src/core/windows.cc): each process then has two mappings of 4 MiB of
// ncclMemAlloc's memory, its own (written) and its peer's, both wholly resident.
TEST(WindowRegistration, APeersWindowIsMappedWithEveryPagePresent) {
  EXPECT_TRUE(harness::runRanks(windowOptions(2, RankMode::kProcesses), [](int rank, int nranks,
                                                                          const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    constexpr size_t kBytes = size_t{4} << 20;
    void* memory = nullptr;
    RANK_CHECK_NCCL(ncclMemAlloc(&memory, kBytes));
    std::memset(memory, rank + 1, kBytes);
    ncclWindow_t window = nullptr;
    RANK_CHECK_NCCL(ncclCommWindowRegister(comm, memory, kBytes, &window, NCCL_WIN_DEFAULT));
    const std::vector<long> resident = residentKilobytesOfMemAllocMappings(kBytes >> 10);
    RANK_EXPECT(resident.size() == 2) << resident.size() << " mappings of 4 MiB of ncclMemAlloc's memory, not 2";
    for (long kilobytes : resident) {
      RANK_EXPECT(kilobytes == static_cast<long>(kBytes >> 10)) << "a mapping has " << kilobytes << " kB resident";
    }
    RANK_CHECK_NCCL(ncclCommWindowDeregister(comm, window));
    RANK_CHECK_NCCL(ncclMemFree(memory));
  }));
}

TEST(WindowRegistration, BadArgumentsAreInvalidArgumentAndTheCommunicatorStaysUsable) {
  harness::CommClique clique;
  ASSERT_EQ(clique.initAll(1), ncclSuccess);
  std::vector<int32_t> buffer(64, 1), out(64, 0);
  ncclWindow_t window = reinterpret_cast<ncclWindow_t>(&buffer);  // not null: the errors must clear it
  EXPECT_EQ(ncclCommWindowRegister(clique[0], buffer.data(), 256, nullptr, NCCL_WIN_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(ncclCommWindowRegister(clique[0], nullptr, 256, &window, NCCL_WIN_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(window, nullptr) << "a failed registration left a handle";
  EXPECT_EQ(ncclCommWindowRegister(clique[0], buffer.data(), 0, &window, NCCL_WIN_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(ncclCommWindowRegister(nullptr, buffer.data(), 256, &window, NCCL_WIN_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(ncclCommWindowDeregister(clique[0], nullptr), ncclSuccess) << "as NCCL: no window, nothing to do";
  ASSERT_EQ(ncclCommWindowRegister(clique[0], buffer.data(), 256, &window, NCCL_WIN_DEFAULT), ncclSuccess);
  ASSERT_NE(window, nullptr);
  EXPECT_EQ(ncclAllReduce(buffer.data(), out.data(), 64, ncclInt32, ncclSum, clique[0], cudaStream_t{}), ncclSuccess);
  EXPECT_EQ(out, buffer) << "one rank's allreduce copies its input";
  EXPECT_EQ(ncclCommWindowDeregister(clique[0], window), ncclSuccess);
  EXPECT_EQ(ncclCommWindowDeregister(clique[0], window), ncclInvalidArgument) << "deregistered twice";
}

}  // namespace
}  // namespace weft::multirank
