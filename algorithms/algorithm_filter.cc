#include "algorithms/algorithm_filter.h"

namespace weft::algorithms {
namespace {

constexpr const char* kAlgorithmNames[kNumAlgorithms] = {"ring", "tree",     "collnetdirect", "collnetchain",
                                                         "nvls", "nvlstree", "pat",           "rhd"};

}  // namespace

const char* algorithmName(Algorithm algorithm) {
  const int index = static_cast<int>(algorithm);
  return index >= 0 && index < kNumAlgorithms ? kAlgorithmNames[index] : "unknown";
}

AlgorithmFilter AlgorithmFilter::all() {
  AlgorithmFilter filter;
  for (uint32_t& mask : filter.allowed) mask = (1u << kNumAlgorithms) - 1;
  return filter;
}

Status parseAlgorithmFilter(const std::string& text, AlgorithmFilter* filter) {
  *filter = AlgorithmFilter::all();
  return parseCollectiveFilter(text, {"NCCL_ALGO", "algorithm", kAlgorithmNames}, filter->allowed);
}

}  // namespace weft::algorithms
