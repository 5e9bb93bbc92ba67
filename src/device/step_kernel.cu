// The step kernel: each thread block runs its lanes' steps through the connections' slots (in GPU
// memory for cuda_ipc, in pinned host memory where a network proxy carries them), as the host
// executor does through host connections (src/exec/host_executor.cc).
//
// Per piece, thread 0 waits (acquire loads, polling ncclCommAbort's flag) until the received
// slot is posted and the slot to send into is free, and leaves the slots' addresses in shared
// memory; the whole block then moves the piece; after a barrier thread 0 publishes the sent slot
// (its byte count first, where the connection has a count per slot) and returns the received one
// (release stores). The work's tables live in pinned host memory: the block reads a lane's
// steps and their connections into shared memory as the lane starts (kCachedSteps), and only a
// longer lane's pieces read them, by thread 0.

#include <cstring>

#include "src/device/block_loops.h"
#include "src/device/block_progress.cuh"
#include "src/device/device_reduce.cuh"
#include "src/device/direct_allreduce.cuh"
#include "src/device/nvls_allreduce.cuh"
#include "src/device/step_kernel.h"
#include "transport/cuda_ipc/cuda_call.h"

namespace weft::device {
namespace {

constexpr int kThreads = kStepKernelThreads;

__device__ unsigned long long loadAcquire(const unsigned long long* address) {
  unsigned long long value;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(value) : "l"(address) : "memory");
  return value;
}

__device__ void storeRelease(unsigned long long* address, unsigned long long value) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(address), "l"(value) : "memory");
}

__device__ bool aborted(const volatile int* flag) { return flag != nullptr && *flag != 0; }

// Thread 0 only. Waits until the connection holds a posted slot beyond `consumed`. False if the
// communicator was aborted. A long wait is recorded for hang reports.
__device__ bool waitPosted(const KernelConnection& connection, unsigned long long consumed,
                           const volatile int* abortFlag, const BlockProgressWriter& progress, const WaitSite& site) {
  RecordedWait wait(progress);
  for (int polls = 0;; ++polls) {
    const unsigned long long posted = loadAcquire(connection.posted);
    if (posted > consumed) break;
    if (polls == kPollsPerAbortCheck) {
      if (aborted(abortFlag)) return false;
      wait.note(core::BlockActivity::kReceiving, connection.peer, connection.channel, site, posted, consumed + 1);
      polls = 0;
    }
  }
  wait.end();
  return true;
}

// Thread 0 only. Waits until the slot after `posted` is free (the receiver released enough).
__device__ bool waitFree(const KernelConnection& connection, unsigned long long posted,
                         const volatile int* abortFlag, const BlockProgressWriter& progress, const WaitSite& site) {
  RecordedWait wait(progress);
  for (int polls = 0;; ++polls) {
    const unsigned long long released = loadAcquire(connection.released);
    if (posted - released < connection.slotCount) break;
    if (polls == kPollsPerAbortCheck) {
      if (aborted(abortFlag)) return false;
      wait.note(core::BlockActivity::kSending, connection.peer, connection.channel, site, released,
                posted - connection.slotCount + 1);
      polls = 0;
    }
  }
  wait.end();
  return true;
}

// Where an LL piece's lines come from, for the record of a long wait.
struct LineSource {
  const BlockProgressWriter& progress;
  WaitSite site;
  int32_t peer;
  int32_t channel;
};

// The `valid` (1 to 8) bytes at `address` as the low bytes of a word; one load where aligned.
__device__ uint64_t loadBytes(const char* address, uint64_t valid) {
  if (valid == 8 && (reinterpret_cast<uintptr_t>(address) & 7) == 0) return *reinterpret_cast<const uint64_t*>(address);
  uint64_t word = 0;
  for (uint64_t i = 0; i < valid; ++i) word |= static_cast<uint64_t>(static_cast<unsigned char>(address[i])) << (8 * i);
  return word;
}

