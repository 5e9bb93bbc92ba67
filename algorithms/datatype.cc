#include "algorithms/datatype.h"

#include <cstring>

#include "algorithms/float_convert.h"

namespace weft::algorithms {
namespace {

constexpr int kBuiltinAvg = 4;  // ncclAvg

}  // namespace

size_t dataTypeSize(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kFloat8e4m3:
    case DataType::kFloat8e5m2: return 1;
    case DataType::kFloat16:
    case DataType::kBfloat16: return 2;
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kFloat32: return 4;
    case DataType::kInt64:
    case DataType::kUint64:
    case DataType::kFloat64: return 8;
  }
  return 0;
}

size_t chunkGranule(DataType type) {
  const size_t size = dataTypeSize(type);
  return size == 0 ? 1 : kChunkAlignmentBytes / size;
}

const char* dataTypeName(DataType type) {
  switch (type) {
    case DataType::kInt8: return "int8";
    case DataType::kUint8: return "uint8";
    case DataType::kInt32: return "int32";
    case DataType::kUint32: return "uint32";
    case DataType::kInt64: return "int64";
    case DataType::kUint64: return "uint64";
    case DataType::kFloat16: return "half";
    case DataType::kFloat32: return "float";
    case DataType::kFloat64: return "double";
    case DataType::kBfloat16: return "bfloat16";
    case DataType::kFloat8e4m3: return "f8e4m3";
    case DataType::kFloat8e5m2: return "f8e5m2";
  }
  return "unknown";
}

bool isFloatingPoint(DataType type) {
  switch (type) {
    case DataType::kFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kBfloat16:
    case DataType::kFloat8e4m3:
    case DataType::kFloat8e5m2: return true;
    default: return false;
  }
}

Reduction makeBuiltinReduction(DataType type, int op, int nranks) {
  // A rank count below one has no meaning; treating it as one keeps the division defined.
  const int ranks = nranks < 1 ? 1 : nranks;
  Reduction reduction;
  reduction.type = type;
  if (op != kBuiltinAvg) {
    reduction.kind = static_cast<RedOpKind>(op);
    return reduction;
  }
  if (isFloatingPoint(type)) {
    reduction.kind = RedOpKind::kPreMulSum;
    storeFromDouble(type, 1.0 / ranks, reduction.scalar, 0);
  } else {
    reduction.kind = RedOpKind::kSum;
    reduction.divisor = static_cast<uint64_t>(ranks);
  }
  return reduction;
}

Reduction makePreMulSum(DataType type, const void* scalar) {
  Reduction reduction;
  reduction.type = type;
  reduction.kind = RedOpKind::kPreMulSum;
  std::memcpy(reduction.scalar, scalar, dataTypeSize(type));
  return reduction;
}

Reduction combiningPartials(const Reduction& reduction) {
  Reduction combining = reduction;
  if (combining.kind == RedOpKind::kPreMulSum) combining.kind = RedOpKind::kSum;
  return combining;
}

}  // namespace weft::algorithms
