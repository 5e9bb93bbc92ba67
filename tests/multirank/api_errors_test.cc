// Bad input through the public API: every call below must be rejected with the documented result,
// leave a message for ncclGetLastError, and leave the communicator usable (a correct allreduce
// follows each one). Calls on a destroyed communicator are not tested: the handle dangles.

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/multirank/transport_env.h"

// The host functions of NCCL's device API, which nccl_device/*.h declares (those headers need
// CUDA's compiler): declared here as they are there, as a program built against them calls them.
extern "C" {
struct ncclDevComm;
struct ncclDevCommRequirements;
struct ncclDevResourceRequirements;
struct ncclTeam {
  int nRanks, rank, stride;
};
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements* reqs, ncclDevComm* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm* devComm);
ncclTeam ncclTeamWorld(ncclComm_t comm);
ncclTeam ncclTeamLsa(ncclComm_t comm);
ncclTeam ncclTeamRail(ncclComm_t comm);
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam team, int rank);
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize);
ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam team, int nBarriers, struct ncclLsaBarrierHandle* outHandle,
                                             ncclDevResourceRequirements* outReq);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, struct ncclLLA2AHandle* outHandle,
                                        ncclDevResourceRequirements* outReq);
}

namespace weft::multirank {
namespace {

using harness::describeResult;
using harness::RankRunOptions;
using harness::ScopedComm;

constexpr int kRanks = 2;
constexpr size_t kElements = 16;  // per rank; buffers hold kElements * nranks

struct CallContext {
  ncclComm_t comm;
  int rank;
  int nranks;
  float* send;
  float* recv;
};

struct BadCall {
  std::string what;
  ncclResult_t expected;
  std::function<ncclResult_t(const CallContext&)> call;
};

// A correct allreduce: proves that the communicator still works after `after`.
void checkAllReduceWorks(ncclComm_t comm, int nranks, int rank, const std::string& after) {
  std::vector<int32_t> send(kElements);
  std::vector<int32_t> recv(kElements, -1);
  for (size_t i = 0; i < kElements; ++i) send[i] = (rank + 1) * static_cast<int32_t>(i + 1);
  RANK_CHECK_NCCL(ncclAllReduce(send.data(), recv.data(), kElements, ncclInt32, ncclSum, comm,
                                cudaStream_t{}))
      << "in the allreduce after " << after;
  const int32_t rankSum = nranks * (nranks + 1) / 2;
  for (size_t i = 0; i < kElements; ++i) {
    RANK_CHECK(recv[i] == rankSum * static_cast<int32_t>(i + 1))
        << "allreduce after " << after << ": element " << i << " is " << recv[i] << ", want "
        << rankSum * static_cast<int32_t>(i + 1);
  }
}

void expectRejected(const CallContext& context, const BadCall& bad) {
  const ncclResult_t result = bad.call(context);
  RANK_CHECK(result == bad.expected) << bad.what << " returned " << describeResult(result)
                                     << ", want " << describeResult(bad.expected);
  const char* last = ncclGetLastError(context.comm);
  RANK_CHECK(last != nullptr && *last != '\0')
      << "ncclGetLastError is empty after " << bad.what << " failed";
  checkAllReduceWorks(context.comm, context.nranks, context.rank, bad.what);
}

// Runs every call of `calls` on each of kRanks ranks (the same sequence on every rank, so that
// the checking allreduces match up).
::testing::AssertionResult runBadCalls(const std::string& label, const std::vector<BadCall>& calls) {
  RankRunOptions options;
  options.nranks = kRanks;
  options.env = transportEnv(Transport::kShm);
  options.label = label;
  return harness::runRanks(options, [&calls](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    std::vector<float> send(kElements * nranks, 1.0f);
    std::vector<float> recv(kElements * nranks, 0.0f);
    const CallContext context{comm, rank, nranks, send.data(), recv.data()};
    checkAllReduceWorks(comm, nranks, rank, "init");
    for (const BadCall& bad : calls) {
      expectRejected(context, bad);
      if (harness::rankFailed()) return;
    }
  });
}

// Values outside an enum's range (such as -1) cannot be made with a cast without undefined
// behaviour; a C caller can pass them, so copy the bits.
template <typename Enum>
Enum outOfRange(int value) {
  static_assert(sizeof(Enum) == sizeof(int));
  Enum result;
  std::memcpy(&result, &value, sizeof(result));
  return result;
}
ncclDataType_t badType(int value) { return outOfRange<ncclDataType_t>(value); }
ncclRedOp_t badOp(int value) { return outOfRange<ncclRedOp_t>(value); }

const cudaStream_t kStream{};

TEST(ApiErrors, NullCommunicatorIsInvalidArgument) {
  int value = 0;
  const std::vector<BadCall> calls = {
      {"ncclAllReduce on a null comm", ncclInvalidArgument,
       [](const CallContext& c) {
         return ncclAllReduce(c.send, c.recv, kElements, ncclFloat, ncclSum, nullptr, kStream);
       }},
      {"ncclBroadcast on a null comm", ncclInvalidArgument,
       [](const CallContext& c) {
         return ncclBroadcast(c.send, c.recv, kElements, ncclFloat, 0, nullptr, kStream);
       }},
      {"ncclSend on a null comm", ncclInvalidArgument,
       [](const CallContext& c) { return ncclSend(c.send, kElements, ncclFloat, 0, nullptr, kStream); }},
      {"ncclRecv on a null comm", ncclInvalidArgument,
       [](const CallContext& c) { return ncclRecv(c.recv, kElements, ncclFloat, 0, nullptr, kStream); }},
      {"ncclCommCount on a null comm", ncclInvalidArgument,
       [&value](const CallContext&) { return ncclCommCount(nullptr, &value); }},
      {"ncclCommUserRank on a null comm", ncclInvalidArgument,
       [&value](const CallContext&) { return ncclCommUserRank(nullptr, &value); }},
      {"ncclCommInitRank into a null comm pointer", ncclInvalidArgument,
       [](const CallContext&) {
         ncclUniqueId id{};
         return ncclCommInitRank(nullptr, 1, id, 0);
       }},
  };
  EXPECT_TRUE(runBadCalls("null communicator", calls));
}

TEST(ApiErrors, NullBufferWithElementsIsInvalidArgument) {
  // Only calls that read or write the buffer on every rank: a non-root's Broadcast send buffer
  // may legitimately be null.
  const std::vector<BadCall> calls = {
      {"ncclAllReduce with a null send buffer", ncclInvalidArgument,
       [](const CallContext& c) {
         return ncclAllReduce(nullptr, c.recv, kElements, ncclFloat, ncclSum, c.comm, kStream);
       }},
      {"ncclAllReduce with a null receive buffer", ncclInvalidArgument,
       [](const CallContext& c) {
         return ncclAllReduce(c.send, nullptr, kElements, ncclFloat, ncclSum, c.comm, kStream);
       }},
      {"ncclAllGather with a null send buffer", ncclInvalidArgument,
       [](const CallContext& c) { return ncclAllGather(nullptr, c.recv, kElements, ncclFloat, c.comm, kStream); }},
      {"ncclReduceScatter with a null receive buffer", ncclInvalidArgument,
       [](const CallContext& c) {
         return ncclReduceScatter(c.send, nullptr, kElements, ncclFloat, ncclSum, c.comm, kStream);
       }},
      {"ncclAlltoAll with a null send buffer", ncclInvalidArgument,
       [](const CallContext& c) { return ncclAlltoAll(nullptr, c.recv, kElements, ncclFloat, c.comm, kStream); }},
      {"ncclReduce with a null send buffer", ncclInvalidArgument,
       [](const CallContext& c) {
         return ncclReduce(nullptr, c.recv, kElements, ncclFloat, ncclSum, 0, c.comm, kStream);
       }},
      {"ncclGather with a null send buffer", ncclInvalidArgument,
       [](const CallContext& c) { return ncclGather(nullptr, c.recv, kElements, ncclFloat, 0, c.comm, kStream); }},
      {"ncclSend of a null buffer", ncclInvalidArgument,
       [](const CallContext& c) {
         return ncclSend(nullptr, kElements, ncclFloat, (c.rank + 1) % c.nranks, c.comm, kStream);
       }},
      {"ncclRecv into a null buffer", ncclInvalidArgument,
       [](const CallContext& c) {
         return ncclRecv(nullptr, kElements, ncclFloat, (c.rank + 1) % c.nranks, c.comm, kStream);
       }},
  };
  EXPECT_TRUE(runBadCalls("null buffers", calls));
}

TEST(ApiErrors, UnknownDatatypeIsInvalidArgument) {
  std::vector<BadCall> calls;
  for (int type : {static_cast<int>(ncclNumTypes), -1}) {
    const std::string suffix = " with datatype " + std::to_string(type);
    calls.push_back({"ncclAllReduce" + suffix, ncclInvalidArgument, [type](const CallContext& c) {
                       return ncclAllReduce(c.send, c.recv, kElements, badType(type), ncclSum, c.comm, kStream);
                     }});
    calls.push_back({"ncclBroadcast" + suffix, ncclInvalidArgument, [type](const CallContext& c) {
                       return ncclBroadcast(c.send, c.recv, kElements, badType(type), 0, c.comm, kStream);
                     }});
    calls.push_back({"ncclAllGather" + suffix, ncclInvalidArgument, [type](const CallContext& c) {
                       return ncclAllGather(c.send, c.recv, kElements, badType(type), c.comm, kStream);
                     }});
    calls.push_back({"ncclSend" + suffix, ncclInvalidArgument, [type](const CallContext& c) {
                       return ncclSend(c.send, kElements, badType(type), (c.rank + 1) % c.nranks, c.comm, kStream);
                     }});
    calls.push_back({"ncclRedOpCreatePreMulSum" + suffix, ncclInvalidArgument, [type](const CallContext& c) {
                       ncclRedOp_t op;
                       double scalar = 2.0;
                       return ncclRedOpCreatePreMulSum(&op, &scalar, badType(type), ncclScalarHostImmediate, c.comm);
                     }});
  }
  EXPECT_TRUE(runBadCalls("unknown datatypes", calls));
}

TEST(ApiErrors, OpNotCreatedIsInvalidArgument) {
  const std::vector<BadCall> calls = {
      {"ncclAllReduce with op 5, never created", ncclInvalidArgument,
       [](const CallContext& c) {
         return ncclAllReduce(c.send, c.recv, kElements, ncclFloat, badOp(ncclNumOps), c.comm, kStream);
       }},
      {"ncclReduce with op -1", ncclInvalidArgument,
       [](const CallContext& c) {
         return ncclReduce(c.send, c.recv, kElements, ncclFloat, badOp(-1), 0, c.comm, kStream);
       }},
      {"ncclAllReduce with a PreMulSum op already destroyed", ncclInvalidArgument,
       [](const CallContext& c) {
         ncclRedOp_t op;
         float scalar = 2.0f;
         ncclResult_t made = ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, c.comm);
         if (made != ncclSuccess) return made == ncclInvalidArgument ? ncclInternalError : made;
         ncclResult_t destroyed = ncclRedOpDestroy(op, c.comm);
         if (destroyed != ncclSuccess) return destroyed == ncclInvalidArgument ? ncclInternalError : destroyed;
         return ncclAllReduce(c.send, c.recv, kElements, ncclFloat, op, c.comm, kStream);
       }},
      {"ncclAllReduce of int32 with a PreMulSum op made for float32", ncclInvalidArgument,
       [](const CallContext& c) {
         ncclRedOp_t op;
         float scalar = 2.0f;
         ncclResult_t made = ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, c.comm);
         if (made != ncclSuccess) return made == ncclInvalidArgument ? ncclInternalError : made;
         ncclResult_t result = ncclAllReduce(c.send, c.recv, kElements, ncclInt32, op, c.comm, kStream);
         ncclResult_t destroyed = ncclRedOpDestroy(op, c.comm);
         return destroyed != ncclSuccess && result == ncclInvalidArgument ? ncclInternalError : result;
       }},
      {"ncclRedOpDestroy of the built-in ncclSum", ncclInvalidArgument,
       [](const CallContext& c) { return ncclRedOpDestroy(ncclSum, c.comm); }},
  };
  EXPECT_TRUE(runBadCalls("reduction ops", calls));
}