__device__ void storeBytes(char* address, uint64_t word, uint64_t valid) {
  if (valid == 8 && (reinterpret_cast<uintptr_t>(address) & 7) == 0) {
    *reinterpret_cast<uint64_t*>(address) = word;
    return;
  }
  for (uint64_t i = 0; i < valid; ++i) address[i] = static_cast<char>(word >> (8 * i));
}

// Waits until the LL line at `line` carries `flag` in both halves and returns its 8 data bytes.
// False if the communicator was aborted. A long wait is recorded for hang reports (`from`: the
// connection's peer and channel).
__device__ bool readLine(const char* line, uint32_t flag, const volatile int* abortFlag, uint64_t* data,
                         const LineSource& from) {
  RecordedWait wait(from.progress);
  for (int polls = 0;; ++polls) {
    uint32_t low, flag1, high, flag2;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(low), "=r"(flag1), "=r"(high), "=r"(flag2)
                 : "l"(line)
                 : "memory");
    if (flag1 == flag && flag2 == flag) {
      *data = static_cast<uint64_t>(low) | (static_cast<uint64_t>(high) << 32);
      wait.end();
      return true;
    }
    if (polls == kPollsPerAbortCheck) {
      if (aborted(abortFlag)) return false;
      wait.note(core::BlockActivity::kReceivingLine, from.peer, from.channel, from.site, flag1, flag);
      polls = 0;
    }
  }
}

__device__ void writeLine(char* line, uint64_t data, uint32_t flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(line), "r"(static_cast<uint32_t>(data)),
               "r"(flag), "r"(static_cast<uint32_t>(data >> 32)), "r"(flag)
               : "memory");
}

__device__ char* bufferBase(const KernelLane& lane, uint8_t buffer) {
  return buffer == kSendBuffer ? lane.sendbuff : buffer == kRecvBuffer ? lane.recvbuff : nullptr;
}

// The pointers of one piece, as the body sees them. `dst` or `slot` (or both) is set.
struct Piece {
  const char* src;       // local input, or null
  const char* received;  // the received slot, or null
  char* dst;             // local output, or null
  char* slot;            // the slot to send, or null
  uint64_t units;
  bool contribute;
  bool finalize;
};

// Moves an LL piece: each thread takes 8-byte words of it, waits for each received line's flags,
// combines it with the local input as `body` does, and writes the local output and the sent line
// (flag `sendFlag`). False if the communicator was aborted.
template <class Body>
__device__ bool moveLowLatencyPiece(const Piece& piece, uint64_t unitBytes, uint32_t receiveFlag, uint32_t sendFlag,
                                    const volatile int* abortFlag, const LineSource& from, const Body& body) {
  const uint64_t bytes = piece.units * unitBytes;
  const uint64_t words = (bytes + kLowLatencyLineData - 1) / kLowLatencyLineData;
  for (uint64_t w = threadIdx.x; w < words; w += blockDim.x) {
    const uint64_t offset = w * kLowLatencyLineData;
    const uint64_t valid = min(kLowLatencyLineData, bytes - offset);
    uint64_t received = 0;
    if (piece.received != nullptr &&
        !readLine(piece.received + w * kLowLatencyLineBytes, receiveFlag, abortFlag, &received, from)) {
      return false;
    }
    const uint64_t local = piece.src != nullptr ? loadBytes(piece.src + offset, valid) : 0;
    const uint64_t word = body.combineWord(piece, received, local, valid);
    if (piece.dst != nullptr) storeBytes(piece.dst + offset, word, valid);
    if (piece.slot != nullptr) writeLine(piece.slot + w * kLowLatencyLineBytes, word, sendFlag);
  }
  return true;
}

// Steps of a lane that its block reads into shared memory when the lane starts, with their
// connections: every thread reads one step, so the lane waits once for pinned host memory rather
// than at every piece (a ring allreduce's lanes have 2n - 1 steps: 32 ranks and fewer fit, in
// under 12 KiB). Thread 0 reads each piece's step and connections of a longer lane.
constexpr uint32_t kCachedSteps = 64;

