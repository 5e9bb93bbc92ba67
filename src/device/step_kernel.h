#pragma once
// Launching the step kernel: one thread block per entry of KernelWork::blocks, on a stream.
// One kernel per (type, op) for reducing launches and one byte-copy kernel for the rest, chosen
// here at run time; a reducing kernel runs either lanes of step programs or the direct allreduce
// (src/device/direct_allreduce.h), as its work says.

#include <cuda_runtime_api.h>

#include "algorithms/datatype.h"
#include "src/base/status.h"
#include "src/device/kernel_work.h"

namespace weft::device {

/// Threads in each block of the step kernel.
inline constexpr int kStepKernelThreads = 512;

/// Enqueues `work` with `blockCount` blocks on `stream`, on the current device (for a direct
/// allreduce, work.direct.blocksPerRank blocks). `reduction` is
/// null for a copy launch (units are bytes), else the launch's type and op (units are elements).
/// The tables `work` points to must stay readable until the kernel ends.
Status launchStepKernel(const KernelWork& work, int blockCount, const algorithms::Reduction* reduction,
                        cudaStream_t stream);

/// Loads the code of every step kernel onto the current device now. Under CUDA's lazy loading
/// (the default) a kernel's first launch loads it, which can wait for every kernel already on the
/// device; ranks of one process sharing a GPU would deadlock there (one rank's kernel waits for a
/// peer whose launch waits for it). So every GPU rank calls this while its communicator is made
/// (as NCCL loads its kernels at init) where the process already uses the GPU, else when the
/// communicator's GPU resources are made, before its first kernel (preloadKernels).
Status loadStepKernels();

}  // namespace weft::device
