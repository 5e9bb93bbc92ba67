#pragma once
// The reductions the suite runs: NCCL's built-in ops and PreMulSum with a scalar.

#include <string>
#include <vector>

#include "nccl.h"
#include "tests/multirank/element_types.h"

namespace weft::multirank {

enum class ReduceKind { kSum, kProd, kMax, kMin, kAvg, kPreMulSum };

struct Reduction {
  ReduceKind kind = ReduceKind::kSum;
  /// PreMulSum only: the factor each input is multiplied by before the sum.
  double scalar = 0;

  /// "sum", "avg", "premulsum(0.5)".
  std::string name() const;
  /// The built-in op; PreMulSum has none (it is created per communicator and type).
  ncclRedOp_t builtinOp() const;
  /// Sum, avg and PreMulSum add their (scaled) inputs.
  bool adds() const;
};

/// Every reduction a type is tested with: sum, prod, max, min, avg, and PreMulSum with scalars 2
/// and 0.5 (floats; both exact) or 2 and 3 (integers, where the product wraps).
std::vector<Reduction> allReductionsFor(const ElementType& type);

/// The reductions of the large runs: sum, avg and one PreMulSum (0.5, or 3 for integers).
std::vector<Reduction> largeReductionsFor(const ElementType& type);

}  // namespace weft::multirank
