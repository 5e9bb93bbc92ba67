// Stream semantics of calls on GPU buffers, as NCCL's: a call is enqueued on the given stream and
// returns at once; it runs after the stream's earlier work and before its later work; a group
// launches at ncclGroupEnd; ranks of one communicator need streams of their own; a call cannot
// mix GPU and host buffers; managed and page-locked buffers take the stream path; ncclMemAlloc
// gives device memory; ncclCommAbort ends a kernel that waits for a peer that never comes, and
// aborting that peer ends it too, and meanwhile the WEFT_DUMP_SIGNAL report names what the kernel
// waits for; a parent and its split run at once.
// Ranks are communicators of this process (ncclCommInitAll on one GPU), driven from the test's
// thread (from a thread per rank where said). Skipped, saying so, where no GPU is present.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// What the WEFT_DUMP_SIGNAL handler (USR1, installed by a communicator's init) prints, taken from
// this process's stderr while it runs.
std::string progressDump() {
  struct sigaction current = {};
  if (sigaction(SIGUSR1, nullptr, &current) != 0 || current.sa_handler == SIG_DFL) {
    return "no handler for SIGUSR1: WEFT_DUMP_SIGNAL was not installed";  // raising it would end the process
  }
  FILE* file = tmpfile();  // not a pipe: the handler must never block on a full one
  if (file == nullptr) return "tmpfile failed";
  fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  if (saved < 0 || dup2(fileno(file), STDERR_FILENO) < 0) {
    if (saved >= 0) close(saved);
    fclose(file);
    return "could not redirect stderr";
  }
  raise(SIGUSR1);  // the handler runs in this thread before raise returns
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string dump;
  rewind(file);
  char chunk[4096];
  for (size_t got; (got = fread(chunk, 1, sizeof(chunk), file)) > 0;) dump.append(chunk, got);
  fclose(file);
  return dump;
}

// `n` communicators of one clique on GPU 0, each with its own non-blocking stream and a
// device buffer of `count` floats.
class OneGpuClique : public ::testing::Test {
 protected:
  void start(int n, size_t count) {
    ASSERT_CUDA(cudaSetDevice(0));
    comms_.resize(n);
    std::vector<int> devices(n, 0);
    ASSERT_TRUE(ncclSucceeded(ncclCommInitAll(comms_.data(), n, devices.data())));
    count_ = count;
    ASSERT_NO_FATAL_FAILURE(addStreams(&streams_));
    ASSERT_NO_FATAL_FAILURE(addBuffers(&buffers_));
  }

  void TearDown() override {
    gate_.store(true);  // a test that failed while its streams were held must not hang here
    for (cudaStream_t stream : ownedStreams_) (void)cudaStreamSynchronize(stream);
    for (ncclComm_t comm : comms_) {
      if (comm != nullptr) (void)ncclCommDestroy(comm);
    }
    for (float* buffer : ownedBuffers_) (void)cudaFree(buffer);
    for (cudaStream_t stream : ownedStreams_) (void)cudaStreamDestroy(stream);
  }

  // Appends a non-blocking stream per rank to `streams`; TearDown destroys them.
  void addStreams(std::vector<cudaStream_t>* streams) {
    for (size_t r = 0; r < comms_.size(); ++r) {
      cudaStream_t stream = nullptr;
      ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      ownedStreams_.push_back(stream);
      streams->push_back(stream);
    }
  }

  // Appends a device buffer of count_ floats per rank to `buffers`; TearDown frees them.
  void addBuffers(std::vector<float*>* buffers) {
    for (size_t r = 0; r < comms_.size(); ++r) {
      void* buffer = nullptr;
      ASSERT_CUDA(cudaMalloc(&buffer, count_ * sizeof(float)));
      ownedBuffers_.push_back(static_cast<float*>(buffer));
      buffers->push_back(static_cast<float*>(buffer));
    }
  }

  // Fills rank r's buffer with scale * (r + 1) on its stream (ordered before what follows there).
  void fillOnStreams(const std::vector<float*>& buffers, const std::vector<cudaStream_t>& streams, float scale) {
    for (size_t r = 0; r < buffers.size(); ++r) {
      std::vector<float> values(count_, scale * static_cast<float>(r + 1));
      ASSERT_CUDA(cudaMemcpyAsync(buffers[r], values.data(), count_ * sizeof(float), cudaMemcpyHostToDevice,
                                  streams[r]));
    }
  }
  void fillOnStreams() { fillOnStreams(buffers_, streams_, 1.0f); }

  // Every element of every buffer, once its stream is done.
  void expectEveryElement(const std::vector<float*>& buffers, const std::vector<cudaStream_t>& streams,
                          float want) {
    for (size_t r = 0; r < buffers.size(); ++r) {
      std::vector<float> got(count_);
      ASSERT_CUDA(cudaMemcpyAsync(got.data(), buffers[r], count_ * sizeof(float), cudaMemcpyDeviceToHost,
                                  streams[r]));
      ASSERT_CUDA(cudaStreamSynchronize(streams[r]));
      for (size_t i = 0; i < count_; ++i) {
        ASSERT_EQ(got[i], want) << "rank " << r << " element " << i;
      }
    }
  }
  void expectEveryElement(float want) { expectEveryElement(buffers_, streams_, want); }

