#include "perf/common/data_types.h"

#include <array>

namespace weft::perf {
namespace {

constexpr std::array<TypeInfo, 12> kTypes = {{
    {ncclInt8, "int8", 1, NumberKind::kSignedInteger},
    {ncclUint8, "uint8", 1, NumberKind::kUnsignedInteger},
    {ncclInt32, "int32", 4, NumberKind::kSignedInteger},
    {ncclUint32, "uint32", 4, NumberKind::kUnsignedInteger},
    {ncclInt64, "int64", 8, NumberKind::kSignedInteger},
    {ncclUint64, "uint64", 8, NumberKind::kUnsignedInteger},
    {ncclFloat16, "half", 2, NumberKind::kFloat},
    {ncclFloat32, "float", 4, NumberKind::kFloat},
    {ncclFloat64, "double", 8, NumberKind::kFloat},
    {ncclBfloat16, "bfloat16", 2, NumberKind::kFloat},
    {ncclFloat8e4m3, "f8e4m3", 1, NumberKind::kFloat},
    {ncclFloat8e5m2, "f8e5m2", 1, NumberKind::kFloat},
}};

constexpr std::array<OpInfo, 6> kOps = {{
    {TestOp::kSum, "sum"},
    {TestOp::kProd, "prod"},
    {TestOp::kMax, "max"},
    {TestOp::kMin, "min"},
    {TestOp::kAvg, "avg"},
    {TestOp::kMulSum, "mulsum"},
}};

}  // namespace

std::span<const TypeInfo> allTypes() { return kTypes; }

const TypeInfo& typeInfo(ncclDataType_t type) {
  for (const TypeInfo& info : kTypes) {
    if (info.type == type) return info;
  }
  return kTypes[7];  // unreachable for valid types; float keeps callers well-defined
}

std::span<const OpInfo> allOps() { return kOps; }

const char* opName(TestOp op) { return kOps[static_cast<size_t>(op)].name; }

ncclRedOp_t builtinRedOp(TestOp op) {
  switch (op) {
    case TestOp::kSum: return ncclSum;
    case TestOp::kProd: return ncclProd;
    case TestOp::kMax: return ncclMax;
    case TestOp::kMin: return ncclMin;
    case TestOp::kAvg: return ncclAvg;
    case TestOp::kMulSum: break;
  }
  return ncclSum;
}

}  // namespace weft::perf