TEST(ApiErrors, RootOrPeerOutOfRangeIsInvalidArgument) {
  std::vector<BadCall> calls;
  for (bool negative : {true, false}) {
    // -1, or nranks (one past the last rank); the context knows nranks only inside the ranks.
    auto pick = [negative](const CallContext& c) { return negative ? -1 : c.nranks; };
    const std::string which = negative ? " -1" : " nranks";
    calls.push_back({"ncclBroadcast with root" + which, ncclInvalidArgument, [pick](const CallContext& c) {
                       return ncclBroadcast(c.send, c.recv, kElements, ncclFloat, pick(c), c.comm, kStream);
                     }});
    calls.push_back({"ncclBcast with root" + which, ncclInvalidArgument, [pick](const CallContext& c) {
                       return ncclBcast(c.recv, kElements, ncclFloat, pick(c), c.comm, kStream);
                     }});
    calls.push_back({"ncclReduce with root" + which, ncclInvalidArgument, [pick](const CallContext& c) {
                       return ncclReduce(c.send, c.recv, kElements, ncclFloat, ncclSum, pick(c), c.comm, kStream);
                     }});
    calls.push_back({"ncclGather with root" + which, ncclInvalidArgument, [pick](const CallContext& c) {
                       return ncclGather(c.send, c.recv, kElements, ncclFloat, pick(c), c.comm, kStream);
                     }});
    calls.push_back({"ncclScatter with root" + which, ncclInvalidArgument, [pick](const CallContext& c) {
                       return ncclScatter(c.send, c.recv, kElements, ncclFloat, pick(c), c.comm, kStream);
                     }});
    calls.push_back({"ncclSend to peer" + which, ncclInvalidArgument, [pick](const CallContext& c) {
                       return ncclSend(c.send, kElements, ncclFloat, pick(c), c.comm, kStream);
                     }});
    calls.push_back({"ncclRecv from peer" + which, ncclInvalidArgument, [pick](const CallContext& c) {
                       return ncclRecv(c.recv, kElements, ncclFloat, pick(c), c.comm, kStream);
                     }});
  }
  EXPECT_TRUE(runBadCalls("roots and peers", calls));
}