  // One group: `calls` in-place float sum allreduces of buffers[r] on streams[r] for every rank.
  void allReduceInPlace(const std::vector<float*>& buffers, const std::vector<cudaStream_t>& streams,
                        int calls = 1) {
    ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
    for (int call = 0; call < calls; ++call) {
      for (size_t r = 0; r < buffers.size(); ++r) {
        ASSERT_TRUE(ncclSucceeded(
            ncclAllReduce(buffers[r], buffers[r], count_, ncclFloat32, ncclSum, comms_[r], streams[r])));
      }
    }
    ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  }

  // One call of both ranks (a first call needs every rank where it makes the connections, as in
  // NCCL; here they are made at init, setup_at_init.h), then rank `caller` calls alone: its
  // kernel waits for the other rank, which never calls, and the progress dump says so
  // (`waitsFor`, in the caller's lines) until rank `aborted` is aborted, which must end it within
  // 10 s. Where the aborted rank is the one waited for, freeing its GPU memory waits for every
  // kernel on the GPU, so its abort must end the caller's kernel too, and the caller's
  // communicator must then report the remote error. Start the clique under dumpSignal_.
  void abortWhileALoneCallWaits(int caller, int aborted, const std::string& waitsFor) {
    ASSERT_NO_FATAL_FAILURE(allReduceInPlace(buffers_, streams_));
    for (cudaStream_t stream : streams_) ASSERT_CUDA(cudaStreamSynchronize(stream));
    ASSERT_TRUE(ncclSucceeded(ncclAllReduce(buffers_[caller], buffers_[caller], count_, ncclFloat32, ncclSum,
                                            comms_[caller], streams_[caller])));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(cudaStreamQuery(streams_[caller]), cudaErrorNotReady);
    const std::string dump = progressDump();
    const std::string callerLine = "rank " + std::to_string(caller) + "/2 comm 0x";
    const size_t callerAt = dump.find(callerLine);
    const size_t waitAt = dump.find(waitsFor, callerAt == std::string::npos ? 0 : callerAt);
    EXPECT_NE(callerAt, std::string::npos) << dump;
    // The caller's GPU lines follow its own line, before the next communicator's.
    EXPECT_NE(waitAt, std::string::npos) << dump;
    EXPECT_GT(dump.find(" comm 0x", callerAt + callerLine.size()), waitAt) << dump;
    const auto abortedAt = std::chrono::steady_clock::now();
    EXPECT_EQ(ncclCommAbort(comms_[aborted]), ncclSuccess);
    comms_[aborted] = nullptr;
    ASSERT_CUDA(cudaStreamSynchronize(streams_[caller]));
    EXPECT_LT(std::chrono::steady_clock::now() - abortedAt, std::chrono::seconds(10));
    if (caller == aborted) return;
    ncclResult_t asyncError = ncclSuccess;
    EXPECT_EQ(ncclCommGetAsyncError(comms_[caller], &asyncError), ncclSuccess);
    EXPECT_EQ(asyncError, ncclRemoteError);
    EXPECT_EQ(ncclCommAbort(comms_[caller]), ncclSuccess);
    comms_[caller] = nullptr;
  }

  // Rank 0 of two on one GPU calls on `legacy`, a handle of the legacy default stream, which the
  // other rank, a thread of this process, shares: refused.
  void expectLegacyStreamRefused(cudaStream_t legacy) {
    ASSERT_NO_FATAL_FAILURE(start(2, 1024));
    EXPECT_EQ(ncclAllReduce(buffers_[0], buffers_[0], count_, ncclFloat32, ncclSum, comms_[0], legacy),
              ncclInvalidUsage);
    EXPECT_NE(std::strstr(ncclGetLastError(comms_[0]), "rank 0 enqueues on the legacy default stream"), nullptr)
        << ncclGetLastError(comms_[0]);
  }

  // The progress dump's handler is installed by the first init that sees it asked for.
  harness::ScopedEnv dumpSignal_{"WEFT_DUMP_SIGNAL", "USR1"};
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<float*> buffers_;
  size_t count_ = 0;
  std::vector<cudaStream_t> ownedStreams_;
  std::vector<float*> ownedBuffers_;
  // A thread that opens gate_ after half a second: enqueue calls made meanwhile that return only
  // once it is open (gate_ then reads true) had to wait for the held streams.
  std::jthread openGateSoon() {
    return std::jthread([this] {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      gate_.store(true);
    });
  }

  // Holds streams (holdStream below) until a test or TearDown opens it.
  std::atomic<bool> gate_{false};
};

// A host function that holds a stream until the test releases it.
void CUDART_CB holdStream(void* gate) {
  auto* open = static_cast<std::atomic<bool>*>(gate);
  while (!open->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST_F(OneGpuClique, GroupedAllReduceIsEnqueuedAndRunsInStreamOrder) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "grouped allreduce on held streams");
  const int n = 3;
  ASSERT_NO_FATAL_FAILURE(start(n, (size_t{1} << 20) + 5));
  ASSERT_NO_FATAL_FAILURE(fillOnStreams());
  // Every stream is held: a call that waited for its stream's work would never return.
  for (cudaStream_t stream : streams_) ASSERT_CUDA(cudaLaunchHostFunc(stream, holdStream, &gate_));
  ASSERT_NO_FATAL_FAILURE(allReduceInPlace(buffers_, streams_));
  // Nothing has run yet: the streams are still held.
  for (cudaStream_t stream : streams_) EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady);
  gate_.store(true);
  expectEveryElement(6.0f);  // 1 + 2 + 3
}

