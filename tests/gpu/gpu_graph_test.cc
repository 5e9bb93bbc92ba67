// CUDA graph capture of calls on GPU buffers (ranks of one host): ring collectives and Send/Recv
// captured and replayed, each replay reading the buffers as they are then; replays ordered with
// the communicator's eager calls on other streams; a graph's tables kept while it lives, and
// reused by later captures once it is destroyed; a group on two streams per rank joined inside
// the graph, and refused where only one of the two is captured; two communicators' kernels on two
// streams of a graph, ordered by edges from the kernels themselves; a device scalar read at each
// replay; an init on one thread while another captures in CUDA's global mode.
// Ranks are communicators of this process (ncclCommInitAll on one GPU) driven from the test's
// thread, with the ring for allreduces (WEFT_GPU_DIRECT=0). Skipped, saying so, where no GPU is
// present.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/gpu/cuda_assert.h"
#include "tests/gpu/gpu_presence.h"
#include "tests/harness/comm_clique.h"
#include "tests/harness/deadline_guard.h"
#include "tests/harness/scoped_env.h"

namespace weft::gpu_tests {
namespace {

using harness::ncclSucceeded;

const std::chrono::seconds kDeadline = gpuTestDeadline(std::chrono::seconds{60});
constexpr int kRanks = 3;
constexpr size_t kCount = 40961;  // several pieces, and not a multiple of the ranks

class CapturedCalls : public ::testing::Test {
 protected:
  harness::ScopedEnv ring_{"WEFT_GPU_DIRECT", "0"};

  void SetUp() override {
    SKIP_WITHOUT_GPU();
    ASSERT_CUDA(cudaSetDevice(0));
    comms_.resize(kRanks);
    std::vector<int> devices(kRanks, 0);
    ASSERT_TRUE(ncclSucceeded(ncclCommInitAll(comms_.data(), kRanks, devices.data())));
    ASSERT_NO_FATAL_FAILURE(addStreams(&streams_));
    ASSERT_NO_FATAL_FAILURE(addBuffers(kCount, &values_));
    ASSERT_NO_FATAL_FAILURE(addBuffers(kCount * kRanks, &gathered_));
    ASSERT_NO_FATAL_FAILURE(addBuffers(kCount, &received_));
    forks_.resize(kRanks);
    for (cudaEvent_t& fork : forks_) ASSERT_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  }

  void TearDown() override {
    // A test that failed inside a capture leaves it open: end it, so the next test starts clean.
    for (cudaStream_t stream : ownedStreams_) {
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(stream, &status) != cudaSuccess || status == cudaStreamCaptureStatusNone) continue;
      cudaGraph_t graph = nullptr;
      (void)cudaStreamEndCapture(stream, &graph);
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
    }
    (void)cudaGetLastError();
    for (cudaStream_t stream : ownedStreams_) (void)cudaStreamSynchronize(stream);
    for (cudaGraphExec_t graph : graphs_) (void)cudaGraphExecDestroy(graph);
    for (ncclComm_t comm : comms_) {
      if (comm != nullptr) (void)ncclCommDestroy(comm);
    }
    for (float* buffer : ownedBuffers_) (void)cudaFree(buffer);
    for (cudaStream_t stream : ownedStreams_) (void)cudaStreamDestroy(stream);
    for (cudaEvent_t fork : forks_) (void)cudaEventDestroy(fork);
  }

  void addStreams(std::vector<cudaStream_t>* streams) {
    for (int r = 0; r < kRanks; ++r) {
      cudaStream_t stream = nullptr;
      ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      ownedStreams_.push_back(stream);
      streams->push_back(stream);
    }
  }

  void addBuffers(size_t count, std::vector<float*>* buffers) {
    for (int r = 0; r < kRanks; ++r) {
      void* buffer = nullptr;
      ASSERT_CUDA(cudaMalloc(&buffer, count * sizeof(float)));
      ownedBuffers_.push_back(static_cast<float*>(buffer));
      buffers->push_back(static_cast<float*>(buffer));
    }
  }