TEST(ApiErrors, ByteSizeOverflowIsInvalidArgument) {
  // count * sizeof(float) wraps around size_t; for the gathers only count * nranks * 4 does.
  const size_t wrapsAlone = SIZE_MAX / sizeof(float) + 1;
  const std::vector<BadCall> calls = {
      {"ncclAllReduce of SIZE_MAX/4+1 floats", ncclInvalidArgument,
       [wrapsAlone](const CallContext& c) {
         return ncclAllReduce(c.send, c.recv, wrapsAlone, ncclFloat, ncclSum, c.comm, kStream);
       }},
      {"ncclBroadcast of SIZE_MAX/4+1 floats", ncclInvalidArgument,
       [wrapsAlone](const CallContext& c) {
         return ncclBroadcast(c.send, c.recv, wrapsAlone, ncclFloat, 0, c.comm, kStream);
       }},
      {"ncclSend of SIZE_MAX/4+1 floats", ncclInvalidArgument,
       [wrapsAlone](const CallContext& c) {
         return ncclSend(c.send, wrapsAlone, ncclFloat, (c.rank + 1) % c.nranks, c.comm, kStream);
       }},
      {"ncclAllGather whose receive size (count * nranks * 4) wraps", ncclInvalidArgument,
       [](const CallContext& c) {
         const size_t count = SIZE_MAX / (sizeof(float) * c.nranks) + 1;
         return ncclAllGather(c.send, c.recv, count, ncclFloat, c.comm, kStream);
       }},
      {"ncclReduceScatter whose send size (count * nranks * 4) wraps", ncclInvalidArgument,
       [](const CallContext& c) {
         const size_t count = SIZE_MAX / (sizeof(float) * c.nranks) + 1;
         return ncclReduceScatter(c.send, c.recv, count, ncclFloat, ncclSum, c.comm, kStream);
       }},
      {"ncclAlltoAll whose buffer size (count * nranks * 4) wraps", ncclInvalidArgument,
       [](const CallContext& c) {
         const size_t count = SIZE_MAX / (sizeof(float) * c.nranks) + 1;
         return ncclAlltoAll(c.send, c.recv, count, ncclFloat, c.comm, kStream);
       }},
  };
  EXPECT_TRUE(runBadCalls("size overflow", calls));
}

