#include "tests/multirank/reference.h"

#include <cstring>

#include "tests/multirank/typed_values.h"

namespace weft::multirank {
namespace {

template <typename R>
void reduceIntegers(const Reduction& op, const std::vector<const void*>& inputs, size_t count,
                    typename R::Storage* out) {
  using S = typename R::Storage;
  using U = typename R::Unsigned;
  const int nranks = static_cast<int>(inputs.size());
  const U scalar = static_cast<U>(static_cast<int64_t>(op.scalar));
  for (size_t i = 0; i < count; ++i) {
    U acc = 0;
    for (int r = 0; r < nranks; ++r) {
      U x = static_cast<U>(static_cast<const S*>(inputs[r])[i]);
      if (op.kind == ReduceKind::kPreMulSum) x = static_cast<U>(uint64_t{x} * uint64_t{scalar});
      if (r == 0) {
        acc = x;
        continue;
      }
      switch (op.kind) {
        case ReduceKind::kProd: acc = static_cast<U>(uint64_t{acc} * uint64_t{x}); break;
        case ReduceKind::kMax: acc = static_cast<S>(x) > static_cast<S>(acc) ? x : acc; break;
        case ReduceKind::kMin: acc = static_cast<S>(x) < static_cast<S>(acc) ? x : acc; break;
        default: acc = static_cast<U>(acc + x); break;
      }
    }
    if (op.kind == ReduceKind::kAvg) {
      if constexpr (std::is_signed_v<S>) {
        acc = static_cast<U>(static_cast<int64_t>(static_cast<S>(acc)) / nranks);
      } else {
        acc = static_cast<U>(acc / static_cast<U>(nranks));
      }
    }
    out[i] = static_cast<S>(acc);
  }
}

template <typename R>
void reduceFloats(const Reduction& op, const std::vector<const void*>& inputs, size_t count,
                  typename R::Storage* out) {
  using S = typename R::Storage;
  using C = typename R::Compute;
  const int nranks = static_cast<int>(inputs.size());
  const bool premultiplies = op.kind == ReduceKind::kAvg || op.kind == ReduceKind::kPreMulSum;
  const double factor = op.kind == ReduceKind::kAvg ? 1.0 / nranks : op.scalar;
  const C scalar = R::decode(R::encode(factor));
  auto round = [](C value) { return R::decode(R::encodeCompute(value)); };
  for (size_t i = 0; i < count; ++i) {
    S best = static_cast<const S*>(inputs[0])[i];
    C acc = 0;
    for (int r = 0; r < nranks; ++r) {
      const S stored = static_cast<const S*>(inputs[r])[i];
      C x = R::decode(stored);
      if (premultiplies) x = round(x * scalar);
      if (r == 0) {
        acc = x;
        continue;
      }
      switch (op.kind) {
        case ReduceKind::kProd: acc = round(acc * x); break;
        case ReduceKind::kMax:
          if (x > R::decode(best)) best = stored;
          break;
        case ReduceKind::kMin:
          if (x < R::decode(best)) best = stored;
          break;
        default: acc = round(acc + x); break;
      }
    }
    const bool selects = op.kind == ReduceKind::kMax || op.kind == ReduceKind::kMin;
    out[i] = selects ? best : R::encodeCompute(acc);
  }
}

}  // namespace

void reduceReference(const ElementType& type, const Reduction& op,
                     const std::vector<const void*>& inputs, size_t count, void* out) {
  visitElementType(type.type, [&](auto repr) {
    using R = decltype(repr);
    auto* typedOut = static_cast<typename R::Storage*>(out);
    if constexpr (R::kIsFloat) {
      reduceFloats<R>(op, inputs, count, typedOut);
    } else {
      reduceIntegers<R>(op, inputs, count, typedOut);
    }
  });
}

int ulpTolerance(const ElementType& type, const Reduction& op, int nranks) {
  const bool powerOfTwo = (nranks & (nranks - 1)) == 0;
  return type.isFloat() && op.kind == ReduceKind::kAvg && !powerOfTwo ? nranks - 1 : 0;
}

std::optional<Mismatch> findMismatch(const ElementType& type, const void* got, const void* want,
                                     size_t count, int ulps) {
  if (count == 0 || std::memcmp(got, want, count * type.size) == 0) return std::nullopt;
  std::optional<Mismatch> mismatch;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t gotBits = loadBits(type, got, i);
    const uint64_t wantBits = loadBits(type, want, i);
    // Bits, not values, when exact: -0 for +0 or a changed NaN payload is a wrong result too.
    if (gotBits == wantBits) continue;
    if (ulps > 0 && ulpDistance(type, gotBits, wantBits) <= static_cast<uint64_t>(ulps)) continue;
    if (!mismatch) mismatch = Mismatch{i, 0};
    ++mismatch->count;
  }
  return mismatch;
}

uint64_t scalarBits(const ElementType& type, double value) { return doubleToBits(type, value); }

}  // namespace weft::multirank
