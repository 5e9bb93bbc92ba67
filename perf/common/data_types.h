#pragma once
// The data types and reduction operators the benchmarks can run, with nccl-tests' names
// (-d int8 ... f8e5m2, -o sum ... mulsum).

#include <cstddef>
#include <span>

#include "nccl.h"

namespace weft::perf {

enum class NumberKind { kSignedInteger, kUnsignedInteger, kFloat };

struct TypeInfo {
  ncclDataType_t type;
  const char* name;  // as -d spells it and the table prints it
  size_t size;       // bytes per element
  NumberKind kind;
};

/// The types in nccl-tests' order: int8 uint8 int32 uint32 int64 uint64 half float double
/// bfloat16 f8e4m3 f8e5m2.
std::span<const TypeInfo> allTypes();

/// The entry of type; type must be one of ncclDataType_t's values.
const TypeInfo& typeInfo(ncclDataType_t type);

/// The operators of -o. kMulSum is ncclRedOpCreatePreMulSum with a per-rank scalar.
enum class TestOp { kSum, kProd, kMax, kMin, kAvg, kMulSum };

struct OpInfo {
  TestOp op;
  const char* name;
};

/// sum prod max min avg mulsum, in nccl-tests' order.
std::span<const OpInfo> allOps();

const char* opName(TestOp op);

/// The built-in ncclRedOp_t of op; kMulSum has none (it is created per call).
ncclRedOp_t builtinRedOp(TestOp op);

}  // namespace weft::perf