TEST(ApiErrors, BadInitArgumentsAreInvalidArgument) {
  // Each call makes its own one-rank id: a rejected init must not disturb the test's communicator.
  auto initWith = [](ncclConfig_t config) {
    return [config](const CallContext&) mutable {
      ncclUniqueId id{};
      ncclResult_t made = ncclGetUniqueId(&id);
      if (made != ncclSuccess) return made == ncclInvalidArgument ? ncclInternalError : made;
      ncclComm_t comm = nullptr;
      ncclResult_t result = ncclCommInitRankConfig(&comm, 1, id, 0, &config);
      if (result == ncclSuccess && comm != nullptr) (void)ncclCommDestroy(comm);
      return result;
    };
  };
  ncclConfig_t zeroed;
  std::memset(&zeroed, 0, sizeof(zeroed));
  ncclConfig_t badMagic = NCCL_CONFIG_INITIALIZER;
  badMagic.magic = 0x12345678;
  ncclConfig_t noCtas = NCCL_CONFIG_INITIALIZER;
  noCtas.minCTAs = 0;
  ncclConfig_t crossedCtas = NCCL_CONFIG_INITIALIZER;
  crossedCtas.minCTAs = 8;
  crossedCtas.maxCTAs = 2;
  ncclConfig_t noNvlsCtas = NCCL_CONFIG_INITIALIZER;
  noNvlsCtas.nvlsCTAs = -3;
  const std::vector<BadCall> calls = {
      {"ncclCommInitRankConfig with a zeroed ncclConfig_t (no NCCL_CONFIG_INITIALIZER)",
       ncclInvalidArgument, initWith(zeroed)},
      {"ncclCommInitRankConfig with a wrong config magic", ncclInvalidArgument, initWith(badMagic)},
      {"ncclCommInitRankConfig with minCTAs 0", ncclInvalidArgument, initWith(noCtas)},
      {"ncclCommInitRankConfig with minCTAs 8 above maxCTAs 2", ncclInvalidArgument, initWith(crossedCtas)},
      {"ncclCommInitRankConfig with nvlsCTAs -3", ncclInvalidArgument, initWith(noNvlsCtas)},
      {"ncclCommInitRank with rank 5 of 2", ncclInvalidArgument,
       [](const CallContext&) {
         ncclUniqueId id{};
         ncclComm_t comm = nullptr;
         return ncclCommInitRank(&comm, 2, id, 5);
       }},
      {"ncclCommInitRank with nranks 0", ncclInvalidArgument,
       [](const CallContext&) {
         ncclUniqueId id{};
         ncclComm_t comm = nullptr;
         return ncclCommInitRank(&comm, 0, id, 0);
       }},
      {"ncclCommInitAll with device -1 in devlist", ncclInvalidArgument,
       [](const CallContext&) {
         ncclComm_t comms[2] = {nullptr, nullptr};
         const int devlist[2] = {0, -1};
         const ncclResult_t result = ncclCommInitAll(comms, 2, devlist);
         for (ncclComm_t comm : comms) {
           if (comm != nullptr) (void)ncclCommDestroy(comm);
         }
         return result;
       }},
  };
  EXPECT_TRUE(runBadCalls("init arguments", calls));
}