  // Rank r's values become scale * (r + 1), on `streams[r]`.
  void fill(const std::vector<float*>& buffers, const std::vector<cudaStream_t>& streams, float scale) {
    for (int r = 0; r < kRanks; ++r) {
      std::vector<float> values(kCount, scale * static_cast<float>(r + 1));
      ASSERT_CUDA(cudaMemcpyAsync(buffers[r], values.data(), kCount * sizeof(float), cudaMemcpyHostToDevice,
                                  streams[r]));
    }
  }

  // Rank r's `count` elements of `buffers[r]` once `streams[r]` is done, each checked by `want(r, i)`.
  template <class Want>
  void expect(const std::vector<float*>& buffers, const std::vector<cudaStream_t>& streams, size_t count,
              const Want& want) {
    for (int r = 0; r < kRanks; ++r) {
      std::vector<float> got(count);
      ASSERT_CUDA(
          cudaMemcpyAsync(got.data(), buffers[r], count * sizeof(float), cudaMemcpyDeviceToHost, streams[r]));
      ASSERT_CUDA(cudaStreamSynchronize(streams[r]));
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[i], want(r, i)) << "rank " << r << " element " << i;
    }
  }

  // Captures on every rank's stream (Global mode, PyTorch's default) what `calls` enqueues, and
  // instantiates the graphs into graphs_ (destroying those there first).
  template <class Calls>
  void capture(const Calls& calls) {
    ASSERT_NO_FATAL_FAILURE(beginCaptures());
    calls();
    ASSERT_NO_FATAL_FAILURE(endCaptures());
  }

  // Begins the captures, and forks `forked[r]` (if given) into rank r's.
  void beginCaptures(const std::vector<cudaStream_t>& forked = {}) {
    for (cudaGraphExec_t graph : graphs_) ASSERT_CUDA(cudaGraphExecDestroy(graph));
    graphs_.clear();
    for (int r = 0; r < kRanks; ++r) ASSERT_CUDA(cudaStreamBeginCapture(streams_[r], cudaStreamCaptureModeGlobal));
    for (size_t r = 0; r < forked.size(); ++r) {
      ASSERT_CUDA(cudaEventRecord(forks_[r], streams_[r]));
      ASSERT_CUDA(cudaStreamWaitEvent(forked[r], forks_[r], 0));
    }
  }

  // Joins `forked` (as beginCaptures forked it) back, and ends the captures.
  void endCaptures(const std::vector<cudaStream_t>& forked = {}) {
    for (size_t r = 0; r < forked.size(); ++r) {
      ASSERT_CUDA(cudaEventRecord(forks_[r], forked[r]));
      ASSERT_CUDA(cudaStreamWaitEvent(streams_[r], forks_[r], 0));
    }
    graphs_.assign(kRanks, nullptr);
    for (int r = 0; r < kRanks; ++r) {
      cudaGraph_t graph = nullptr;
      ASSERT_CUDA(cudaStreamEndCapture(streams_[r], &graph));
      ASSERT_CUDA(cudaGraphInstantiate(&graphs_[r], graph, 0));
      ASSERT_CUDA(cudaGraphDestroy(graph));
    }
  }

  void replay(const std::vector<cudaGraphExec_t>& graphs) {
    for (int r = 0; r < kRanks; ++r) ASSERT_CUDA(cudaGraphLaunch(graphs[r], streams_[r]));
  }
  void replay() { replay(graphs_); }