template <class Body>
__device__ void runLanes(const KernelWork& work, const BlockProgressWriter& progress, const Body& body) {
  __shared__ KernelLane lane;
  __shared__ KernelStep laneSteps[kCachedSteps];
  __shared__ KernelConnection laneReceives[kCachedSteps];  // each cached step's connections
  __shared__ KernelConnection laneSends[kCachedSteps];
  __shared__ KernelStep step;
  __shared__ unsigned long long receivedIndex;
  __shared__ unsigned long long sentIndex;
  // The piece's slots and the counters thread 0 publishes, from the step's connections, which
  // only thread 0 reads once the lane has started.
  __shared__ char* receivedSlot;
  __shared__ char* sendSlot;
  __shared__ unsigned long long* sendPosted;
  __shared__ unsigned long long* sendSize;  // the sent slot's byte count (a proxied connection's)
  __shared__ unsigned long long* recvReleased;
  __shared__ char* cleanSlot;  // the LL slot whose lines this piece refreshes (kLowLatencyCleanMask)
  __shared__ uint64_t cleanLines;
  __shared__ int32_t receivedPeer;  // the received slot's connection, for the record of a long LL wait
  __shared__ int32_t receivedChannel;
  __shared__ int action;  // 0: run the piece, 1: no piece of this step in this round, 2: aborted
  __shared__ bool abortedInPiece;  // set (never cleared) by a thread whose LL wait saw the abort
  __shared__ KernelBlock block;
  const bool lowLatency = work.lowLatency != 0;
  if (threadIdx.x == 0) {
    block = work.blocks[blockIdx.x];
    abortedInPiece = false;
  }
  __syncthreads();
  for (uint32_t l = 0; l < block.laneCount; ++l) {
    if (threadIdx.x == 0) lane = work.lanes[block.firstLane + l];
    __syncthreads();
    const bool cached = lane.stepCount <= kCachedSteps;
    if (cached && threadIdx.x < lane.stepCount) {
      const KernelStep mine = work.steps[lane.firstStep + threadIdx.x];
      laneSteps[threadIdx.x] = mine;
      if (mine.recvConnection >= 0) laneReceives[threadIdx.x] = work.connections[mine.recvConnection];
      if (mine.sendConnection >= 0) laneSends[threadIdx.x] = work.connections[mine.sendConnection];
    }
    __syncthreads();
    for (uint64_t round = 0; round < lane.rounds; ++round) {
      const uint64_t begin = round * work.pieceUnits;
      for (uint32_t s = 0; s < lane.stepCount; ++s) {
        WaitSite site;
        site.lane = l;
        site.step = s;
        site.steps = lane.stepCount;
        site.piece = round;
        if (threadIdx.x == 0) {
          step = cached ? laneSteps[s] : work.steps[lane.firstStep + s];
          action = begin >= step.count ? 1 : 0;
          receivedSlot = sendSlot = cleanSlot = nullptr;
          sendPosted = sendSize = recvReleased = nullptr;
          if (action == 0 && step.recvConnection >= 0) {
            const KernelConnection recv = cached ? laneReceives[s] : work.connections[step.recvConnection];
            receivedIndex = *reinterpret_cast<volatile unsigned long long*>(recv.released);
            const uint64_t slot = receivedIndex % recv.slotCount;
            if (lowLatency) {
              receivedSlot = recv.llSlots + slot * recv.llSlotBytes;  // each line says when it is there
            } else {
              if (!waitPosted(recv, receivedIndex, work.abortFlag, progress, site)) action = 2;
              receivedSlot = recv.slots + slot * recv.slotBytes;
            }
            recvReleased = recv.released;
            receivedPeer = recv.peer;
            receivedChannel = recv.channel;
          }
          if (action == 0 && step.sendConnection >= 0) {
            const KernelConnection send = cached ? laneSends[s] : work.connections[step.sendConnection];
            sentIndex = *reinterpret_cast<volatile unsigned long long*>(send.posted);
            if (!waitFree(send, sentIndex, work.abortFlag, progress, site)) action = 2;
            const uint64_t slot = sentIndex % send.slotCount;
            sendSlot = lowLatency ? send.llSlots + slot * send.llSlotBytes : send.slots + slot * send.slotBytes;
            sendPosted = send.posted;
            if (send.sizes != nullptr) sendSize = send.sizes + slot;
            if (send.llSlots != nullptr && (sentIndex & kLowLatencyCleanMask) == kLowLatencyCleanMask) {
              cleanSlot = send.llSlots + slot * send.llSlotBytes;
              cleanLines = send.llSlotBytes / kLowLatencyLineBytes;
            }
          }
        }
        __syncthreads();
        if (action == 2) return;
        if (action == 1) {
          __syncthreads();  // every thread has read `action` before thread 0 writes the next one
          continue;
        }
        Piece piece;
        piece.received = receivedSlot;
        piece.slot = sendSlot;
        char* src = bufferBase(lane, step.srcBuffer);
        char* dst = bufferBase(lane, step.dstBuffer);
        piece.src = src != nullptr ? src + (step.srcOffset + begin) * work.unitBytes : nullptr;
        piece.dst = dst != nullptr ? dst + (step.dstOffset + begin) * work.unitBytes : nullptr;
        piece.units = min(step.count - begin, work.pieceUnits);
        piece.contribute = step.contribute != 0;
        piece.finalize = step.finalize != 0;
        const uint32_t sendFlag = static_cast<uint32_t>(sentIndex + 1);
        if (lowLatency) {
          const LineSource from{progress, site, receivedPeer, receivedChannel};
          const bool moved = moveLowLatencyPiece(piece, work.unitBytes, static_cast<uint32_t>(receivedIndex + 1),
                                                 sendFlag, work.abortFlag, from, body);
          if (!moved) abortedInPiece = true;
        } else {
          body(piece);
        }
        if (cleanSlot != nullptr) {
          // The lines this piece left (all of them for a Simple piece): the slot is free, since the
          // receiver has released the piece before this one in it.
          const uint64_t filled =
              lowLatency ? (piece.units * work.unitBytes + kLowLatencyLineData - 1) / kLowLatencyLineData : 0;
          for (uint64_t line = filled + threadIdx.x; line < cleanLines; line += blockDim.x) {
            writeLine(cleanSlot + line * kLowLatencyLineBytes, 0, sendFlag);
          }
        }
        __syncthreads();
        if (abortedInPiece) return;
        if (threadIdx.x == 0) {
          if (!lowLatency) {
            if (sendSize != nullptr) *sendSize = piece.units * work.unitBytes;
            __threadfence_system();  // the piece before its count (LL lines carry their own flags)
          }
          if (sendPosted != nullptr) storeRelease(sendPosted, sentIndex + 1);
          if (recvReleased != nullptr) storeRelease(recvReleased, receivedIndex + 1);
        }
      }
    }
    __syncthreads();  // every thread is done with `lane` and its steps before the next are read
  }
}