TEST(ApiErrors, QueriesAnswerAndRejectNullOutputs) {
  RankRunOptions options;
  options.nranks = 3;
  options.env = transportEnv(Transport::kShm);
  options.label = "communicator queries";
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    int count = -1;
    int userRank = -1;
    int device = -12345;
    RANK_CHECK_NCCL(ncclCommCount(comm, &count));
    RANK_CHECK(count == nranks) << "ncclCommCount gave " << count << ", want " << nranks;
    RANK_CHECK_NCCL(ncclCommUserRank(comm, &userRank));
    RANK_CHECK(userRank == rank) << "ncclCommUserRank gave " << userRank << ", want " << rank;
    RANK_CHECK_NCCL(ncclCommCuDevice(comm, &device));
    RANK_CHECK(device != -12345) << "ncclCommCuDevice succeeded without writing the device";
    ncclResult_t asyncError = ncclInProgress;
    RANK_CHECK_NCCL(ncclCommGetAsyncError(comm, &asyncError));
    RANK_CHECK(asyncError == ncclSuccess) << "async error " << describeResult(asyncError) << " on a healthy comm";
    const std::pair<const char*, ncclResult_t> nullOutputs[] = {
        {"ncclCommCount(comm, NULL)", ncclCommCount(comm, nullptr)},
        {"ncclCommUserRank(comm, NULL)", ncclCommUserRank(comm, nullptr)},
        {"ncclCommCuDevice(comm, NULL)", ncclCommCuDevice(comm, nullptr)},
        {"ncclCommGetAsyncError(comm, NULL)", ncclCommGetAsyncError(comm, nullptr)},
    };
    for (const auto& [what, result] : nullOutputs) {
      RANK_CHECK(result == ncclInvalidArgument) << what << " returned " << describeResult(result);
    }
    checkAllReduceWorks(comm, nranks, rank, "the queries");
  }));
}

