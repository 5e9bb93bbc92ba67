// Allreduce on one GPU: n ranks as communicators of this process (ncclCommInitAll, each with its
// own non-blocking stream) against the bound of one kernel that reads the n inputs and writes the
// n outputs once, timed in the same run. Float sum, out of place, bytes per rank.
//
//   gpu_allreduce_bench [--ranks 1,2,3,4] [--max-bytes 1G] [--iters N]
//
// Sizes go from 8 bytes by 8x up to 256 KiB, then by 4x to --max-bytes (always measured). Times
// are host-timed means over pipelined calls (every stream synchronized before and after): N
// iterations, 25 N below 1 MiB, max(3, N/4) from 256 MiB; a quarter of them (and one) first as
// warm-up. Columns: algbw = bytes / time and busbw = algbw * 2(n-1)/n as nccl-tests define them;
// mem = the memory traffic, 2 n bytes (n inputs read, n outputs written) / time, for Weft, the
// bound and n device-to-device copies of the same bytes (what the bound should beat); frac =
// bound time / Weft time. Every size's result is checked on the GPU (outputs poisoned, two calls
// back to back, every element of every rank compared); a wrong one prints WRONG and the program
// exits 1.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"
#include "perf/gpu/allreduce_check.h"
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

constexpr int kMaxRanks = 8;
constexpr size_t kKiB = 1024;
constexpr size_t kMiB = kKiB * kKiB;
constexpr double kTargetFraction = 0.7;  // of the bound, from kTargetFrom up
constexpr size_t kTargetFrom = 256 * kMiB;

struct Options {
  std::vector<int> ranks = {1, 2, 3, 4};
  size_t maxBytes = size_t{1} << 30;
  int iters = 20;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "gpu_allreduce_bench: %s\nusage: gpu_allreduce_bench [--ranks 1,2,3,4] [--max-bytes 1G] "
               "[--iters N]\n", why);
  std::exit(2);
}

size_t parseBytes(const char* text) {
  char* end = nullptr;
  double value = std::strtod(text, &end);
  switch (*end) {
    case 'K': case 'k': value *= kKiB; break;
    case 'M': case 'm': value *= kMiB; break;
    case 'G': case 'g': value *= 1024.0 * kMiB; break;
    default: break;
  }
  return static_cast<size_t>(value);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) usage("an option without its value");
    if (std::strcmp(argv[i], "--ranks") == 0) {
      options.ranks.clear();
      for (char* part = std::strtok(argv[i + 1], ","); part != nullptr; part = std::strtok(nullptr, ",")) {
        const int n = std::atoi(part);
        if (n < 1 || n > kMaxRanks) usage("--ranks takes counts from 1 to 8");
        options.ranks.push_back(n);
      }
      if (options.ranks.empty()) usage("--ranks needs at least one count");
    } else if (std::strcmp(argv[i], "--max-bytes") == 0) {
      options.maxBytes = parseBytes(argv[i + 1]);
      if (options.maxBytes < 8) usage("--max-bytes must be at least 8");
    } else if (std::strcmp(argv[i], "--iters") == 0) {
      options.iters = std::atoi(argv[i + 1]);
      if (options.iters < 1) usage("--iters must be at least 1");
    } else {
      usage((std::string("unknown option ") + argv[i]).c_str());
    }
  }
  return options;
}

std::vector<size_t> sizes(size_t maxBytes) {
  std::vector<size_t> out;
  for (size_t bytes = 8; bytes <= maxBytes; bytes *= bytes < 256 * kKiB ? 8 : 4) out.push_back(bytes);
  if (out.back() != maxBytes) out.push_back(maxBytes);
  return out;
}