// Reducing launches: units are elements of Math::Storage.
template <class Math, RedOpKind kKind>
struct ReduceBody {
  using Storage = typename Math::Storage;
  static constexpr bool kReduces = true;
  using Nvls = NvlsArithmetic<Math, kKind>;
  Reducer<Math, kKind> reducer;

  // One element of the piece's output from the received one and the local one (either unused
  // where the piece has none).
  __device__ Storage element(const Piece& piece, Storage received, Storage local) const {
    if (!piece.contribute) return piece.received != nullptr ? received : local;
    const Storage value = piece.received != nullptr ? reducer.reduce(received, local) : reducer.scale(local);
    return piece.finalize ? reducer.finish(value) : value;
  }

  __device__ void operator()(const Piece& piece) const {
    combineElements(reinterpret_cast<const Storage*>(piece.received), reinterpret_cast<const Storage*>(piece.src),
                    reinterpret_cast<Storage*>(piece.dst != nullptr ? piece.dst : piece.slot),
                    reinterpret_cast<Storage*>(piece.dst != nullptr ? piece.slot : nullptr), piece.units, threadIdx.x,
                    blockDim.x, [&](Storage received, Storage local) { return element(piece, received, local); });
  }

  // An LL word: the elements among its first `valid` bytes.
  __device__ uint64_t combineWord(const Piece& piece, uint64_t received, uint64_t local, uint64_t valid) const {
    constexpr int kElements = kLowLatencyLineData / sizeof(Storage);
    union Word {
      uint64_t bits;
      Storage values[kElements];
    };
    Word in{received};
    Word mine{local};
    Word out{0};
#pragma unroll
    for (int e = 0; e < kElements; ++e) {
      if (e * sizeof(Storage) < valid) out.values[e] = element(piece, in.values[e], mine.values[e]);
    }
    return out.bits;
  }
};