  // Every rank's in-place sum of values_[r]; then, in a group of their own, its all-gather of the
  // first kCount / kRanks elements into gathered_[r]; then its send of values_[r] to rank r + 1
  // and receive from r - 1 (a group's calls may run in any order, as in NCCL).
  void allReduceAllGatherAndShift() {
    const size_t part = kCount / kRanks;
    ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_TRUE(ncclSucceeded(
          ncclAllReduce(values_[r], values_[r], kCount, ncclFloat32, ncclSum, comms_[r], streams_[r])));
    }
    ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
    ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_TRUE(
          ncclSucceeded(ncclAllGather(values_[r], gathered_[r], part, ncclFloat32, comms_[r], streams_[r])));
    }
    ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
    ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_TRUE(
          ncclSucceeded(ncclSend(values_[r], kCount, ncclFloat32, (r + 1) % kRanks, comms_[r], streams_[r])));
      ASSERT_TRUE(ncclSucceeded(
          ncclRecv(received_[r], kCount, ncclFloat32, (r + kRanks - 1) % kRanks, comms_[r], streams_[r])));
    }
    ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  }

  // Every rank's in-place sum of the first `count` elements of values[r] on `streams[r]`, in one
  // group.
  void allReduce(const std::vector<float*>& values, const std::vector<cudaStream_t>& streams,
                 size_t count = kCount) {
    ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_TRUE(
          ncclSucceeded(ncclAllReduce(values[r], values[r], count, ncclFloat32, ncclSum, comms_[r], streams[r])));
    }
    ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  }

  // After a replay whose sum was `sum`: every buffer holds it.
  void expectReplayed(float sum) {
    auto everywhere = [sum](int, size_t) { return sum; };
    ASSERT_NO_FATAL_FAILURE(expect(values_, streams_, kCount, everywhere));
    ASSERT_NO_FATAL_FAILURE(expect(gathered_, streams_, kCount / kRanks * kRanks, everywhere));
    ASSERT_NO_FATAL_FAILURE(expect(received_, streams_, kCount, everywhere));
  }

  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<float*> values_;
  std::vector<float*> gathered_;
  std::vector<float*> received_;
  std::vector<cudaGraphExec_t> graphs_;
  std::vector<cudaStream_t> ownedStreams_;
  std::vector<float*> ownedBuffers_;
  std::vector<cudaEvent_t> forks_;  // per rank, for beginCaptures' forks and endCaptures' joins
};

// The Send/Recv's connections are made at the capturing call (they are not made at init), with
// capture's rules relaxed for it. The sums of 1, 2 and 3 triple at each replay; refilled between
// replays, a replay reads the new values.
TEST_F(CapturedCalls, RingCollectivesAndSendRecvReplayExactly) {
  harness::DeadlineGuard guard(kDeadline, "ring collectives and Send/Recv replayed from CUDA graphs");
  ASSERT_NO_FATAL_FAILURE(fill(values_, streams_, 1.0f));
  ASSERT_NO_FATAL_FAILURE(capture([this] { allReduceAllGatherAndShift(); }));
  ASSERT_NO_FATAL_FAILURE(replay());
  ASSERT_NO_FATAL_FAILURE(expectReplayed(6.0f));
  ASSERT_NO_FATAL_FAILURE(replay());
  ASSERT_NO_FATAL_FAILURE(replay());
  ASSERT_NO_FATAL_FAILURE(expectReplayed(54.0f));
  ASSERT_NO_FATAL_FAILURE(fill(values_, streams_, 10.0f));
  ASSERT_NO_FATAL_FAILURE(replay());
  ASSERT_NO_FATAL_FAILURE(expectReplayed(60.0f));
}

// Replays and eager sums on another stream of each rank, alternating, enqueued at once: each must
// run after the one enqueued before it, though nothing on the streams orders them (the second
// eager call is on the stream of the first, which a replay ran between). 6, tripled three times.
TEST_F(CapturedCalls, ReplaysAndEagerCallsOnOtherStreamsRunInTheOrderEnqueued) {
  harness::DeadlineGuard guard(kDeadline, "replays and eager calls on other streams");
  std::vector<cudaStream_t> others;
  ASSERT_NO_FATAL_FAILURE(addStreams(&others));
  ASSERT_NO_FATAL_FAILURE(fill(values_, streams_, 1.0f));
  for (cudaStream_t stream : streams_) ASSERT_CUDA(cudaStreamSynchronize(stream));  // before the capture
  ASSERT_NO_FATAL_FAILURE(capture([this] { allReduce(values_, streams_); }));
  ASSERT_NO_FATAL_FAILURE(replay());
  ASSERT_NO_FATAL_FAILURE(allReduce(values_, others));
  ASSERT_NO_FATAL_FAILURE(replay());
  ASSERT_NO_FATAL_FAILURE(allReduce(values_, others));
  for (cudaStream_t stream : streams_) ASSERT_CUDA(cudaStreamSynchronize(stream));
  ASSERT_NO_FATAL_FAILURE(expect(values_, others, kCount, [](int, size_t) { return 162.0f; }));
}

