// The reduction kernels compiled for AVX-512 (F, BW, DQ, VL).
// Contraction into fused multiply-add is off for this whole file (the headers included): float
// and double PreMulSum round the product before adding, on every target, FMA-capable ones too.
#pragma GCC optimize("fp-contract=off")
// The lane helpers take and return vectors, but all of them are inlined: no call ABI is involved.
#pragma GCC diagnostic ignored "-Wpsabi"

#include "algorithms/reduce_isa.h"
#include "algorithms/reduce_loop.h"

namespace weft::algorithms {
#if defined(__x86_64__)
namespace {

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) void runAvx512(
    DataType type, LaneOp op, const KernelArgs& args) {
  runReduceKernel<64>(type, op, args);
}

}  // namespace

void runReduceKernelAvx512(DataType type, LaneOp op, const KernelArgs& args) {
  runAvx512(type, op, args);
}
#else
// Never chosen off x86-64 (reduceIsaSupported says no); defined so that the build links.
void runReduceKernelAvx512(DataType type, LaneOp op, const KernelArgs& args) {
  runReduceKernel<16>(type, op, args);
}
#endif

}  // namespace weft::algorithms
