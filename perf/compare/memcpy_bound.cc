// memcpy_bound: how fast one thread copies memory (glibc's memcpy), the unit of cost of every copy
// an allreduce makes through host memory. algbw and busbw are the bytes copied per second.
//   memcpy_bound -b 8 -e 256M -f 2

#include <cstdio>
#include <cstring>

#include "perf/compare/sweep.h"

namespace weft::perf::compare {
namespace {

unsigned char checkByte(size_t index) { return static_cast<unsigned char>(index * 31 % 251); }

class MemcpyTarget final : public SweepTarget {
 public:
  explicit MemcpyTarget(size_t maxBytes) : maxBytes_(maxBytes), source_(maxBytes), destination_(maxBytes) {}

  int rank() const override { return 0; }
  int ranks() const override { return 1; }
  double busBandwidthFactor() const override { return 1; }
  RowLabels labels() const override { return kBytesMoved; }

  bool runOnce(size_t bytes, int iter) override {
    const size_t offset = iterationOffset(bytes, maxBytes_, iter);
    std::memcpy(destination_.bytes() + offset, source_.bytes() + offset, bytes);
    return true;
  }

  int64_t checkOnce(size_t bytes) override {
    for (size_t i = 0; i < bytes; ++i) source_.bytes()[i] = static_cast<char>(checkByte(i));
    std::memset(destination_.bytes(), 0, bytes);
    runOnce(bytes, 0);
    int64_t wrong = 0;
    for (size_t i = 0; i < bytes; ++i) {
      wrong += static_cast<unsigned char>(destination_.bytes()[i]) != checkByte(i) ? 1 : 0;
    }
    return wrong;
  }

  void barrier() override {}
  double sumOverRanks(double value) override { return value; }

 private:
  size_t maxBytes_;
  TouchedBuffer source_;
  TouchedBuffer destination_;
};

}  // namespace
}  // namespace weft::perf::compare

int main(int argc, char** argv) {
  using namespace weft::perf::compare;
  SweepOptions options;
  int exitCode = 0;
  if (!parseSweepOptions(argc, argv, "one thread's memcpy bandwidth", ExtraFlags{}, &options, &exitCode)) {
    return exitCode;
  }
  MemcpyTarget target(options.maxBytes);
  return runSweep(options, "# memcpy_bound: glibc memcpy on one thread", target);
}
