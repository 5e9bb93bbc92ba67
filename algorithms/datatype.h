#pragma once
// Element types and reduction operators, as the algorithms and kernels see them.
// The numeric values equal NCCL's ncclDataType_t and built-in ncclRedOp_t.

#include <cstddef>
#include <cstdint>

namespace weft::algorithms {

enum class DataType : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kFloat8e4m3 = 10,
  kFloat8e5m2 = 11,
};
inline constexpr int kNumDataTypes = 12;

/// Bytes per element; 0 for a value outside the enum.
size_t dataTypeSize(DataType type);
/// "int8", "half", "float", "bfloat16", "f8e4m3", ... as nccl-tests prints them; "unknown"
/// outside the enum.
const char* dataTypeName(DataType type);
/// Bytes that schedules cut data in (OpShape::granule): a cache line, the most that a CPU's vector
/// loads want, and a multiple of the 16 bytes that a GPU thread's widest load needs.
inline constexpr size_t kChunkAlignmentBytes = 64;
/// Elements of `type` in kChunkAlignmentBytes; 1 outside the enum.
size_t chunkGranule(DataType type);
bool isFloatingPoint(DataType type);

/// How partial results are combined.
enum class RedOpKind : int {
  kSum = 0,
  kProd = 1,
  kMax = 2,
  kMin = 3,
  kPreMulSum = 4,  // each rank's input is multiplied by `scalar`, then summed
};
/// How many kinds there are: RedOpKind values run from 0 to kNumRedOpKinds - 1.
inline constexpr int kNumRedOpKinds = static_cast<int>(RedOpKind::kPreMulSum) + 1;

/// A reduction, resolved for one data type and rank count. ncclAvg becomes kPreMulSum with scalar
/// 1/nranks for floating types (the double 1.0 / nranks rounded to nearest even in the type), and
/// kSum with `divisor` = nranks for integers (truncating division of the final sum).
struct Reduction {
  DataType type = DataType::kFloat32;
  RedOpKind kind = RedOpKind::kSum;
  /// For kPreMulSum: the multiplier, stored in `type`'s own encoding (little-endian, low bytes).
  alignas(8) unsigned char scalar[8] = {};
  /// For integer average: the final sum is divided by this (1 means no division).
  uint64_t divisor = 1;
  /// For a PreMulSum made with ncclScalarDevice: where the multiplier is read when the call runs
  /// (then `scalar` is unused; on host buffers the call reads it into `scalar` as it starts, on GPU
  /// buffers the kernel reads it); null otherwise.
  const void* scalarAt = nullptr;
};

/// The reduction that combines two partial results of `reduction`: the same, except that
/// PreMulSum's partials are already scaled, so they are summed.
Reduction combiningPartials(const Reduction& reduction);

/// Builds the Reduction for a built-in op (0..4 as ncclRedOp_t) over `nranks` ranks.
Reduction makeBuiltinReduction(DataType type, int op, int nranks);
/// Builds a PreMulSum from a scalar given in `type`'s own encoding.
Reduction makePreMulSum(DataType type, const void* scalar);

}  // namespace weft::algorithms
