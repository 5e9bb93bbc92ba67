#include "algorithms/reduce.h"

#include <algorithm>
#include <cstring>

#include "algorithms/reduce_divide.h"
#include "algorithms/reduce_isa.h"

namespace weft::algorithms {
namespace {

// Two-output copies go block by block: the second copy of a block reads it from cache, so the
// source crosses the memory bus once.
constexpr size_t kCopyBlockBytes = 16 * 1024;
constexpr size_t kDivideBlockBytes = 16 * 1024;

ReduceIsa detectReduceIsa() {
  if (reduceIsaSupported(ReduceIsa::kAvx512)) return ReduceIsa::kAvx512;
  if (reduceIsaSupported(ReduceIsa::kAvx2)) return ReduceIsa::kAvx2;
  return ReduceIsa::kBaseline;
}

void runKernel(ReduceIsa isa, DataType type, LaneOp op, const KernelArgs& args) {
  switch (isa) {
    case ReduceIsa::kAvx512: return runReduceKernelAvx512(type, op, args);
    case ReduceIsa::kAvx2: return runReduceKernelAvx2(type, op, args);
    case ReduceIsa::kBaseline: return runReduceKernelBaseline(type, op, args);
  }
}

LaneOp laneOpFor(RedOpKind kind) {
  switch (kind) {
    case RedOpKind::kSum: return LaneOp::kSum;
    case RedOpKind::kProd: return LaneOp::kProd;
    case RedOpKind::kMax: return LaneOp::kMax;
    case RedOpKind::kMin: return LaneOp::kMin;
    case RedOpKind::kPreMulSum: return LaneOp::kPreMulSum;
  }
  return LaneOp::kSum;
}

// Copies with non-temporal stores into `out`, as bytes through the best kernel.
void streamCopy(const unsigned char* source, unsigned char* out, size_t bytes) {
  static const unsigned char kNoScalar[8] = {};
  KernelArgs args;
  args.local = source;
  args.out = out;
  args.count = bytes;
  args.scalar = kNoScalar;
  args.streamOut = true;
  runKernel(bestReduceIsa(), DataType::kUint8, LaneOp::kCopy, args);
}

void copyOne(const unsigned char* source, unsigned char* out, size_t bytes, bool stream) {
  if (stream) {
    streamCopy(source, out, bytes);
  } else {
    std::memcpy(out, source, bytes);
  }
}

}  // namespace

const char* reduceIsaName(ReduceIsa isa) {
  switch (isa) {
    case ReduceIsa::kBaseline: return "baseline";
    case ReduceIsa::kAvx2: return "avx2";
    case ReduceIsa::kAvx512: return "avx512";
  }
  return "unknown";
}

bool reduceIsaSupported(ReduceIsa isa) {
  if (isa == ReduceIsa::kBaseline) return true;
#if defined(__x86_64__)
  // Also checks that the OS saves the vector registers (XCR0), not only the CPUID bits.
  __builtin_cpu_init();
  if (isa == ReduceIsa::kAvx2) return __builtin_cpu_supports("avx2");
  if (isa == ReduceIsa::kAvx512) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }
#endif
  return false;
}

ReduceIsa bestReduceIsa() {
  static const ReduceIsa isa = detectReduceIsa();
  return isa;
}

void reduceWithIsa(ReduceIsa isa, const Reduction& reduction, const ReduceArgs& args) {
  if (args.count == 0) return;
  const size_t elementBytes = dataTypeSize(reduction.type);
  const bool divides = args.finalize && reduction.divisor > 1 && !isFloatingPoint(reduction.type);
  const bool copies = args.peer == nullptr && reduction.kind != RedOpKind::kPreMulSum;
  if (copies && !divides) {
    copyTo(args.local, args.out, args.out2, args.count * elementBytes, args.streamOut, args.streamOut2);
    return;
  }
  KernelArgs kernelArgs;
  kernelArgs.local = static_cast<const unsigned char*>(args.local);
  kernelArgs.peer = static_cast<const unsigned char*>(args.peer);
  kernelArgs.out = static_cast<unsigned char*>(args.out);
  kernelArgs.out2 = static_cast<unsigned char*>(args.out2);
  kernelArgs.count = args.count;
  kernelArgs.scalar = reduction.scalar;
  kernelArgs.streamOut = args.streamOut;
  kernelArgs.streamOut2 = args.streamOut2;
  const LaneOp op = args.peer == nullptr ? LaneOp::kScale : laneOpFor(reduction.kind);
  if (!divides) {
    runKernel(isa, reduction.type, op, kernelArgs);
    return;
  }
  // Integer average: block by block, reduce (or copy) into `out`, divide there while the block is
  // in cache, then copy it to `out2`.
  const size_t blockCount = kDivideBlockBytes / elementBytes;
  for (size_t first = 0; first < args.count; first += blockCount) {
    const size_t count = std::min(blockCount, args.count - first);
    const size_t offset = first * elementBytes;
    unsigned char* out = kernelArgs.out + offset;
    if (copies) {
      copyTo(kernelArgs.local + offset, out, nullptr, count * elementBytes);
    } else {
      KernelArgs block = kernelArgs;
      block.local += offset;
      if (block.peer != nullptr) block.peer += offset;
      block.out = out;
      block.out2 = nullptr;
      block.count = count;
      block.streamOut = false;  // divideIntegers reads the block back
      block.streamOut2 = false;
      runKernel(isa, reduction.type, op, block);
    }
    divideIntegers(reduction.type, out, count, reduction.divisor);
    if (kernelArgs.out2 != nullptr) {
      std::memcpy(kernelArgs.out2 + offset, out, count * elementBytes);
    }
  }
}

void reduce(const Reduction& reduction, const ReduceArgs& args) {
  reduceWithIsa(bestReduceIsa(), reduction, args);
}

void copyTo(const void* src, void* out, void* out2, size_t bytes, bool streamOut, bool streamOut2) {
  if (bytes == 0) return;
  const auto* source = static_cast<const unsigned char*>(src);
  auto* first = static_cast<unsigned char*>(out);
  auto* second = static_cast<unsigned char*>(out2);
  if (first == source) {
    if (second != nullptr) copyOne(source, second, bytes, streamOut2);
    return;
  }
  if (second == nullptr) {
    copyOne(source, first, bytes, streamOut);
    return;
  }
  for (size_t offset = 0; offset < bytes; offset += kCopyBlockBytes) {
    const size_t length = std::min(kCopyBlockBytes, bytes - offset);
    copyOne(source + offset, first + offset, length, streamOut);
    copyOne(source + offset, second + offset, length, streamOut2);
  }
}

}  // namespace weft::algorithms
