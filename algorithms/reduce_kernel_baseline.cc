// The reduction kernels compiled for the build's own target (x86-64: SSE2).
// Contraction into fused multiply-add is off for this whole file (the headers included): float
// and double PreMulSum round the product before adding, on every target, FMA-capable ones too.
#pragma GCC optimize("fp-contract=off")
// The lane helpers take and return vectors, but all of them are inlined: no call ABI is involved.
#pragma GCC diagnostic ignored "-Wpsabi"

#include "algorithms/reduce_isa.h"
#include "algorithms/reduce_loop.h"

namespace weft::algorithms {

void runReduceKernelBaseline(DataType type, LaneOp op, const KernelArgs& args) {
  runReduceKernel<16>(type, op, args);
}

}  // namespace weft::algorithms