// Ranks over shm whose NCCL_ALGO=tree leaves an allgather no algorithm on host memory.
RankRunOptions treeOnly() {
  RankRunOptions options;
  options.nranks = kRanks;
  options.env = transportEnv(Transport::kShm);
  options.env.push_back({"NCCL_ALGO", "tree"});
  return options;
}

// An allgather under NCCL_ALGO=tree: every rank is refused before anything starts, and the
// communicator goes on (the tree allreduce runs).
TEST(ApiErrors, ACollectiveThatNcclAlgoLeavesNothingIsRefusedAndTheCommunicatorGoesOn) {
  RankRunOptions options = treeOnly();
  options.label = "NCCL_ALGO leaves nothing";
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    std::vector<float> send(kElements, 1.0f);
    std::vector<float> recv(kElements * static_cast<size_t>(nranks));
    const ncclResult_t result = ncclAllGather(send.data(), recv.data(), kElements, ncclFloat, comm, cudaStream_t{});
    RANK_CHECK(result == ncclInvalidUsage) << "the allgather returned " << describeResult(result);
    const char* last = ncclGetLastError(comm);
    RANK_CHECK(last != nullptr && std::strstr(last, "NCCL_ALGO") != nullptr)
        << "ncclGetLastError should name NCCL_ALGO; it says \"" << (last == nullptr ? "(null)" : last) << "\"";
    ncclResult_t asyncError = ncclInternalError;
    RANK_CHECK_NCCL(ncclCommGetAsyncError(comm, &asyncError));
    RANK_CHECK(asyncError == ncclSuccess) << "async error " << describeResult(asyncError) << " after the refusal";
    checkAllReduceWorks(comm, nranks, rank, "the refused allgather");
  }));
}

