// The step kernel: each thread block runs its lanes (src/device/lane_loop.h), the direct
// allreduce (direct_allreduce.h) or the NVLS one (nvls_allreduce.h); one kernel per type and
// reduction kind, and one for copies (src/device/piece_bodies.h).

#include <cstring>

#include "src/device/block_progress.cuh"
#include "src/device/device_block.cuh"
#include "src/device/direct_allreduce.h"
#include "src/device/lane_loop.h"
#include "src/device/nvls_allreduce.h"
#include "src/device/nvls_switch.cuh"
#include "src/device/piece_bodies.h"
#include "src/device/step_kernel.h"
#include "transport/cuda_ipc/cuda_call.h"

namespace weft::device {
namespace {

constexpr int kThreads = kStepKernelThreads;

template <class Body>
__device__ __forceinline__ void runWork(DeviceBlock& block, const KernelWork& work, Body& body) {
  if constexpr (Body::kReduces) {
    // ncclScalarDevice: the multiplier as it is when the kernel runs (each replay of a graph too).
    if (work.scalarAt != nullptr) memcpy(&body.reducer.scalar, work.scalarAt, sizeof(body.reducer.scalar));
    if (work.direct.boards != nullptr) {
      runDirectAllReduce(block, work, blockIdx.x, body.reducer);
      return;
    }
    using Nvls = NvlsArithmetic<typename Body::Math, Body::kKind>;
    if constexpr (Nvls::kSupported) {
      if (work.nvls.unicast != nullptr) {
        runNvlsAllReduce(block, work, blockIdx.x, DeviceNvlsFabric<Nvls>{});
        return;
      }
    }
  }
  runLanes(block, work, blockIdx.x, body);
}

template <class Body>
__global__ void __launch_bounds__(kThreads, 1) stepKernel(KernelWork work, Body body) {
  __shared__ unsigned int waitClaim;
  // Raw bytes that each loop views as its own state (kernel_block.h): a block runs one loop, so the
  // lanes' and the direct allreduce's share them, and nvcc would run no constructor of theirs.
  __shared__ alignas(16) unsigned char sharedBytes[kBlockSharedBytes];
  if (threadIdx.x == 0) waitClaim = 0;
  __syncthreads();
  const BlockProgressWriter progress(work, &waitClaim);
  if (threadIdx.x == 0) progress.started();
  DeviceBlock block(sharedBytes, progress);
  runWork(block, work, body);
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