// Graphs captured one after another, each replayed, then the one before it replayed again before
// it is destroyed: a capture must not take memory that a graph still alive reads, and later
// captures reuse what destroyed graphs held (CUDA releases it on a thread of its own). Each
// round's graph sums 7 elements fewer, so a graph that read a later capture's tables would leave
// its last 7 unsummed.
TEST_F(CapturedCalls, GraphsCapturedWhileOthersLiveAndAfterOthersAreDestroyedReplayExactly) {
  harness::DeadlineGuard guard(kDeadline, "graphs captured again and again");
  std::vector<cudaGraphExec_t> previous;
  for (int round = 0; round < 20; ++round) {
    const float scale = static_cast<float>(round + 1);
    const float sum = 6.0f * scale;
    const size_t count = kCount - 7 * static_cast<size_t>(round);
    ASSERT_NO_FATAL_FAILURE(fill(values_, streams_, scale));
    previous.swap(graphs_);  // kept alive through this round's capture
    ASSERT_NO_FATAL_FAILURE(capture([&] { allReduce(values_, streams_, count); }));
    ASSERT_NO_FATAL_FAILURE(replay());
    ASSERT_NO_FATAL_FAILURE(expect(values_, streams_, kCount, [&](int r, size_t i) {
      return i < count ? sum : scale * static_cast<float>(r + 1);
    }));
    if (previous.empty()) continue;
    ASSERT_NO_FATAL_FAILURE(replay(previous));
    ASSERT_NO_FATAL_FAILURE(expect(values_, streams_, kCount, [&](int r, size_t i) {
      return i < count ? 3 * sum : i < count + 7 ? sum : scale * static_cast<float>(r + 1);
    }));
    for (cudaGraphExec_t graph : previous) ASSERT_CUDA(cudaGraphExecDestroy(graph));
    previous.clear();
  }
}

