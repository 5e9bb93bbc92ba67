#include "tests/reliability/allreduce_check.h"

#include <vector>

#include "tests/harness/rank_check.h"

namespace weft::reliability {
namespace {

/// Small integers: every partial sum is exact in float whatever the order of the additions.
float inputOf(int rank, size_t element, int iteration) {
  return static_cast<float>((rank + 1) * static_cast<int>((element + static_cast<size_t>(iteration)) % 17));
}

}  // namespace

std::string allReduceAndCheck(ncclComm_t comm, int rank, int nranks, size_t count, int iteration) {
  std::vector<float> send(count);
  for (size_t i = 0; i < count; ++i) send[i] = inputOf(rank, i, iteration);
  std::vector<float> recv(count, -1.0f);
  ncclResult_t result = ncclAllReduce(send.data(), recv.data(), count, ncclFloat, ncclSum, comm, nullptr);
  if (result != ncclSuccess) {
    return "allreduce of " + std::to_string(count) + " floats (iteration " + std::to_string(iteration) +
           ") returned " + harness::describeResult(result);
  }
  const float rankSum = static_cast<float>(nranks * (nranks + 1) / 2);
  for (size_t i = 0; i < count; ++i) {
    float want = rankSum * static_cast<float>((i + static_cast<size_t>(iteration)) % 17);
    if (recv[i] != want) {
      return "allreduce of " + std::to_string(count) + " floats (iteration " + std::to_string(iteration) +
             "): element " + std::to_string(i) + " is " + std::to_string(recv[i]) + ", expected " +
             std::to_string(want);
    }
  }
  return "";
}

}  // namespace weft::reliability
