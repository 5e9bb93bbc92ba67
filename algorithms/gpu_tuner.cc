#include "algorithms/gpu_tuner.h"

#include <limits>

namespace weft::algorithms {

double predictGpuAllReduceMicroseconds(Algorithm algorithm, int nranks, size_t bytes, const GpuCostModel& model) {
  const double megabytes = static_cast<double>(bytes) / 1e6;  // MB at GB/s gives milliseconds: x 1e3 for us
  const double n = nranks;
  switch (algorithm) {
    case Algorithm::kRing:
      return model.ringLatencyUs + 2 * (n - 1) * model.ringStepLatencyUs +
             2 * (n - 1) / n * megabytes / model.nvlinkBandwidthGBps * 1e3;
    case Algorithm::kNvls:
      return model.nvlsLatencyUs + megabytes / (model.nvlsEfficiency * model.nvlinkBandwidthGBps) * 1e3;
    default: return std::numeric_limits<double>::infinity();
  }
}

bool chooseGpuAllReduce(int nranks, size_t bytes, bool nvlsOffered, const AlgorithmFilter& filter,
                        const GpuCostModel& model, Algorithm* chosen) {
  const bool ring = filter.allows(Collective::kAllReduce, Algorithm::kRing);
  const bool nvls = nvlsOffered && filter.allows(Collective::kAllReduce, Algorithm::kNvls);
  if (!ring && !nvls) return false;
  if (ring && nvls) {
    const double ringTime = predictGpuAllReduceMicroseconds(Algorithm::kRing, nranks, bytes, model);
    const double nvlsTime = predictGpuAllReduceMicroseconds(Algorithm::kNvls, nranks, bytes, model);
    *chosen = nvlsTime < ringTime ? Algorithm::kNvls : Algorithm::kRing;
    return true;
  }
  *chosen = ring ? Algorithm::kRing : Algorithm::kNvls;
  return true;
}

bool nvlsCanBeChosen(int nranks, const AlgorithmFilter& algorithms, const ProtocolFilter& protocols,
                     const GpuCostModel& model) {
  if (!protocols.allows(Collective::kAllReduce, Protocol::kSimple)) return false;
  for (size_t bytes : {size_t{1}, size_t{1} << 50}) {
    Algorithm chosen = Algorithm::kRing;
    if (chooseGpuAllReduce(nranks, bytes, true, algorithms, model, &chosen) && chosen == Algorithm::kNvls) return true;
  }
  return false;
}

}  // namespace weft::algorithms