TEST_F(OneGpuClique, SuccessiveCallsOnDifferentStreamsRunInCallOrder) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "successive allreduces on two streams per rank");
  const int n = 2;
  ASSERT_NO_FATAL_FAILURE(start(n, 4099));
  ASSERT_NO_FATAL_FAILURE(fillOnStreams());
  std::vector<cudaStream_t> second;
  ASSERT_NO_FATAL_FAILURE(addStreams(&second));
  // (1 + 2) -> 3 on every rank, then 3 + 3 -> 6: the second call must see the first's result.
  ASSERT_NO_FATAL_FAILURE(allReduceInPlace(buffers_, streams_));
  ASSERT_NO_FATAL_FAILURE(allReduceInPlace(buffers_, second));
  for (cudaStream_t stream : second) ASSERT_CUDA(cudaStreamSynchronize(stream));
  expectEveryElement(6.0f);
}

// As in NCCL, a group whose calls were given two streams per rank orders both: its kernels start
// after the earlier work of both streams (the second is held: nothing runs, not even the first
// stream's call), and the later work of each waits for both calls (rank r reads the second
// call's result on the first stream).
TEST_F(OneGpuClique, AGroupOnTwoStreamsStartsAfterBothAndBothWaitForIt) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "a group of allreduces on two streams per rank");
  const int n = 2;
  ASSERT_NO_FATAL_FAILURE(start(n, 4099));
  std::vector<cudaStream_t> second;
  std::vector<float*> secondBuffers;
  ASSERT_NO_FATAL_FAILURE(addStreams(&second));
  ASSERT_NO_FATAL_FAILURE(addBuffers(&secondBuffers));
  ASSERT_NO_FATAL_FAILURE(fillOnStreams());
  ASSERT_NO_FATAL_FAILURE(fillOnStreams(secondBuffers, second, 10.0f));
  for (cudaStream_t stream : second) ASSERT_CUDA(cudaLaunchHostFunc(stream, holdStream, &gate_));
  auto group = [&] {
    ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(ncclSucceeded(ncclAllReduce(buffers_[r], buffers_[r], count_, ncclFloat32, ncclSum, comms_[r],
                                              streams_[r])));
      ASSERT_TRUE(ncclSucceeded(ncclAllReduce(secondBuffers[r], secondBuffers[r], count_, ncclFloat32, ncclSum,
                                              comms_[r], second[r])));
    }
    ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  };
  ASSERT_NO_FATAL_FAILURE(group());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (cudaStream_t stream : streams_) EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady);
  gate_.store(true);
  // The second buffers read back on the first streams: 10 + 20, then the first buffers: 1 + 2.
  expectEveryElement(secondBuffers, streams_, 30.0f);
  expectEveryElement(3.0f);
  // Again: the communicator's one join event serves every group.
  ASSERT_NO_FATAL_FAILURE(group());
  expectEveryElement(secondBuffers, streams_, 60.0f);
  expectEveryElement(6.0f);
}

// More launches than a rank keeps tables buffers for (WorkPool::kMaxBuffers, 16) on held streams:
// the 17th waits for a kernel of an earlier launch instead of allocating, so the launches return
// only once the streams are released. Then as many calls in one group, whose 24 kernels per rank
// share one buffer, taken for both ranks before any kernel is enqueued: this thread drives both
// ranks, and the second rank's kernels are enqueued after the first's. In-place sums of 1 and 2
// double 3 at every call, so each of the 48 calls must run exactly once, in order.
TEST_F(OneGpuClique, MoreLaunchesInFlightThanTablesBuffersWaitAndEachRunOnce) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "48 allreduces in flight");
  harness::ScopedEnv ring("WEFT_GPU_DIRECT", "0");  // the direct allreduce has no tables
  const int n = 2;
  const int calls = 24;
  ASSERT_NO_FATAL_FAILURE(start(n, 4099));
  ASSERT_NO_FATAL_FAILURE(fillOnStreams());
  for (cudaStream_t stream : streams_) ASSERT_CUDA(cudaLaunchHostFunc(stream, holdStream, &gate_));
  std::jthread release = openGateSoon();
  for (int call = 0; call < calls; ++call) ASSERT_NO_FATAL_FAILURE(allReduceInPlace(buffers_, streams_));
  const bool waitedForTheRelease = gate_.load();
  release.join();
  EXPECT_TRUE(waitedForTheRelease) << calls << " launches on held streams all returned: none waited for a buffer";
  ASSERT_NO_FATAL_FAILURE(allReduceInPlace(buffers_, streams_, calls));
  expectEveryElement(std::ldexp(3.0f, 2 * calls - 1));
}

