#pragma once
// The tuner of the GPU path's allreduce among GPUs of one host: the ring, or NVLS where the
// communicator's GPUs form a multicast team (src/device/nvls_plan.h) and the switches reduce the
// call's type and op. The model is NCCL's for Hopper NVLink (src/graph/tuning.cc): a ring call
// costs a base latency and a latency per step, and moves 2(n-1)/n S per rank; an NVLS call costs
// one latency and moves S per rank at a share of the same links' bandwidth b:
//   ring   a_ring + 2(n-1) a_step + 2(n-1)/n S / b
//   NVLS   a_nvls + S / (e b)
// With NCCL's constants the ring wins at two GPUs (whose ring moves S once each way), NVLS at
// three from about 3 MB, and NVLS at four and more. No GPU machine with NVSwitches has checked
// these constants for Weft's kernels.

#include <cstddef>

#include "algorithms/algorithm_filter.h"
#include "algorithms/protocol_filter.h"

namespace weft::algorithms {

struct GpuCostModel {
  double ringLatencyUs = 8.4;       // NCCL's base latency of a ring call (Simple)
  double ringStepLatencyUs = 3.4;   // NCCL's NVLink latency per ring step (Simple)
  double nvlsLatencyUs = 23;        // NCCL's NVLink latency of an NVLS call
  double nvlsEfficiency = 5.0 / 6;  // NCCL's NVLS bandwidth as a share of the links'
  double nvlinkBandwidthGBps = 360;  // a Hopper GPU's NVLink (18 links of 20 GB/s in NCCL's model)
};

/// Predicted microseconds of an allreduce of `bytes` over `nranks` GPUs of one host by the ring or
/// NVLS (infinity for any other algorithm).
double predictGpuAllReduceMicroseconds(Algorithm algorithm, int nranks, size_t bytes, const GpuCostModel& model);

/// The faster of the ring and, where `nvlsOffered`, NVLS, among those `filter` allows for
/// AllReduce (the ring wins a tie); false where it allows neither that is on offer.
bool chooseGpuAllReduce(int nranks, size_t bytes, bool nvlsOffered, const AlgorithmFilter& filter,
                        const GpuCostModel& model, Algorithm* chosen);

/// Whether chooseGpuAllReduce picks NVLS for some size at `nranks` when it is offered: NCCL_PROTO
/// allowing Simple for AllReduce (NVLS's only protocol, as in NCCL), NCCL_ALGO allowing NVLS, and
/// either NCCL_ALGO excluding the ring or the model preferring NVLS somewhere. The predictions are
/// linear in the size, so comparing them at the least and a huge size suffices. A communicator
/// makes its multicast team only where this holds.
bool nvlsCanBeChosen(int nranks, const AlgorithmFilter& algorithms, const ProtocolFilter& protocols,
                     const GpuCostModel& model);

}  // namespace weft::algorithms