// In a group of several, the same refusal ends the communicator: a peer that groups its calls
// otherwise may already wait in the allreduce.
TEST(ApiErrors, ACollectiveThatNcclAlgoLeavesNothingEndsItsGroupsCommunicators) {
  RankRunOptions options = treeOnly();
  options.label = "NCCL_ALGO leaves a grouped call nothing";
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    std::vector<float> send(kElements, 1.0f);
    std::vector<float> recv(kElements * static_cast<size_t>(nranks));
    RANK_CHECK_NCCL(ncclGroupStart());
    (void)ncclAllReduce(send.data(), recv.data(), kElements, ncclFloat, ncclSum, comm, cudaStream_t{});
    (void)ncclAllGather(send.data(), recv.data(), kElements, ncclFloat, comm, cudaStream_t{});
    const ncclResult_t result = ncclGroupEnd();
    RANK_CHECK(result == ncclInvalidUsage) << "the group returned " << describeResult(result);
    ncclResult_t asyncError = ncclSuccess;
    RANK_CHECK_NCCL(ncclCommGetAsyncError(comm, &asyncError));
    RANK_CHECK(asyncError != ncclSuccess) << "no async error after a group refused in part";
  }));
}

// WEFT_CHECK's own allgather is not an application's call: NCCL_ALGO=tree, which leaves
// allgathers nothing, does not refuse the allreduces it checks.
TEST(ApiErrors, CallChecksRunWhereNcclAlgoLeavesTheirAllGatherNothing) {
  RankRunOptions options = treeOnly();
  options.env.push_back({"WEFT_CHECK", "1"});
  options.label = "WEFT_CHECK under NCCL_ALGO=tree";
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    checkAllReduceWorks(comm, nranks, rank, "init");
    checkAllReduceWorks(comm, nranks, rank, "a first checked allreduce");
  }));
}

// The last error says that the function is missing from this build, not that the input was wrong.
bool mentionsMissing(const char* text) {
  std::string lower = text == nullptr ? "" : text;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return lower.find("implement") != std::string::npos || lower.find("support") != std::string::npos;
}

TEST(ApiErrors, UnimplementedFunctionsAreInvalidUsageAndSaySo) {
  RankRunOptions options;
  options.nranks = kRanks;
  options.env = transportEnv(Transport::kShm);
  options.label = "unimplemented functions";
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    const std::vector<std::pair<std::string, std::function<ncclResult_t()>>> calls = {
        {"ncclDevCommCreate", [&] { return ncclDevCommCreate(comm, nullptr, nullptr); }},
        {"ncclDevCommDestroy", [&] { return ncclDevCommDestroy(comm, nullptr); }},
        {"ncclLsaBarrierCreateRequirement",
         [&] { return ncclLsaBarrierCreateRequirement(ncclTeamLsa(comm), 1, nullptr, nullptr); }},
        {"ncclLLA2ACreateRequirement", [&] { return ncclLLA2ACreateRequirement(1, 8, nullptr, nullptr); }},
    };
    for (const auto& [what, call] : calls) {
      const ncclResult_t result = call();
      RANK_CHECK(result == ncclInvalidUsage) << what << " returned " << describeResult(result)
                                             << ", want ncclInvalidUsage (not implemented)";
      const char* last = ncclGetLastError(comm);
      RANK_CHECK(mentionsMissing(last)) << what << ": ncclGetLastError should say it is not implemented; it says \""
                                        << (last == nullptr ? "(null)" : last) << "\"";
      checkAllReduceWorks(comm, nranks, rank, what);
      if (harness::rankFailed()) return;
    }
  }));
}