// A group whose tables outgrow one of the pool's buffers (WorkPool::kReservedBytes, 128 KiB): 48
// ring allreduces of 4 ranks over 16 channels (on a GPU of 132 multiprocessors; 13 on 114), about
// 7.3 KiB of tables each, take three buffers per rank, every one before any kernel of the group.
// Each call sums a buffer of a chain into the next, so every call's tables differ: sums of 1 to 4
// quadruple 10 at every call only where each call runs exactly once, in order, reading its own
// tables. (That several buffers were taken is computed, not checked.)
TEST_F(OneGpuClique, AGroupWhoseTablesOutgrowABufferTakesSeveral) {
  SKIP_WITHOUT_GPU();
  harness::ScopedEnv ring("WEFT_GPU_DIRECT", "0");  // the direct allreduce has no tables
  harness::ScopedEnv channels("WEFT_GPU_CHANNELS", "16");
  harness::DeadlineGuard guard(kDeadline, "48 allreduces in one group");
  const int n = 4;
  const int calls = 48;
  ASSERT_NO_FATAL_FAILURE(start(n, 4099));
  std::vector<std::vector<float*>> chain(calls + 1);  // chain[c][r]: rank r's input of call c
  chain[0] = buffers_;
  for (int c = 1; c <= calls; ++c) ASSERT_NO_FATAL_FAILURE(addBuffers(&chain[c]));
  ASSERT_NO_FATAL_FAILURE(fillOnStreams());
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  for (int c = 0; c < calls; ++c) {
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(ncclSucceeded(
          ncclAllReduce(chain[c][r], chain[c + 1][r], count_, ncclFloat32, ncclSum, comms_[r], streams_[r])));
    }
  }
  ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  expectEveryElement(chain[calls], streams_, std::ldexp(10.0f, 2 * (calls - 1)));
}

// One rank on the legacy default stream (0, allowed where no other rank of its process shares its
// GPU), with more launches than the pool keeps buffers for queued behind a held stream: the 17th
// must wait for a kernel of an earlier launch, and each launch's tables must stay until its kernel
// has ended. Out-of-place PreMulSum doublings alternate between two buffers, so that successive
// launches' tables differ; a first call, before the stream is held, makes the GPU resources.
TEST_F(OneGpuClique, TheLegacyStreamKeepsEachLaunchsTablesUntilItsKernelEnds) {
  SKIP_WITHOUT_GPU();
  harness::ScopedEnv ring("WEFT_GPU_DIRECT", "0");  // the direct allreduce has no tables
  harness::DeadlineGuard guard(kDeadline, "24 allreduces on the legacy stream");
  const int calls = 24;
  ASSERT_NO_FATAL_FAILURE(start(1, 4099));
  ASSERT_NO_FATAL_FAILURE(fillOnStreams());
  std::vector<float*> other;
  ASSERT_NO_FATAL_FAILURE(addBuffers(&other));
  ASSERT_CUDA(cudaStreamSynchronize(streams_[0]));
  float two = 2.0f;
  ncclRedOp_t doubling;
  ASSERT_TRUE(
      ncclSucceeded(ncclRedOpCreatePreMulSum(&doubling, &two, ncclFloat32, ncclScalarHostImmediate, comms_[0])));
  ASSERT_TRUE(
      ncclSucceeded(ncclAllReduce(buffers_[0], buffers_[0], count_, ncclFloat32, doubling, comms_[0], nullptr)));
  ASSERT_CUDA(cudaStreamSynchronize(nullptr));
  ASSERT_CUDA(cudaLaunchHostFunc(nullptr, holdStream, &gate_));
  std::jthread release = openGateSoon();
  for (int call = 0; call < calls; ++call) {
    float* from = call % 2 == 0 ? buffers_[0] : other[0];
    float* to = call % 2 == 0 ? other[0] : buffers_[0];
    ASSERT_TRUE(ncclSucceeded(ncclAllReduce(from, to, count_, ncclFloat32, doubling, comms_[0], nullptr)));
  }
  const bool waitedForTheRelease = gate_.load();
  release.join();
  EXPECT_TRUE(waitedForTheRelease) << calls << " launches on the held legacy stream all returned: none waited for "
                                   << "a buffer";
  ASSERT_CUDA(cudaStreamSynchronize(nullptr));
  EXPECT_TRUE(ncclSucceeded(ncclRedOpDestroy(doubling, comms_[0])));
  expectEveryElement(std::ldexp(1.0f, calls + 1));  // an even count ends in buffers_
}