// Copy launches: units are bytes.
struct CopyBody {
  static constexpr bool kReduces = false;
  __device__ uint64_t combineWord(const Piece& piece, uint64_t received, uint64_t local, uint64_t) const {
    return piece.received != nullptr ? received : local;
  }

  __device__ void operator()(const Piece& piece) const {
    const char* from = piece.received != nullptr ? piece.received : piece.src;
    char* out = piece.dst != nullptr ? piece.dst : piece.slot;
    char* out2 = piece.dst != nullptr ? piece.slot : nullptr;
    if (from == out) {
      if (out2 == nullptr) return;  // in place, nothing to send
      out = out2;
      out2 = nullptr;
    }
    copyBytes(from, out, out2, piece.units, threadIdx.x, blockDim.x);
  }
};

template <class Body>
__device__ void runWork(const KernelWork& work, const BlockProgressWriter& progress, Body& body) {
  if constexpr (Body::kReduces) {
    // ncclScalarDevice: the multiplier as it is when the kernel runs (each replay of a graph too).
    if (work.scalarAt != nullptr) memcpy(&body.reducer.scalar, work.scalarAt, sizeof(body.reducer.scalar));
    if (work.direct.boards != nullptr) {
      runDirectAllReduce(work, progress, body.reducer);
      return;
    }
    if constexpr (Body::Nvls::kSupported) {
      if (work.nvls.unicast != nullptr) {
        runNvlsAllReduce<typename Body::Nvls>(work, progress);
        return;
      }
    }
  }
  runLanes(work, progress, body);
}

template <class Body>
__global__ void __launch_bounds__(kThreads, 1) stepKernel(KernelWork work, Body body) {
  __shared__ unsigned int waitClaim;
  if (threadIdx.x == 0) waitClaim = 0;
  __syncthreads();
  const BlockProgressWriter progress(work, &waitClaim);
  if (threadIdx.x == 0) progress.started();
  runWork(work, progress, body);
  if (threadIdx.x == 0) progress.done();
}

// Enqueues the kernel for `Body`; with no `work`, only loads its code onto the current device.
template <class Body>
Status launch(const KernelWork* work, int blockCount, const Body& body, cudaStream_t stream) {
  if (work == nullptr) {
    cudaFuncAttributes attributes;
    return cudaStatus(cudaFuncGetAttributes(&attributes, stepKernel<Body>), "loading a step kernel");
  }
  // cudaLaunchKernel returns the launch's own error; a `<<<>>>` launch leaves it in the thread's
  // last error, which may still hold an earlier call's handled one (cudaEventQuery's NotReady).
  void* arguments[] = {const_cast<KernelWork*>(work), const_cast<Body*>(&body)};
  return cudaStatus(cudaLaunchKernel(stepKernel<Body>, dim3(blockCount), dim3(kThreads), arguments, 0, stream),
                    "launching the step kernel");
}