// Without a device API no peer is load/store accessible: the LSA team is the rank alone, and the
// world and rail teams are every rank, mapped back to world ranks.
TEST(ApiErrors, DeviceApiTeamsDescribeTheCommunicator) {
  RankRunOptions options;
  options.nranks = 3;
  options.mode = harness::RankMode::kThreads;
  options.label = "device API teams";
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    const ncclTeam world = ncclTeamWorld(comm);
    RANK_CHECK(world.nRanks == nranks && world.rank == rank && world.stride == 1)
        << "world team {" << world.nRanks << ", " << world.rank << ", " << world.stride << "}";
    const ncclTeam lsa = ncclTeamLsa(comm);
    RANK_CHECK(lsa.nRanks == 1 && lsa.rank == 0) << "LSA team {" << lsa.nRanks << ", " << lsa.rank << "}";
    const ncclTeam rail = ncclTeamRail(comm);
    RANK_CHECK(rail.nRanks == nranks && rail.rank == rank) << "rail team {" << rail.nRanks << ", " << rail.rank << "}";
    for (int r = 0; r < nranks; ++r) {
      RANK_CHECK(ncclTeamRankToWorld(comm, world, r) == r) << "world rank of world team rank " << r;
      RANK_CHECK(ncclTeamRankToWorld(comm, rail, r) == r) << "world rank of rail team rank " << r;
    }
    RANK_CHECK(ncclTeamRankToWorld(comm, lsa, 0) == rank);
    RANK_CHECK(ncclTeamRankToLsa(comm, world, rank) == 0);
    RANK_CHECK(ncclLLA2ACalcSlots(32, 16) == 64 && ncclLLA2ACalcSlots(10, 1) == 10);
  }));
}

TEST(ApiErrors, InvalidCallInsideGroupFailsTheGroupOnly) {
  RankRunOptions options;
  options.nranks = kRanks;
  options.env = transportEnv(Transport::kShm);
  options.label = "errors inside a group";
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    std::vector<float> send(kElements, 1.0f);
    std::vector<float> recv(kElements, 0.0f);
    // A valid call, then an invalid one: as in NCCL, the bad call fails and so does the group.
    RANK_CHECK_NCCL(ncclGroupStart());
    RANK_CHECK_NCCL(ncclAllReduce(send.data(), recv.data(), kElements, ncclFloat, ncclSum, comm, kStream))
        << "(the valid call before the bad one, inside the group)";
    ncclResult_t bad = ncclAllReduce(send.data(), recv.data(), kElements, badType(ncclNumTypes), ncclSum, comm, kStream);
    ncclResult_t end = ncclGroupEnd();
    RANK_CHECK(bad == ncclInvalidArgument) << "bad datatype inside a group returned " << describeResult(bad);
    RANK_CHECK(end == ncclInvalidArgument)
        << "ncclGroupEnd after a failed call in its group returned " << describeResult(end)
        << ", want ncclInvalidArgument";
    checkAllReduceWorks(comm, nranks, rank, "a group with a failed call");
    if (harness::rankFailed()) return;

    // Only an invalid call in the group.
    RANK_CHECK_NCCL(ncclGroupStart());
    bad = ncclBroadcast(send.data(), recv.data(), kElements, ncclFloat, nranks, comm, kStream);
    end = ncclGroupEnd();
    RANK_CHECK(bad == ncclInvalidArgument) << "root nranks inside a group returned " << describeResult(bad);
    RANK_CHECK(end == ncclInvalidArgument) << "ncclGroupEnd returned " << describeResult(end);
    checkAllReduceWorks(comm, nranks, rank, "a group of one failed call");
  }));
}

TEST(ApiErrors, EveryResultHasItsOwnErrorString) {
  std::set<std::string> seen;
  for (int code = ncclSuccess; code < ncclNumResults; ++code) {
    const char* text = ncclGetErrorString(static_cast<ncclResult_t>(code));
    ASSERT_NE(text, nullptr) << "result " << code;
    EXPECT_GT(std::strlen(text), 0u) << "result " << code;
    EXPECT_TRUE(seen.insert(text).second) << "result " << code << " shares its string: " << text;
  }
  EXPECT_NE(std::string(ncclGetErrorString(ncclInvalidArgument)).find("invalid argument"), std::string::npos)
      << ncclGetErrorString(ncclInvalidArgument);
  const char* unknown = ncclGetErrorString(ncclNumResults);
  ASSERT_NE(unknown, nullptr);
  EXPECT_GT(std::strlen(unknown), 0u);
}

TEST(ApiErrors, VersionIsAtLeast2_28) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_GE(version, 22800);
  EXPECT_LT(version, 30000);
  EXPECT_EQ(ncclGetVersion(nullptr), ncclInvalidArgument);
}

}  // namespace
}  // namespace weft::multirank