// A parent and its split, each of 4 ranks on GPU 0, every rank driven by a thread of its own that
// alternates in-place sums of the two on two streams. A step-kernel block fills a multiprocessor;
// with WEFT_GPU_CHANNELS=32 each communicator would take 4 x 32 = 128 of the H200's 132, and one
// thread's kernel of the split could hold the multiprocessors that another's kernel of the parent
// waits for, forever. Ranks divide half of their GPU (src/device/residency.h): 16 blocks
// a rank, so the two communicators fit together. Sums of 1 to 4 (parent) and 10 to 40 (split)
// grow fourfold at every round after the first.
TEST_F(OneGpuClique, AParentAndItsSplitDrivenByAThreadPerRankFitTheGpuTogether) {
  SKIP_WITHOUT_GPU();
  harness::ScopedEnv ring("WEFT_GPU_DIRECT", "0");  // the direct kernel takes at most half the GPU
  harness::ScopedEnv channels("WEFT_GPU_CHANNELS", "32");
  harness::DeadlineGuard guard(kDeadline, "a parent and its split, alternating on 4 threads");
  const int n = 4;
  const int rounds = 12;
  ASSERT_NO_FATAL_FAILURE(start(n, (size_t{1} << 20) + 3));
  ASSERT_NO_FATAL_FAILURE(fillOnStreams());
  std::vector<ncclComm_t> splits(n);
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(ncclSucceeded(ncclCommSplit(comms_[r], 0, r, &splits[r], nullptr)));
  ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  std::vector<cudaStream_t> splitStreams;
  std::vector<float*> splitBuffers;
  ASSERT_NO_FATAL_FAILURE(addStreams(&splitStreams));
  ASSERT_NO_FATAL_FAILURE(addBuffers(&splitBuffers));
  ASSERT_NO_FATAL_FAILURE(fillOnStreams(splitBuffers, splitStreams, 10.0f));
  std::vector<ncclResult_t> results(n, ncclSuccess);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        (void)cudaSetDevice(0);
        for (int round = 0; round < rounds && results[r] == ncclSuccess; ++round) {
          results[r] = ncclAllReduce(buffers_[r], buffers_[r], count_, ncclFloat32, ncclSum, comms_[r], streams_[r]);
          if (results[r] != ncclSuccess) break;
          results[r] = ncclAllReduce(splitBuffers[r], splitBuffers[r], count_, ncclFloat32, ncclSum, splits[r],
                                     splitStreams[r]);
        }
      });
    }
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r], ncclSuccess) << "rank " << r;
  const float growth = std::ldexp(1.0f, 2 * (rounds - 1));
  expectEveryElement(10.0f * growth);
  expectEveryElement(splitBuffers, splitStreams, 100.0f * growth);
  for (ncclComm_t split : splits) EXPECT_EQ(ncclCommDestroy(split), ncclSuccess);
}

// One thread's group that names a parent's and its split's ranks interleaved (the parent's rank
// 0, the split's rank 1, the split's rank 0, the parent's rank 1), then a thread per rank whose
// groups name the two in opposite orders, each rank on one stream for both: as in NCCL, each
// communicator's kernels are enqueued together, communicators in an order every rank agrees on,
// so that neither stream holds a kernel behind one that waits for it. Sums of 1 and 2 (parent)
// and 10 and 20 (split), doubled by the second round.
TEST_F(OneGpuClique, GroupsNamingTwoCommunicatorsInAnyOrderQueueThemAlike) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "a group interleaving a parent's and its split's ranks");
  const int n = 2;
  ASSERT_NO_FATAL_FAILURE(start(n, 4099));
  ASSERT_NO_FATAL_FAILURE(fillOnStreams());
  std::vector<ncclComm_t> splits(n);
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  for (int r = 0; r < n; ++r) ASSERT_TRUE(ncclSucceeded(ncclCommSplit(comms_[r], 0, r, &splits[r], nullptr)));
  ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  std::vector<float*> splitBuffers;
  ASSERT_NO_FATAL_FAILURE(addBuffers(&splitBuffers));
  ASSERT_NO_FATAL_FAILURE(fillOnStreams(splitBuffers, streams_, 10.0f));
  const auto allReduce = [&](float* buffer, ncclComm_t comm, int r) {
    return ncclAllReduce(buffer, buffer, count_, ncclFloat32, ncclSum, comm, streams_[r]);
  };
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  EXPECT_EQ(allReduce(buffers_[0], comms_[0], 0), ncclSuccess);
  EXPECT_EQ(allReduce(splitBuffers[1], splits[1], 1), ncclSuccess);
  EXPECT_EQ(allReduce(splitBuffers[0], splits[0], 0), ncclSuccess);
  EXPECT_EQ(allReduce(buffers_[1], comms_[1], 1), ncclSuccess);
  ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  expectEveryElement(3.0f);
  expectEveryElement(splitBuffers, streams_, 30.0f);
  std::vector<ncclResult_t> results(n, ncclSuccess);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        (void)cudaSetDevice(0);
        results[r] = ncclGroupStart();
        const bool parentFirst = r == 0;
        for (int turn = 0; turn < 2 && results[r] == ncclSuccess; ++turn) {
          results[r] = (turn == 0) == parentFirst ? allReduce(buffers_[r], comms_[r], r)
                                                  : allReduce(splitBuffers[r], splits[r], r);
        }
        const ncclResult_t ended = ncclGroupEnd();
        if (results[r] == ncclSuccess) results[r] = ended;
      });
    }
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r], ncclSuccess) << "rank " << r;
  expectEveryElement(6.0f);
  expectEveryElement(splitBuffers, streams_, 60.0f);
  for (ncclComm_t split : splits) EXPECT_EQ(ncclCommDestroy(split), ncclSuccess);
}

TEST_F(OneGpuClique, TwoRanksOnOneStreamAreRefused) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "two ranks on one stream");
  ASSERT_NO_FATAL_FAILURE(start(2, 1024));
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(ncclSucceeded(
        ncclAllReduce(buffers_[r], buffers_[r], count_, ncclFloat32, ncclSum, comms_[r], streams_[0])));
  }
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_NE(std::strstr(ncclGetLastError(comms_[0]), "same CUDA stream"), nullptr) << ncclGetLastError(comms_[0]);
}

