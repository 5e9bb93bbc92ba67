// visible_allreduce_bound: the fastest allreduce the machine allows when every rank's buffers are
// directly visible to every other rank (no staging copies, no protocol): the shm path's bound.
//
// -p N processes share every rank's input and output buffers through one shared mapping. Each
// operation, rank r sums slice r of the elements over all N inputs and writes the sum into all N
// outputs, then waits for the others (the operation is complete only when every slice is). busbw
// uses the allreduce formula, 2(N-1)/N, so it compares directly with all_reduce_perf's.
//   visible_allreduce_bound -p 2 -b 8 -e 256M -f 2

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "perf/compare/forked_team.h"
#include "perf/compare/sweep.h"

namespace weft::perf::compare {
namespace {

// Elements summed together: one 64-byte cache line, which also keeps the slices' edges on lines.
constexpr size_t kLineFloats = 16;
typedef float Line __attribute__((vector_size(kLineFloats * sizeof(float))));

// Sums elements [begin, end) over every input and writes the sum into every output.
[[gnu::target_clones("avx512f", "avx2", "default")]]
void sumIntoEvery(const std::vector<const float*>& inputs, const std::vector<float*>& outputs, size_t begin,
                  size_t end) {
  size_t i = begin;
  for (; i + kLineFloats <= end; i += kLineFloats) {
    Line sum;
    std::memcpy(&sum, inputs[0] + i, sizeof(Line));
    for (size_t k = 1; k < inputs.size(); ++k) {
      Line next;
      std::memcpy(&next, inputs[k] + i, sizeof(Line));
      sum += next;
    }
    for (float* output : outputs) std::memcpy(output + i, &sum, sizeof(Line));
  }
  for (; i < end; ++i) {
    float sum = inputs[0][i];
    for (size_t k = 1; k < inputs.size(); ++k) sum += inputs[k][i];
    for (float* output : outputs) output[i] = sum;
  }
}

// A child of fork() finds the pages of a shared mapping unmapped until it first touches them, and
// a first touch is slow (a page fault); MADV_POPULATE_WRITE does not avoid it here. Touch one byte
// of every page (reading maps it for writing too), so that no first touch is timed.
void touchEveryPage(const char* mapping, size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  volatile const char* pages = mapping;
  for (size_t offset = 0; offset < bytes; offset += page) (void)pages[offset];
}

class VisibleAllReduce final : public SweepTarget {
 public:
  // inputs and outputs: every rank's buffers of maxBytes, in one shared mapping.
  VisibleAllReduce(ForkedTeam& team, char* mapping, size_t maxBytes) : team_(team), maxBytes_(maxBytes) {
    const auto ranks = static_cast<size_t>(team.ranks());
    for (size_t k = 0; k < ranks; ++k) {
      inputs_.push_back(reinterpret_cast<float*>(mapping + k * maxBytes));
      outputs_.push_back(reinterpret_cast<float*>(mapping + (ranks + k) * maxBytes));
    }
  }

  int rank() const override { return team_.rank(); }
  int ranks() const override { return team_.ranks(); }
  double busBandwidthFactor() const override { return allReduceBusFactor(team_.ranks()); }
  RowLabels labels() const override { return kFloatSum; }

  bool runOnce(size_t bytes, int iter) override {
    const size_t offset = iterationOffset(bytes, maxBytes_, iter) / sizeof(float);
    std::vector<const float*>& inputs = shiftedInputs_;
    std::vector<float*>& outputs = shiftedOutputs_;
    inputs.clear();
    outputs.clear();
    for (float* input : inputs_) inputs.push_back(input + offset);
    for (float* output : outputs_) outputs.push_back(output + offset);
    const size_t count = bytes / sizeof(float);
    sumIntoEvery(inputs, outputs, sliceStart(count, rank()), sliceStart(count, rank() + 1));
    team_.barrier();
    return true;
  }

  int64_t checkOnce(size_t bytes) override {
    const size_t count = bytes / sizeof(float);
    float* output = outputs_[static_cast<size_t>(rank())];
    fillCheckInput(inputs_[static_cast<size_t>(rank())], count, rank());
    std::memset(output, 0, bytes);
    team_.barrier();
    runOnce(bytes, 0);
    return countWrongSums(output, count, ranks());
  }

  void barrier() override { team_.barrier(); }
  double sumOverRanks(double value) override { return team_.sumOverRanks(value); }

 private:
  // Where rank's slice of count elements starts: equal slices, on cache-line boundaries.
  size_t sliceStart(size_t count, int rank) const {
    if (rank == ranks()) return count;
    const size_t lines = (count + kLineFloats - 1) / kLineFloats;
    return std::min(count, lines * static_cast<size_t>(rank) / static_cast<size_t>(ranks()) * kLineFloats);
  }

  ForkedTeam& team_;
  size_t maxBytes_;
  std::vector<float*> inputs_;
  std::vector<float*> outputs_;
  // Reused for each operation's shifted pointers, so that no operation allocates.
  std::vector<const float*> shiftedInputs_;
  std::vector<float*> shiftedOutputs_;
};

}  // namespace
}  // namespace weft::perf::compare

int main(int argc, char** argv) {
  using namespace weft::perf::compare;
  SweepOptions options;
  int exitCode = 0;
  if (!parseSweepOptions(argc, argv,
                         "an allreduce (float sum) between -p processes whose buffers are all directly visible: "
                         "the shared-memory bound",
                         ExtraFlags{.ranks = true}, &options, &exitCode)) {
    return exitCode;
  }
  const size_t mappingBytes = 2 * static_cast<size_t>(options.ranks) * options.maxBytes;
  void* mapping = mmap(nullptr, mappingBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    std::fprintf(stderr, "visible_allreduce_bound: cannot map %zu shared bytes: lower -e or -p\n", mappingBytes);
    return 1;
  }
  std::memset(mapping, 0, mappingBytes);  // every page exists before anything is timed
  const int status = ForkedTeam::run(options.ranks, [&](ForkedTeam& team) {
    touchEveryPage(static_cast<const char*>(mapping), mappingBytes);
    VisibleAllReduce target(team, static_cast<char*>(mapping), options.maxBytes);
    return runSweep(options, "# visible_allreduce_bound: every rank's buffers in one shared mapping", target);
  });
  munmap(mapping, mappingBytes);
  return status;
}
