#include "tests/multirank/reduction.h"

#include <cstdio>

namespace weft::multirank {

std::string Reduction::name() const {
  switch (kind) {
    case ReduceKind::kSum: return "sum";
    case ReduceKind::kProd: return "prod";
    case ReduceKind::kMax: return "max";
    case ReduceKind::kMin: return "min";
    case ReduceKind::kAvg: return "avg";
    case ReduceKind::kPreMulSum: break;
  }
  char text[48];
  std::snprintf(text, sizeof(text), "premulsum(%g)", scalar);
  return text;
}

ncclRedOp_t Reduction::builtinOp() const {
  switch (kind) {
    case ReduceKind::kSum: return ncclSum;
    case ReduceKind::kProd: return ncclProd;
    case ReduceKind::kMax: return ncclMax;
    case ReduceKind::kMin: return ncclMin;
    case ReduceKind::kAvg: return ncclAvg;
    case ReduceKind::kPreMulSum: break;
  }
  return ncclNumOps;
}

bool Reduction::adds() const {
  return kind == ReduceKind::kSum || kind == ReduceKind::kAvg || kind == ReduceKind::kPreMulSum;
}

std::vector<Reduction> allReductionsFor(const ElementType& type) {
  std::vector<Reduction> reductions = {{ReduceKind::kSum},  {ReduceKind::kProd}, {ReduceKind::kMax},
                                       {ReduceKind::kMin},  {ReduceKind::kAvg},
                                       {ReduceKind::kPreMulSum, 2.0}};
  reductions.push_back({ReduceKind::kPreMulSum, type.isFloat() ? 0.5 : 3.0});
  return reductions;
}

std::vector<Reduction> largeReductionsFor(const ElementType& type) {
  return {{ReduceKind::kSum}, {ReduceKind::kAvg}, {ReduceKind::kPreMulSum, type.isFloat() ? 0.5 : 3.0}};
}

}  // namespace weft::multirank
