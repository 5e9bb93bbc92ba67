// gloo_allreduce_perf: Gloo's ring allreduce (gloo::allreduce with the ring algorithm, float sum,
// out of place: what PyTorch's Gloo backend runs for CPU tensors) over Gloo's TCP transport on
// 127.0.0.1, through the sweep and table of all_reduce_perf.
//
// Rank and size come from mpirun (OMPI_COMM_WORLD_RANK/SIZE) or from RANK/WORLD_SIZE; the ranks
// meet through a gloo::rendezvous::FileStore in --store DIR, a fresh directory they all reach:
//   mpirun -np 2 gloo_allreduce_perf --store $(mktemp -d) -b 8 -e 256M -f 2

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "perf/compare/sweep.h"

namespace weft::perf::compare {
namespace {

// Long enough for the largest sizes on an oversubscribed machine, short enough to end a stuck run.
constexpr std::chrono::seconds kGlooTimeout{300};

using ReduceFunction = void (*)(void*, const void*, const void*, size_t);

// The first of the variables that is set, as a number; -1 when none is.
int launchNumber(const char* name, const char* fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr) text = std::getenv(fallback);
  return text == nullptr ? -1 : std::atoi(text);
}

class GlooAllReduce final : public SweepTarget {
 public:
  GlooAllReduce(std::shared_ptr<gloo::Context> context, size_t maxBytes)
      : context_(std::move(context)), maxBytes_(maxBytes), send_(maxBytes), recv_(maxBytes) {}

  int rank() const override { return context_->rank; }
  int ranks() const override { return context_->size; }
  double busBandwidthFactor() const override { return allReduceBusFactor(context_->size); }
  RowLabels labels() const override { return kFloatSum; }

  bool runOnce(size_t bytes, int iter) override {
    const size_t offset = iterationOffset(bytes, maxBytes_, iter);
    return allReduce(send_.floats(offset), recv_.floats(offset), bytes / sizeof(float));
  }

  int64_t checkOnce(size_t bytes) override {
    const size_t count = bytes / sizeof(float);
    fillCheckInput(send_.floats(), count, rank());
    if (!allReduce(send_.floats(), recv_.floats(), count)) return static_cast<int64_t>(count);
    return countWrongSums(recv_.floats(), count, ranks());
  }

  void barrier() override {
    gloo::BarrierOptions options(context_);
    gloo::barrier(options);
  }

  double sumOverRanks(double value) override {
    double sum = 0;
    gloo::AllreduceOptions options(context_);
    options.setInput(&value, 1);
    options.setOutput(&sum, 1);
    options.setReduceFunction(static_cast<ReduceFunction>(&gloo::sum<double>));
    gloo::allreduce(options);
    return sum;
  }

 private:
  bool allReduce(float* send, float* recv, size_t count) {
    try {
      gloo::AllreduceOptions options(context_);
      options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      options.setInput(send, count);
      options.setOutput(recv, count);
      options.setReduceFunction(static_cast<ReduceFunction>(&gloo::sum<float>));
      gloo::allreduce(options);
      return true;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "rank %d: gloo::allreduce of %zu floats failed: %s\n", rank(), count, error.what());
      return false;
    }
  }

  std::shared_ptr<gloo::Context> context_;
  size_t maxBytes_;
  TouchedBuffer send_;
  TouchedBuffer recv_;
};

}  // namespace
}  // namespace weft::perf::compare

int main(int argc, char** argv) {
  using namespace weft::perf::compare;
  SweepOptions options;
  int exitCode = 0;
  if (!parseSweepOptions(argc, argv, "Gloo's ring allreduce (float sum) over TCP, in all_reduce_perf's table",
                         ExtraFlags{.store = true}, &options, &exitCode)) {
    return exitCode;
  }
  const int rank = launchNumber("OMPI_COMM_WORLD_RANK", "RANK");
  const int size = launchNumber("OMPI_COMM_WORLD_SIZE", "WORLD_SIZE");
  if (rank < 0 || size < 1 || rank >= size) {
    std::fprintf(stderr,
                 "gloo_allreduce_perf: no rank and size: launch it with mpirun, or set RANK and WORLD_SIZE "
                 "(0 <= RANK < WORLD_SIZE) in every process\n");
    return 2;
  }
  try {
    gloo::transport::tcp::attr address;
    address.hostname = "127.0.0.1";
    auto device = gloo::transport::tcp::CreateDevice(address);
    gloo::rendezvous::FileStore store(options.store);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(kGlooTimeout);
    context->connectFullMesh(store, device);
    GlooAllReduce target(context, options.maxBytes);
    const std::string title = "# gloo_allreduce_perf: gloo::allreduce (ring) over tcp " + device->str() +
                              ", Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." +
                              std::to_string(GLOO_VERSION_MINOR) + "." + std::to_string(GLOO_VERSION_PATCH);
    return runSweep(options, title, target);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gloo_allreduce_perf rank %d: %s (is --store %s a fresh directory every rank reaches?)\n",
                 rank, error.what(), options.store.c_str());
    return 1;
  }
}