// Calls of two communicators (the same ranks, two cliques), each rank's on two streams of one
// graph in an order of its own: rank 0 enqueues X1 and Y1 on stream A, then X2 on stream B; the
// others X1 on A, then X2 and Y1 on B. X2 follows X1 through an edge from X1 itself: an edge from
// all that stream A held by then would hold rank 0's X2 behind its Y1, which waits for the
// others' Y1, which wait behind their X2, which waits for rank 0's: the replay would never end.
TEST_F(CapturedCalls, TwoCommunicatorsCallsOnStreamsOrderedDifferentlyPerRankReplay) {
  harness::DeadlineGuard guard(kDeadline, "two communicators' calls captured on two streams per rank");
  std::vector<ncclComm_t> other(kRanks);
  std::vector<int> devices(kRanks, 0);
  ASSERT_TRUE(ncclSucceeded(ncclCommInitAll(other.data(), kRanks, devices.data())));
  std::vector<cudaStream_t> second;
  std::vector<float*> otherValues;
  std::vector<float*> secondValues;
  ASSERT_NO_FATAL_FAILURE(addStreams(&second));
  ASSERT_NO_FATAL_FAILURE(addBuffers(kCount, &otherValues));
  ASSERT_NO_FATAL_FAILURE(addBuffers(kCount, &secondValues));
  ASSERT_NO_FATAL_FAILURE(fill(values_, streams_, 1.0f));
  ASSERT_NO_FATAL_FAILURE(fill(otherValues, streams_, 10.0f));
  ASSERT_NO_FATAL_FAILURE(fill(secondValues, streams_, 100.0f));
  for (cudaStream_t stream : streams_) ASSERT_CUDA(cudaStreamSynchronize(stream));  // before the capture
  ASSERT_NO_FATAL_FAILURE(beginCaptures(second));
  auto sum = [](float* values, ncclComm_t comm, cudaStream_t stream) {
    return ncclAllReduce(values, values, kCount, ncclFloat32, ncclSum, comm, stream);
  };
  // No group is needed: both cliques' connections were made at init, so no call waits for a peer.
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(ncclSucceeded(sum(values_[r], comms_[r], streams_[r])));  // X1
    if (r == 0) {
      ASSERT_TRUE(ncclSucceeded(sum(otherValues[r], other[r], streams_[r])));   // Y1
      ASSERT_TRUE(ncclSucceeded(sum(secondValues[r], comms_[r], second[r])));   // X2
    } else {
      ASSERT_TRUE(ncclSucceeded(sum(secondValues[r], comms_[r], second[r])));   // X2
      ASSERT_TRUE(ncclSucceeded(sum(otherValues[r], other[r], second[r])));     // Y1
    }
  }
  ASSERT_NO_FATAL_FAILURE(endCaptures(second));
  ASSERT_NO_FATAL_FAILURE(replay());
  ASSERT_NO_FATAL_FAILURE(expect(values_, streams_, kCount, [](int, size_t) { return 6.0f; }));
  ASSERT_NO_FATAL_FAILURE(expect(otherValues, streams_, kCount, [](int, size_t) { return 60.0f; }));
  ASSERT_NO_FATAL_FAILURE(expect(secondValues, streams_, kCount, [](int, size_t) { return 600.0f; }));
  for (cudaGraphExec_t graph : graphs_) ASSERT_CUDA(cudaGraphExecDestroy(graph));
  graphs_.clear();
  for (ncclComm_t comm : other) ASSERT_TRUE(ncclSucceeded(ncclCommDestroy(comm)));
}

// A PreMulSum whose scalar is in device memory (ncclScalarDevice) is read by the kernel as it
// runs, so each replay takes the scalar as it is then: 1 + 2 + 3 scaled by 2, then that scaled
// by 0.5 and summed again. A scalar in ordinary host memory is refused for GPU buffers.
TEST_F(CapturedCalls, ADeviceScalarIsReadAtEachReplay) {
  harness::DeadlineGuard guard(kDeadline, "a device scalar read at each replay");
  std::vector<float*> scalars;
  ASSERT_NO_FATAL_FAILURE(addBuffers(1, &scalars));
  std::vector<ncclRedOp_t> ops(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(ncclSucceeded(ncclRedOpCreatePreMulSum(&ops[r], scalars[r], ncclFloat32, ncclScalarDevice, comms_[r])));
  }
  auto setScalars = [&](float value) {  // ordered before the replay on each rank's stream
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_CUDA(cudaMemcpyAsync(scalars[r], &value, sizeof(value), cudaMemcpyHostToDevice, streams_[r]));
    }
  };
  ASSERT_NO_FATAL_FAILURE(fill(values_, streams_, 1.0f));
  for (cudaStream_t stream : streams_) ASSERT_CUDA(cudaStreamSynchronize(stream));  // before the capture
  ASSERT_NO_FATAL_FAILURE(capture([&] {
    ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_TRUE(ncclSucceeded(
          ncclAllReduce(values_[r], values_[r], kCount, ncclFloat32, ops[r], comms_[r], streams_[r])));
    }
    ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  }));
  ASSERT_NO_FATAL_FAILURE(setScalars(2.0f));
  ASSERT_NO_FATAL_FAILURE(replay());
  ASSERT_NO_FATAL_FAILURE(expect(values_, streams_, kCount, [](int, size_t) { return 12.0f; }));
  ASSERT_NO_FATAL_FAILURE(setScalars(0.5f));
  ASSERT_NO_FATAL_FAILURE(replay());
  ASSERT_NO_FATAL_FAILURE(expect(values_, streams_, kCount, [](int, size_t) { return 18.0f; }));
  float onHost = 1.0f;
  ncclRedOp_t hostScalar;
  ASSERT_TRUE(ncclSucceeded(ncclRedOpCreatePreMulSum(&hostScalar, &onHost, ncclFloat32, ncclScalarDevice, comms_[0])));
  EXPECT_EQ(ncclAllReduce(values_[0], values_[0], kCount, ncclFloat32, hostScalar, comms_[0], streams_[0]),
            ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(comms_[0])).find("host memory the GPU cannot read"), std::string::npos);
  ASSERT_TRUE(ncclSucceeded(ncclRedOpDestroy(hostScalar, comms_[0])));
  for (cudaGraphExec_t graph : graphs_) ASSERT_CUDA(cudaGraphExecDestroy(graph));
  graphs_.clear();
  for (int r = 0; r < kRanks; ++r) ASSERT_TRUE(ncclSucceeded(ncclRedOpDestroy(ops[r], comms_[r])));
}