// Not in one group: rank 0's kernel is enqueued first, and waits for rank 1's, which would queue
// behind it. Rank 1's call is refused, and rank 0's kernel gives up with it.
TEST_F(OneGpuClique, TwoRanksCallingInTurnOnOneStreamAreRefused) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "two ranks' calls in turn on one stream");
  ASSERT_NO_FATAL_FAILURE(start(2, 1024));
  ASSERT_TRUE(ncclSucceeded(
      ncclAllReduce(buffers_[0], buffers_[0], count_, ncclFloat32, ncclSum, comms_[0], streams_[0])));
  EXPECT_EQ(ncclAllReduce(buffers_[1], buffers_[1], count_, ncclFloat32, ncclSum, comms_[1], streams_[0]),
            ncclInvalidUsage);
  EXPECT_NE(std::strstr(ncclGetLastError(comms_[1]), "same CUDA stream"), nullptr) << ncclGetLastError(comms_[1]);
  ASSERT_CUDA(cudaStreamSynchronize(streams_[0]));
  ncclResult_t asyncError = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comms_[0], &asyncError), ncclSuccess);
  EXPECT_EQ(asyncError, ncclRemoteError);
}

// The refusal ends the communicator (a peer's kernel of that call may wait already): one clique
// for each handle of the legacy default stream.
TEST_F(OneGpuClique, TheNullStreamIsRefusedWhereRanksShareAGpuInOneProcess) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "a rank on the null stream");
  expectLegacyStreamRefused(nullptr);
}

TEST_F(OneGpuClique, CudaStreamLegacyIsRefusedWhereRanksShareAGpuInOneProcess) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "a rank on cudaStreamLegacy");
  expectLegacyStreamRefused(cudaStreamLegacy);
}

TEST_F(OneGpuClique, GpuAndHostBuffersInOneCallAreRefused) {
  SKIP_WITHOUT_GPU();
  ASSERT_NO_FATAL_FAILURE(start(1, 1024));
  std::vector<float> host(count_);
  EXPECT_EQ(ncclAllReduce(buffers_[0], host.data(), count_, ncclFloat32, ncclSum, comms_[0], streams_[0]),
            ncclInvalidArgument);
  EXPECT_NE(std::strstr(ncclGetLastError(comms_[0]), "both must be GPU memory"), nullptr)
      << ncclGetLastError(comms_[0]);
}

// NCCL_CHECK_POINTERS=1: memory of the communicator's GPU goes through; another GPU's is refused,
// naming both (that part needs a second GPU).
TEST_F(OneGpuClique, CheckPointersRefusesAnotherGpusMemory) {
  SKIP_WITHOUT_GPU();
  harness::ScopedEnv check("NCCL_CHECK_POINTERS", "1");
  ASSERT_NO_FATAL_FAILURE(start(1, 1024));
  ASSERT_TRUE(ncclSucceeded(
      ncclAllReduce(buffers_[0], buffers_[0], count_, ncclFloat32, ncclSum, comms_[0], streams_[0])));
  ASSERT_CUDA(cudaStreamSynchronize(streams_[0]));
  int devices = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&devices));
  if (devices < 2) GTEST_SKIP() << "another GPU's memory needs a second GPU";
  // Device 1 is used only here: its context is reset after, so that later tests of this process
  // find it unused, and device 0 is current again whatever fails.
  struct DeviceOneForThisTest {
    void* memory = nullptr;
    ~DeviceOneForThisTest() {
      if (cudaSetDevice(1) == cudaSuccess) {
        if (memory != nullptr) (void)cudaFree(memory);
        (void)cudaDeviceReset();
      }
      (void)cudaSetDevice(0);
    }
  } other;
  ASSERT_CUDA(cudaSetDevice(1));
  ASSERT_CUDA(cudaMalloc(&other.memory, count_ * sizeof(float)));
  ASSERT_CUDA(cudaSetDevice(0));
  EXPECT_EQ(ncclAllReduce(other.memory, other.memory, count_, ncclFloat32, ncclSum, comms_[0], streams_[0]),
            ncclInvalidArgument);
  EXPECT_NE(std::strstr(ncclGetLastError(comms_[0]), "is memory of CUDA device 1, but rank 0 of this communicator "
                                                     "uses device 0"),
            nullptr)
      << ncclGetLastError(comms_[0]);
}

