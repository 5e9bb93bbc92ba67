// The step kernel: each thread block runs its lanes (src/device/lane_loop.h), the direct
// allreduce (direct_allreduce.cuh) or the NVLS one (nvls_allreduce.cuh); one kernel per type and
// reduction kind, and one for copies (src/device/piece_bodies.h).

#include <cstring>

#include "src/device/block_loops.h"
#include "src/device/block_progress.cuh"
#include "src/device/direct_allreduce.cuh"
#include "src/device/nvls_allreduce.cuh"
#include "src/device/piece_bodies.h"
#include "src/device/step_kernel.h"
#include "transport/cuda_ipc/cuda_call.h"

namespace weft::device {
namespace {

constexpr int kThreads = kStepKernelThreads;

// A block of the GPU, as the lane loop sees it (src/device/lane_loop.h).
class DeviceBlock {
 public:
  class Wait : public RecordedWait {
   public:
    __device__ explicit Wait(const DeviceBlock& block) : RecordedWait(block.progress_) {}
  };

  __device__ DeviceBlock(LaneLoopShared& shared, const BlockProgressWriter& progress)
      : shared_(shared), progress_(progress) {}

  __device__ uint32_t thread() const { return threadIdx.x; }
  __device__ uint32_t threads() const { return blockDim.x; }
  __device__ void sync() const { __syncthreads(); }
  __device__ LaneLoopShared& shared() const { return shared_; }

  __device__ unsigned long long loadAcquire(const unsigned long long* address) const {
    unsigned long long value;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(value) : "l"(address) : "memory");
    return value;
  }
  __device__ void storeRelease(unsigned long long* address, unsigned long long value) const {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(address), "l"(value) : "memory");
  }
  __device__ unsigned long long loadOwn(const unsigned long long* address) const {
    return *reinterpret_cast<const volatile unsigned long long*>(address);
  }
  __device__ void fenceSystem() const { __threadfence_system(); }

  __device__ void loadLine(const char* line, uint32_t words[4]) const {
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(words[0]), "=r"(words[1]), "=r"(words[2]), "=r"(words[3])
                 : "l"(line)
                 : "memory");
  }
  __device__ void storeLine(char* line, const uint32_t words[4]) const {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(line), "r"(words[0]), "r"(words[1]),
                 "r"(words[2]), "r"(words[3])
                 : "memory");
  }
  __device__ bool aborted(const volatile int* flag) const { return flag != nullptr && *flag != 0; }

 private:
  LaneLoopShared& shared_;
  const BlockProgressWriter& progress_;
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
    using Nvls = NvlsArithmetic<typename Body::Math, Body::kKind>;
    if constexpr (Nvls::kSupported) {
      if (work.nvls.unicast != nullptr) {
        runNvlsAllReduce<Nvls>(work, progress);
        return;
      }
    }
  }
  __shared__ alignas(LaneLoopShared) unsigned char sharedBytes[sizeof(LaneLoopShared)];
  DeviceBlock block(*reinterpret_cast<LaneLoopShared*>(sharedBytes), progress);
  runLanes(block, work, blockIdx.x, body);
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