// Each rank's calls of one group on two streams, both captured into one graph (the second forked
// from the first and joined back): the graph's edges start both kernels after both streams'
// earlier work in the graph. Sums of 1 to 3 and of 10 to 30.
TEST_F(CapturedCalls, AGroupOnTwoCapturedStreamsPerRankReplaysExactly) {
  harness::DeadlineGuard guard(kDeadline, "a group on two captured streams per rank");
  std::vector<cudaStream_t> second;
  std::vector<float*> secondValues;
  ASSERT_NO_FATAL_FAILURE(addStreams(&second));
  ASSERT_NO_FATAL_FAILURE(addBuffers(kCount, &secondValues));
  ASSERT_NO_FATAL_FAILURE(fill(values_, streams_, 1.0f));
  ASSERT_NO_FATAL_FAILURE(fill(secondValues, second, 10.0f));
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_CUDA(cudaStreamSynchronize(streams_[r]));  // before the capture
    ASSERT_CUDA(cudaStreamSynchronize(second[r]));
  }
  ASSERT_NO_FATAL_FAILURE(beginCaptures(second));
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(ncclSucceeded(
        ncclAllReduce(values_[r], values_[r], kCount, ncclFloat32, ncclSum, comms_[r], streams_[r])));
    ASSERT_TRUE(ncclSucceeded(
        ncclAllReduce(secondValues[r], secondValues[r], kCount, ncclFloat32, ncclSum, comms_[r], second[r])));
  }
  ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  ASSERT_NO_FATAL_FAILURE(endCaptures(second));
  ASSERT_NO_FATAL_FAILURE(replay());
  ASSERT_NO_FATAL_FAILURE(expect(values_, streams_, kCount, [](int, size_t) { return 6.0f; }));
  ASSERT_NO_FATAL_FAILURE(expect(secondValues, streams_, kCount, [](int, size_t) { return 60.0f; }));
}

// A rank's group on a captured stream and one that is not: its waits cannot be graph edges, so
// the group is refused, and the communicators stay usable.
TEST_F(CapturedCalls, AGroupOnACapturedStreamAndAnUncapturedOneIsRefused) {
  harness::DeadlineGuard guard(kDeadline, "a group on a captured and an uncaptured stream");
  std::vector<cudaStream_t> second;
  ASSERT_NO_FATAL_FAILURE(addStreams(&second));
  ASSERT_CUDA(cudaStreamBeginCapture(streams_[0], cudaStreamCaptureModeThreadLocal));
  // No assertion until the capture has ended: a failed one would leave the stream capturing.
  std::vector<ncclResult_t> calls;
  calls.push_back(ncclGroupStart());
  for (int r = 0; r < kRanks; ++r) {
    calls.push_back(ncclAllReduce(values_[r], values_[r], kCount, ncclFloat32, ncclSum, comms_[r], streams_[r]));
    calls.push_back(ncclAllReduce(values_[r], values_[r], kCount, ncclFloat32, ncclSum, comms_[r], second[r]));
  }
  const ncclResult_t grouped = ncclGroupEnd();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(streams_[0], &graph);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  for (ncclResult_t call : calls) ASSERT_EQ(call, ncclSuccess);
  EXPECT_EQ(grouped, ncclInvalidUsage);
  ASSERT_CUDA(ended);
  ASSERT_NO_FATAL_FAILURE(fill(values_, streams_, 1.0f));
  ASSERT_NO_FATAL_FAILURE(allReduce(values_, streams_));
  ASSERT_NO_FATAL_FAILURE(expect(values_, streams_, kCount, [](int, size_t) { return 6.0f; }));
}