// Managed memory, cudaHostAlloc's and host memory registered with cudaHostRegister take the
// stream path, as device memory does: with every stream held the calls return and leave the
// buffers as they were (the host path would have summed them at once); released, they sum.
TEST_F(OneGpuClique, ManagedAndPageLockedBuffersTakeTheStreamPath) {
  SKIP_WITHOUT_GPU();
  // The host reads managed memory while kernels are queued.
  int concurrentManagedAccess = 0;
  ASSERT_CUDA(cudaDeviceGetAttribute(&concurrentManagedAccess, cudaDevAttrConcurrentManagedAccess, 0));
  if (concurrentManagedAccess == 0) GTEST_SKIP() << "GPU 0 does not let the host touch managed memory meanwhile";
  harness::DeadlineGuard guard(kDeadline, "allreduce on managed and page-locked buffers");
  ASSERT_NO_FATAL_FAILURE(start(3, 3000));
  const size_t bytes = count_ * sizeof(float);
  void* managed = nullptr;
  void* allocated = nullptr;
  // Freed only once the kernels are done: a failed assertion below leaks it rather than let a
  // kernel write freed memory.
  void* registered = std::malloc(bytes);
  ASSERT_NE(registered, nullptr);
  ASSERT_CUDA(cudaMallocManaged(&managed, bytes));
  ASSERT_CUDA(cudaHostAlloc(&allocated, bytes, cudaHostAllocPortable));
  ASSERT_CUDA(cudaHostRegister(registered, bytes, cudaHostRegisterPortable));
  const std::vector<float*> buffers = {static_cast<float*>(managed), static_cast<float*>(allocated),
                                       static_cast<float*>(registered)};
  for (size_t r = 0; r < buffers.size(); ++r) std::fill_n(buffers[r], count_, static_cast<float>(r + 1));
  for (cudaStream_t stream : streams_) ASSERT_CUDA(cudaLaunchHostFunc(stream, holdStream, &gate_));
  ASSERT_NO_FATAL_FAILURE(allReduceInPlace(buffers, streams_));
  for (size_t r = 0; r < buffers.size(); ++r) {
    EXPECT_EQ(buffers[r][0], static_cast<float>(r + 1)) << "rank " << r << ": the call ran on the host path";
  }
  gate_.store(true);
  for (size_t r = 0; r < buffers.size(); ++r) {
    ASSERT_CUDA(cudaStreamSynchronize(streams_[r]));
    for (size_t i = 0; i < count_; ++i) ASSERT_EQ(buffers[r][i], 6.0f) << "rank " << r << " element " << i;
  }
  ASSERT_CUDA(cudaHostUnregister(registered));
  std::free(registered);
  ASSERT_CUDA(cudaFreeHost(allocated));
  ASSERT_CUDA(cudaFree(managed));
}

TEST_F(OneGpuClique, MemAllocGivesDeviceMemoryThatCudaIpcExportsAndCollectivesTake) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "allreduce on ncclMemAlloc buffers");
  const int n = 2;
  ASSERT_NO_FATAL_FAILURE(start(n, 4099));  // the process now uses the GPU
  std::vector<float*> allocated(n);
  for (int r = 0; r < n; ++r) {
    void* memory = nullptr;
    ASSERT_TRUE(ncclSucceeded(ncclMemAlloc(&memory, count_ * sizeof(float))));
    allocated[r] = static_cast<float*>(memory);
    cudaPointerAttributes attributes{};
    ASSERT_CUDA(cudaPointerGetAttributes(&attributes, memory));
    EXPECT_EQ(attributes.type, cudaMemoryTypeDevice) << "rank " << r;
    EXPECT_EQ(attributes.device, 0) << "rank " << r;
    cudaIpcMemHandle_t handle;
    ASSERT_CUDA(cudaIpcGetMemHandle(&handle, memory));
    std::vector<float> values(count_, static_cast<float>(r + 1));
    ASSERT_CUDA(cudaMemcpyAsync(memory, values.data(), count_ * sizeof(float), cudaMemcpyHostToDevice, streams_[r]));
  }
  ASSERT_NO_FATAL_FAILURE(allReduceInPlace(allocated, streams_));
  for (int r = 0; r < n; ++r) {
    std::vector<float> got(count_);
    ASSERT_CUDA(cudaStreamSynchronize(streams_[r]));
    ASSERT_CUDA(cudaMemcpy(got.data(), allocated[r], count_ * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count_; ++i) ASSERT_EQ(got[i], 3.0f) << "rank " << r << " element " << i;
    EXPECT_EQ(ncclMemFree(allocated[r]), ncclSuccess);
    EXPECT_EQ(ncclMemFree(allocated[r]), ncclInvalidArgument) << "a second free of the same memory";
  }
}

TEST_F(OneGpuClique, LowLatencyAndSimplePiecesTakeTurnsOnOneConnection) {
  SKIP_WITHOUT_GPU();
  harness::ScopedEnv ring("WEFT_GPU_DIRECT", "0");  // the ring's connections, not the direct kernel
  harness::DeadlineGuard guard(kDeadline, "LL and Simple allreduces in turn");
  ASSERT_NO_FATAL_FAILURE(start(2, 40000));
  // 160000 bytes take Simple (above WEFT_GPU_LL_MAX_BYTES), the others LL.
  for (size_t count : {size_t{4099}, size_t{40000}, size_t{7}, size_t{40000}, size_t{1}}) {
    count_ = count;
    ASSERT_NO_FATAL_FAILURE(fillOnStreams());
    ASSERT_NO_FATAL_FAILURE(allReduceInPlace(buffers_, streams_));
    ASSERT_NO_FATAL_FAILURE(expectEveryElement(3.0f)) << count << " elements";
  }
}

TEST_F(OneGpuClique, AbortEndsAKernelWaitingForAPeer) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "abort of a kernel waiting for a peer");
  ASSERT_NO_FATAL_FAILURE(start(2, 1 << 20));  // ranks of one process: the direct kernel
  ASSERT_NO_FATAL_FAILURE(
      abortWhileALoneCallWaits(0, 0, "direct allreduce: waiting for rank 1 to publish its buffers for call 2"));
}

