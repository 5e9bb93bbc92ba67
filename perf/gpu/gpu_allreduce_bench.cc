// Allreduce on one GPU: n ranks as communicators of this process (ncclCommInitAll, each with its
// own non-blocking stream) against the bound of one kernel that reads the n inputs and writes the
// n outputs once, timed in the same run. Prints one table per rank count:
//   bytes (per rank)  weft_us  bound_us  weft/bound (fraction of the bound reached)
//
//   gpu_allreduce_bench [--ranks 2,4] [--max-bytes 1G] [--iters N]
// Float sum, out of place. Times are the mean over N iterations after N/4+1 warm-up ones.

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"
#include "perf/gpu/visible_bound.h"

namespace {

#define CHECK_CUDA(call)                                                                       \
  do {                                                                                         \
    cudaError_t error_ = (call);                                                               \
    if (error_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(error_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

#define CHECK_NCCL(call)                                                                       \
  do {                                                                                         \
    ncclResult_t result_ = (call);                                                             \
    if (result_ != ncclSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d %s: %s (%s)\n", __FILE__, __LINE__, #call, ncclGetErrorString(result_), \
                   ncclGetLastError(nullptr));                                                 \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

struct Options {
  std::vector<int> ranks = {2, 4};
  size_t maxBytes = size_t{1} << 30;
  int iters = 20;
};

size_t parseBytes(const char* text) {
  char* end = nullptr;
  double value = std::strtod(text, &end);
  switch (*end) {
    case 'K': case 'k': value *= 1024; break;
    case 'M': case 'm': value *= 1024 * 1024; break;
    case 'G': case 'g': value *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return static_cast<size_t>(value);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--ranks") == 0) {
      options.ranks.clear();
      for (char* part = std::strtok(argv[i + 1], ","); part != nullptr; part = std::strtok(nullptr, ",")) {
        options.ranks.push_back(std::atoi(part));
      }
    } else if (std::strcmp(argv[i], "--max-bytes") == 0) {
      options.maxBytes = parseBytes(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--iters") == 0) {
      options.iters = std::atoi(argv[i + 1]);
    }
  }
  return options;
}

using Clock = std::chrono::steady_clock;

// Mean microseconds of `body` (which enqueues one iteration on every stream).
template <class Body>
double timeIterations(const std::vector<cudaStream_t>& streams, int iters, const Body& body) {
  for (int i = 0; i < iters / 4 + 1; ++i) body();
  for (cudaStream_t stream : streams) CHECK_CUDA(cudaStreamSynchronize(stream));
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) body();
  for (cudaStream_t stream : streams) CHECK_CUDA(cudaStreamSynchronize(stream));
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters;
}

void runRanks(int n, const Options& options) {
  std::vector<ncclComm_t> comms(n);
  std::vector<int> devices(n, 0);
  CHECK_NCCL(ncclCommInitAll(comms.data(), n, devices.data()));
  std::vector<cudaStream_t> streams(n);
  std::vector<float*> inputs(n);
  std::vector<float*> outputs(n);
  const size_t maxCount = options.maxBytes / sizeof(float);
  for (int r = 0; r < n; ++r) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&inputs[r], maxCount * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&outputs[r], maxCount * sizeof(float)));
    CHECK_CUDA(cudaMemset(inputs[r], 0, maxCount * sizeof(float)));
  }
  std::printf("# %d ranks on one GPU: allreduce float sum, out of place\n", n);
  std::printf("# %12s %12s %12s %10s\n", "bytes", "weft_us", "bound_us", "weft/bound");
  for (size_t bytes = 8; bytes <= options.maxBytes; bytes *= (bytes < (size_t{1} << 20) ? 8 : 4)) {
    const size_t count = bytes / sizeof(float);
    const int iters = bytes >= (size_t{256} << 20) ? std::max(3, options.iters / 4) : options.iters;
    const double weft = timeIterations(streams, iters, [&] {
      CHECK_NCCL(ncclGroupStart());
      for (int r = 0; r < n; ++r) {
        CHECK_NCCL(ncclAllReduce(inputs[r], outputs[r], count, ncclFloat32, ncclSum, comms[r], streams[r]));
      }
      CHECK_NCCL(ncclGroupEnd());
    });
    const size_t boundCount = (count + 3) / 4 * 4;
    const double bound = timeIterations({streams[0]}, iters, [&] {
      CHECK_CUDA(launchVisibleAllReduce(inputs.data(), outputs.data(), n, boundCount, streams[0]));
    });
    std::printf("  %12zu %12.1f %12.1f %10.2f\n", bytes, weft, bound, bound / weft);
    std::fflush(stdout);
  }
  for (int r = 0; r < n; ++r) {
    CHECK_NCCL(ncclCommDestroy(comms[r]));
    CHECK_CUDA(cudaFree(inputs[r]));
    CHECK_CUDA(cudaFree(outputs[r]));
    CHECK_CUDA(cudaStreamDestroy(streams[r]));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  cudaDeviceProp properties{};
  CHECK_CUDA(cudaGetDeviceProperties(&properties, 0));
  std::printf("# %s, %d multiprocessors\n", properties.name, properties.multiProcessorCount);
  for (int n : options.ranks) runRanks(n, options);
  return 0;
}