// The direct allreduce, which ranks that are threads of one process on one GPU take by default
// (the fixture above asks for the ring).
class CapturedDirectCalls : public CapturedCalls {
 protected:
  harness::ScopedEnv direct_{"WEFT_GPU_DIRECT", "1"};
};

// Its call numbers are counted on the GPU: replays and eager calls between them meet each other's
// boards call for call. The sums of 1, 2 and 3 triple at each call.
TEST_F(CapturedDirectCalls, ReplaysAndEagerCallsBetweenThemSumInTurn) {
  harness::DeadlineGuard guard(kDeadline, "direct allreduces replayed from CUDA graphs");
  ASSERT_NO_FATAL_FAILURE(fill(values_, streams_, 1.0f));
  ASSERT_NO_FATAL_FAILURE(capture([this] { allReduce(values_, streams_); }));
  ASSERT_NO_FATAL_FAILURE(replay());
  ASSERT_NO_FATAL_FAILURE(allReduce(values_, streams_));
  ASSERT_NO_FATAL_FAILURE(replay());
  ASSERT_NO_FATAL_FAILURE(expect(values_, streams_, kCount, [](int, size_t) { return 54.0f; }));
}

// A call on host buffers runs at once on the host path, which a graph's replays would not repeat:
// on a captured stream it is refused, and the capture goes on whole.
TEST_F(CapturedCalls, ACallOnHostBuffersOnACapturedStreamIsRefused) {
  harness::DeadlineGuard guard(kDeadline, "a call on host buffers on a captured stream");
  std::vector<float> host(kCount, 1.0f);
  ASSERT_CUDA(cudaStreamBeginCapture(streams_[0], cudaStreamCaptureModeThreadLocal));
  // No assertion until the capture has ended: a failed one would leave the stream capturing.
  const ncclResult_t call =
      ncclAllReduce(host.data(), host.data(), kCount, ncclFloat32, ncclSum, comms_[0], streams_[0]);
  const std::string why = ncclGetLastError(comms_[0]);
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(streams_[0], &graph);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  EXPECT_EQ(call, ncclInvalidUsage);
  EXPECT_NE(why.find("being captured into a CUDA graph"), std::string::npos) << why;
  ASSERT_CUDA(ended);
  EXPECT_EQ(host[0], 1.0f) << "the call ran on the host";
}

// Init allocates GPU memory, makes connections and loads code, which CUDA's global capture mode
// forbids on every thread while any captures, unless the thread relaxes it: init must neither
// fail nor invalidate the other thread's capture.
TEST(CaptureElsewhere, AnInitWhileAnotherThreadCapturesLeavesTheCaptureWhole) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "an init while another thread captures");
  ASSERT_CUDA(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  std::vector<ncclComm_t> comms(2, nullptr);
  ncclResult_t init = ncclInternalError;
  std::string why;
  std::thread([&] {
    std::vector<int> devices(comms.size(), 0);
    init = ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), devices.data());
    why = ncclGetLastError(nullptr);
  }).join();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (graph != nullptr) {
    EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  }
  harness::CommClique clique;
  clique.adopt(comms);
  EXPECT_EQ(init, ncclSuccess) << why;
  EXPECT_EQ(ended, cudaSuccess) << cudaGetErrorString(ended);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

}  // namespace
}  // namespace weft::gpu_tests