int iterationsFor(size_t bytes, int iters) {
  if (bytes < kMiB) return 25 * iters;
  if (bytes >= kTargetFrom) return std::max(3, iters / 4);
  return iters;
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

// GB/s of `bytes` in `us` microseconds.
double rate(double bytes, double us) { return bytes / us / 1e3; }

class Ranks {
 public:
  Ranks(int n, size_t maxBytes) : n_(n), comms_(n), streams_(n), inputs_(n), outputs_(n) {
    std::vector<int> devices(n, 0);
    CHECK_NCCL(ncclCommInitAll(comms_.data(), n, devices.data()));
    const size_t maxCount = (maxBytes + sizeof(float) - 1) / sizeof(float);
    for (int r = 0; r < n; ++r) {
      CHECK_CUDA(cudaStreamCreateWithFlags(&streams_[r], cudaStreamNonBlocking));
      CHECK_CUDA(cudaMalloc(&inputs_[r], maxCount * sizeof(float)));
      CHECK_CUDA(cudaMalloc(&outputs_[r], maxCount * sizeof(float)));
    }
    CHECK_CUDA(cudaMalloc(&mismatches_, sizeof(*mismatches_)));
    CHECK_CUDA(launchFillInputs(inputs_.data(), n, maxCount, streams_[0]));
    CHECK_CUDA(cudaStreamSynchronize(streams_[0]));
  }
  ~Ranks() {
    for (int r = 0; r < n_; ++r) {
      CHECK_NCCL(ncclCommDestroy(comms_[r]));
      CHECK_CUDA(cudaFree(inputs_[r]));
      CHECK_CUDA(cudaFree(outputs_[r]));
      CHECK_CUDA(cudaStreamDestroy(streams_[r]));
    }
    CHECK_CUDA(cudaFree(mismatches_));
  }

  // One allreduce of `count` floats on every rank, as one group.
  void allReduce(size_t count) {
    CHECK_NCCL(ncclGroupStart());
    for (int r = 0; r < n_; ++r) {
      CHECK_NCCL(ncclAllReduce(inputs_[r], outputs_[r], count, ncclFloat32, ncclSum, comms_[r], streams_[r]));
    }
    CHECK_NCCL(ncclGroupEnd());
  }

  // The wrong elements (over all ranks) after two allreduces of `count` back to back, each into
  // outputs poisoned on its rank's stream just before it (a second call that did nothing would
  // otherwise pass on the first one's results); a communicator's asynchronous error is printed and
  // counts as all of them wrong.
  unsigned long long wrongElements(size_t count) {
    for (int call = 0; call < 2; ++call) {
      for (int r = 0; r < n_; ++r) CHECK_CUDA(cudaMemsetAsync(outputs_[r], 0xff, count * sizeof(float), streams_[r]));
      allReduce(count);
    }
    for (cudaStream_t stream : streams_) CHECK_CUDA(cudaStreamSynchronize(stream));
    for (int r = 0; r < n_; ++r) {
      ncclResult_t state = ncclSuccess;
      CHECK_NCCL(ncclCommGetAsyncError(comms_[r], &state));
      if (state != ncclSuccess) {
        std::printf("# rank %d: asynchronous error %s: %s\n", r, ncclGetErrorString(state), ncclGetLastError(comms_[r]));
        return static_cast<unsigned long long>(count) * n_;
      }
    }
    return mismatches(count);
  }

  // The elements of the outputs (the first `count` of each rank's) that are not the sum, once
  // every stream's work is done.
  unsigned long long mismatches(size_t count) {
    for (cudaStream_t stream : streams_) CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaMemsetAsync(mismatches_, 0, sizeof(*mismatches_), streams_[0]));
    CHECK_CUDA(launchCountMismatches(outputs_.data(), n_, count, mismatches_, streams_[0]));
    unsigned long long wrong = 0;
    CHECK_CUDA(cudaMemcpyAsync(&wrong, mismatches_, sizeof(wrong), cudaMemcpyDeviceToHost, streams_[0]));
    CHECK_CUDA(cudaStreamSynchronize(streams_[0]));
    return wrong;
  }

  void bound(size_t count) {
    CHECK_CUDA(launchVisibleAllReduce(inputs_.data(), outputs_.data(), n_, count, streams_[0]));
  }

  void copies(size_t count) {
    for (int r = 0; r < n_; ++r) {
      CHECK_CUDA(cudaMemcpyAsync(outputs_[r], inputs_[r], count * sizeof(float), cudaMemcpyDeviceToDevice, streams_[0]));
    }
  }

  const std::vector<cudaStream_t>& streams() const { return streams_; }

 private:
  int n_;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<float*> inputs_;
  std::vector<float*> outputs_;
  unsigned long long* mismatches_ = nullptr;
};

// Measures every size at n ranks and prints its table; false where a result was wrong.
bool runRanks(int n, const Options& options) {
  Ranks ranks(n, options.maxBytes);
  std::printf("# %d rank(s) on one GPU: allreduce float sum, out of place\n", n);
  std::printf("# %11s %10s %9s %9s %9s %10s %9s %9s %6s %s\n", "bytes", "weft_us", "algbw", "busbw", "weft_mem",
              "bound_us", "bound_mem", "copy_mem", "frac", "checked");
  bool right = true;
  bool targetMet = true;
  bool targetMeasured = false;
  for (const size_t bytes : sizes(options.maxBytes)) {
    const size_t count = bytes / sizeof(float);
    const int iters = iterationsFor(bytes, options.iters);
    const std::vector<cudaStream_t>& all = ranks.streams();
    const std::vector<cudaStream_t> first = {all[0]};
    const double weft = timeIterations(all, iters, [&] { ranks.allReduce(count); });
    const unsigned long long wrong = ranks.wrongElements(count);
    const double bound = timeIterations(first, iters, [&] { ranks.bound(count); });
    if (ranks.mismatches(count) != 0) {
      std::printf("# the bound kernel's own result is wrong at %zu bytes: its figures mean nothing\n", bytes);
      right = false;
    }
    const double copy = timeIterations(first, iters, [&] { ranks.copies(count); });
    const double moved = 2.0 * n * static_cast<double>(bytes);
    const double fraction = bound / weft;
    std::printf("  %11zu %10.1f %9.2f %9.2f %9.1f %10.1f %9.1f %9.1f %6.2f %s\n", bytes, weft, rate(bytes, weft),
                rate(bytes, weft) * 2.0 * (n - 1) / n, rate(moved, weft), bound, rate(moved, bound),
                rate(moved, copy), fraction, wrong == 0 ? "ok" : "WRONG");
    if (wrong != 0) {
      std::printf("# WRONG: %llu of the %zu elements were wrong at %zu bytes\n", wrong, count * n, bytes);
      right = false;
    }
    if (bytes >= kTargetFrom) {
      targetMeasured = true;
      targetMet = targetMet && fraction >= kTargetFraction;
    }
    std::fflush(stdout);
  }
  if (targetMeasured) {
    std::printf("# %d rank(s): %s %.0f%% of the bound at every size from 256 MiB\n", n,
                targetMet ? "at least" : "below", kTargetFraction * 100);
  }
  return right;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  cudaDeviceProp properties{};
  CHECK_CUDA(cudaGetDeviceProperties(&properties, 0));
  std::printf("# %s, %d multiprocessors\n", properties.name, properties.multiProcessorCount);
  bool right = true;
  for (int n : options.ranks) right = runRanks(n, options) && right;
  return right ? 0 : 1;
}