TEST_F(OneGpuClique, AbortEndsALowLatencyKernelWaitingForAPeer) {
  SKIP_WITHOUT_GPU();
  harness::ScopedEnv ring("WEFT_GPU_DIRECT", "0");
  harness::DeadlineGuard guard(kDeadline, "abort of an LL kernel waiting for a peer");
  ASSERT_NO_FATAL_FAILURE(start(2, 1024));  // 4 KiB: LL pieces, each receiving thread polls its lines
  ASSERT_NO_FATAL_FAILURE(abortWhileALoneCallWaits(0, 0, "waiting for an LL line from rank 1 on channel "));
}

TEST_F(OneGpuClique, AbortingTheRankAPeerWaitsForEndsThePeersKernel) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "abort of the rank a peer's kernel waits for");
  ASSERT_NO_FATAL_FAILURE(start(2, 1 << 20));
  ASSERT_NO_FATAL_FAILURE(
      abortWhileALoneCallWaits(1, 0, "direct allreduce: waiting for rank 0 to publish its buffers for call 2"));
}

TEST_F(OneGpuClique, AbortingTheRankARingKernelWaitsForEndsIt) {
  SKIP_WITHOUT_GPU();
  harness::ScopedEnv ring("WEFT_GPU_DIRECT", "0");
  harness::DeadlineGuard guard(kDeadline, "abort of the rank a peer's ring kernel waits for");
  ASSERT_NO_FATAL_FAILURE(start(2, 1 << 20));
  ASSERT_NO_FATAL_FAILURE(abortWhileALoneCallWaits(1, 0, "waiting to receive from rank 0 on channel "));
}

TEST_F(OneGpuClique, WeftTimeoutEndsAKernelStuckOnAPeerThatNeverCalls) {
  SKIP_WITHOUT_GPU();
  harness::ScopedEnv timeout("WEFT_TIMEOUT", "2");
  harness::DeadlineGuard guard(kDeadline, "WEFT_TIMEOUT on a kernel waiting for a peer");
  ASSERT_NO_FATAL_FAILURE(start(2, 1 << 20));  // the direct kernel
  ASSERT_NO_FATAL_FAILURE(allReduceInPlace(buffers_, streams_));
  for (cudaStream_t stream : streams_) ASSERT_CUDA(cudaStreamSynchronize(stream));
  const auto calledAt = std::chrono::steady_clock::now();
  ASSERT_TRUE(ncclSucceeded(ncclAllReduce(buffers_[0], buffers_[0], count_, ncclFloat32, ncclSum, comms_[0],
                                          streams_[0])));
  ASSERT_CUDA(cudaStreamSynchronize(streams_[0]));  // the kernel gave up: the stream goes on
  const auto waited = std::chrono::steady_clock::now() - calledAt;
  EXPECT_GE(waited, std::chrono::seconds(2));
  EXPECT_LT(waited, std::chrono::seconds(15));
  ncclResult_t asyncError = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comms_[0], &asyncError), ncclSuccess);
  EXPECT_EQ(asyncError, ncclRemoteError);
  EXPECT_EQ(ncclCommFinalize(comms_[0]), ncclRemoteError);
  const std::string why = ncclGetLastError(comms_[0]);
  EXPECT_NE(why.find("its GPU kernel made no progress for "), std::string::npos) << why;
  EXPECT_NE(why.find("direct allreduce: waiting for rank 1 to publish its buffers for call 2"), std::string::npos)
      << why;
  EXPECT_EQ(ncclCommAbort(comms_[0]), ncclSuccess);
  comms_[0] = nullptr;
}

TEST_F(OneGpuClique, WeftTimeoutSparesKernelsHeldBehindTheirStreamsEarlierWork) {
  SKIP_WITHOUT_GPU();
  harness::ScopedEnv timeout("WEFT_TIMEOUT", "1");
  harness::ScopedEnv ring("WEFT_GPU_DIRECT", "0");
  harness::DeadlineGuard guard(kDeadline, "WEFT_TIMEOUT on kernels held behind their streams");
  ASSERT_NO_FATAL_FAILURE(start(2, (size_t{1} << 20) + 5));
  ASSERT_NO_FATAL_FAILURE(allReduceInPlace(buffers_, streams_));  // a first kernel, done
  for (cudaStream_t stream : streams_) ASSERT_CUDA(cudaStreamSynchronize(stream));
  ASSERT_NO_FATAL_FAILURE(fillOnStreams());
  for (cudaStream_t stream : streams_) ASSERT_CUDA(cudaLaunchHostFunc(stream, holdStream, &gate_));
  ASSERT_NO_FATAL_FAILURE(allReduceInPlace(buffers_, streams_));
  std::this_thread::sleep_for(std::chrono::seconds(3));  // three timeouts with the kernels in flight, not started
  gate_.store(true);
  expectEveryElement(3.0f);
  for (ncclComm_t comm : comms_) {
    ncclResult_t asyncError = ncclInternalError;
    EXPECT_EQ(ncclCommGetAsyncError(comm, &asyncError), ncclSuccess);
    EXPECT_EQ(asyncError, ncclSuccess);
  }
}

}  // namespace
}  // namespace weft::gpu_tests