template <class Math, RedOpKind kKind>
Status launchReduce(const KernelWork* work, int blockCount, cudaStream_t stream) {
  ReduceBody<Math, kKind> body;
  if (work != nullptr) {
    std::memcpy(&body.reducer.scalar, &work->scalar, sizeof(body.reducer.scalar));
    body.reducer.divisor = work->divisor;
  }
  return launch(work, blockCount, body, stream);
}

template <class Math>
Status launchForType(const KernelWork* work, int blockCount, RedOpKind kind, cudaStream_t stream) {
  switch (kind) {
    case RedOpKind::kSum: return launchReduce<Math, RedOpKind::kSum>(work, blockCount, stream);
    case RedOpKind::kProd: return launchReduce<Math, RedOpKind::kProd>(work, blockCount, stream);
    case RedOpKind::kMax: return launchReduce<Math, RedOpKind::kMax>(work, blockCount, stream);
    case RedOpKind::kMin: return launchReduce<Math, RedOpKind::kMin>(work, blockCount, stream);
    case RedOpKind::kPreMulSum: return launchReduce<Math, RedOpKind::kPreMulSum>(work, blockCount, stream);
  }
  return internalError("reduction kind %d has no GPU kernel", static_cast<int>(kind));
}

// The kernel of `reduction` (the copy kernel if null): launched with `work`, or only loaded.
Status dispatch(const KernelWork* work, int blockCount, const algorithms::Reduction* reduction, cudaStream_t stream) {
  if (reduction == nullptr) return launch(work, blockCount, CopyBody{}, stream);
  using algorithms::DataType;
  const RedOpKind kind = reduction->kind;
  switch (reduction->type) {
    case DataType::kInt8: return launchForType<IntegerMath<int8_t>>(work, blockCount, kind, stream);
    case DataType::kUint8: return launchForType<IntegerMath<uint8_t>>(work, blockCount, kind, stream);
    case DataType::kInt32: return launchForType<IntegerMath<int32_t>>(work, blockCount, kind, stream);
    case DataType::kUint32: return launchForType<IntegerMath<uint32_t>>(work, blockCount, kind, stream);
    case DataType::kInt64: return launchForType<IntegerMath<int64_t>>(work, blockCount, kind, stream);
    case DataType::kUint64: return launchForType<IntegerMath<uint64_t>>(work, blockCount, kind, stream);
    case DataType::kFloat16: return launchForType<NarrowMath<HalfCodec>>(work, blockCount, kind, stream);
    case DataType::kFloat32: return launchForType<FloatMath>(work, blockCount, kind, stream);
    case DataType::kFloat64: return launchForType<DoubleMath>(work, blockCount, kind, stream);
    case DataType::kBfloat16: return launchForType<NarrowMath<Bfloat16Codec>>(work, blockCount, kind, stream);
    case DataType::kFloat8e4m3: return launchForType<NarrowMath<Fp8Codec<__NV_E4M3>>>(work, blockCount, kind, stream);
    case DataType::kFloat8e5m2: return launchForType<NarrowMath<Fp8Codec<__NV_E5M2>>>(work, blockCount, kind, stream);
  }
  return internalError("data type %d has no GPU kernel", static_cast<int>(reduction->type));
}

}  // namespace

Status launchStepKernel(const KernelWork& work, int blockCount, const algorithms::Reduction* reduction,
                        cudaStream_t stream) {
  if (blockCount == 0) return Status::ok();
  return dispatch(&work, blockCount, reduction, stream);
}

Status loadStepKernels() {
  WEFT_RETURN_IF_ERROR(dispatch(nullptr, 0, nullptr, nullptr));
  for (int type = 0; type < algorithms::kNumDataTypes; ++type) {
    for (int kind = 0; kind < algorithms::kNumRedOpKinds; ++kind) {
      algorithms::Reduction reduction;
      reduction.type = static_cast<algorithms::DataType>(type);
      reduction.kind = static_cast<algorithms::RedOpKind>(kind);
      WEFT_RETURN_IF_ERROR(dispatch(nullptr, 0, &reduction, nullptr));
    }
  }
  return Status::ok();
}

}  // namespace weft::device
