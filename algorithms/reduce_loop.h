#pragma once
// The kernel loop, written once and compiled once per instruction-set level: each
// reduce_kernel_*.cc calls runReduceKernel from a function built for its target, and everything
// here is inlined into it. Full vectors go straight from memory to memory; a partial vector (the
// last one, and with a streamed output the first, which aligns the rest) is staged through
// zero-padded copies so that it runs the very same lane code.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "algorithms/datatype.h"
#include "algorithms/reduce_element.h"
#include "algorithms/reduce_isa.h"

namespace weft::algorithms {

template <class E, LaneOp kOp>
[[gnu::always_inline]] inline typename E::Raw combineLanes(const typename E::Raw& l,
                                                           const typename E::Raw& p,
                                                           const typename E::Factor& s) {
  if constexpr (kOp == LaneOp::kSum) return E::sum(p, l);
  if constexpr (kOp == LaneOp::kProd) return E::prod(p, l);
  if constexpr (kOp == LaneOp::kMax) return E::max(p, l);
  if constexpr (kOp == LaneOp::kMin) return E::min(p, l);
  if constexpr (kOp == LaneOp::kPreMulSum) return E::preMulSum(p, l, s);
  if constexpr (kOp == LaneOp::kScale) return E::scale(l, s);
  if constexpr (kOp == LaneOp::kCopy) return l;
}

/// Orders earlier non-temporal stores before later stores (they are weakly ordered on x86).
[[gnu::always_inline]] inline void storeFence() {
#if defined(__x86_64__)
  __builtin_ia32_sfence();
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/// One partial vector, [offset, offset + bytes) with bytes < the vector size, staged through
/// zero-padded copies so that it runs the very same lane code as the full vectors.
template <class E, LaneOp kOp>
[[gnu::always_inline]] inline void reducePartial(const KernelArgs& args, const typename E::Factor& factor,
                                                 size_t offset, size_t bytes) {
  using Raw = typename E::Raw;
  Raw l{};
  Raw p{};
  std::memcpy(&l, args.local + offset, bytes);
  if (kOp != LaneOp::kScale && kOp != LaneOp::kCopy) std::memcpy(&p, args.peer + offset, bytes);
  Raw v = combineLanes<E, kOp>(l, p, factor);
  std::memcpy(args.out + offset, &v, bytes);
  if (args.out2 != nullptr) std::memcpy(args.out2 + offset, &v, bytes);
}

/// Full vectors over [begin, end); `kStream` writes `out` with non-temporal stores, which needs
/// `out + begin` aligned to the vector size, and with `stream2` `out2` too (aligned alike).
template <class E, LaneOp kOp, bool kStream>
[[gnu::always_inline]] inline void reduceVectors(const KernelArgs& args, const typename E::Factor& factor,
                                                 size_t begin, size_t end, bool stream2 = false) {
  using Raw = typename E::Raw;
  constexpr bool kReadsPeer = kOp != LaneOp::kScale && kOp != LaneOp::kCopy;
  constexpr size_t kStep = sizeof(Raw);
  // Local copies: the stores below go through byte pointers, which could alias `args`.
  const unsigned char* const local = args.local;
  const unsigned char* const peer = args.peer;
  unsigned char* const out = args.out;
  unsigned char* const out2 = args.out2;
  for (size_t offset = begin; offset < end; offset += kStep) {
    Raw l = loadLanes<Raw>(local + offset);
    Raw p = kReadsPeer ? loadLanes<Raw>(peer + offset) : Raw{};
    Raw v = combineLanes<E, kOp>(l, p, factor);
    if constexpr (kStream) {
      streamLanes(out + offset, v);
    } else {
      storeLanes(out + offset, v);
    }
    if (out2 == nullptr) continue;
    if constexpr (kStream) {
      if (stream2) {
        streamLanes(out2 + offset, v);
        continue;
      }
    }
    storeLanes(out2 + offset, v);
  }
}

template <class E, LaneOp kOp>
[[gnu::always_inline]] inline void reduceLoop(const KernelArgs& given) {
  using Raw = typename E::Raw;
  // The loop aligns on `out`: where only `out2` is streamed, the two trade places. Both get every
  // value, written after its inputs are read, so after the swap `out2` may be the input that
  // `out` was allowed to be.
  KernelArgs args = given;
  if (!args.streamOut && args.streamOut2 && args.out2 != nullptr) {
    std::swap(args.out, args.out2);
    std::swap(args.streamOut, args.streamOut2);
  }
  constexpr size_t kStep = sizeof(Raw);
  const size_t bytes = args.count * sizeof(LaneElement<Raw>);
  const typename E::Factor factor = E::factor(args.scalar);
  // Streaming needs `out` aligned to the vector: a partial vector first brings it there, when the
  // element size allows (an element never straddles the boundary).
  size_t head = 0;
  bool stream = false;
  if (args.streamOut && kCanStreamLanes<Raw>) {
    head = (kStep - reinterpret_cast<uintptr_t>(args.out) % kStep) % kStep;
    stream = head % sizeof(LaneElement<Raw>) == 0 && bytes >= head + kStep;
  }
  if (!stream) head = 0;
  if (head > 0) reducePartial<E, kOp>(args, factor, 0, head);
  const size_t fullEnd = head + (bytes - head) / kStep * kStep;
  if (stream) {
    const bool stream2 = args.streamOut2 && args.out2 != nullptr &&
                         (reinterpret_cast<uintptr_t>(args.out2) - reinterpret_cast<uintptr_t>(args.out)) % kStep == 0;
    reduceVectors<E, kOp, true>(args, factor, head, fullEnd, stream2);
    storeFence();
  } else {
    reduceVectors<E, kOp, false>(args, factor, head, fullEnd);
  }
  if (fullEnd < bytes) reducePartial<E, kOp>(args, factor, fullEnd, bytes - fullEnd);
}

template <class E>
[[gnu::always_inline]] inline void reduceLoopForOp(LaneOp op, const KernelArgs& args) {
  switch (op) {
    case LaneOp::kSum: return reduceLoop<E, LaneOp::kSum>(args);
    case LaneOp::kProd: return reduceLoop<E, LaneOp::kProd>(args);
    case LaneOp::kMax: return reduceLoop<E, LaneOp::kMax>(args);
    case LaneOp::kMin: return reduceLoop<E, LaneOp::kMin>(args);
    case LaneOp::kPreMulSum: return reduceLoop<E, LaneOp::kPreMulSum>(args);
    case LaneOp::kScale: return reduceLoop<E, LaneOp::kScale>(args);
    case LaneOp::kCopy: return reduceLoop<E, LaneOp::kCopy>(args);
  }
}

/// Runs `op` over `args` for `type` with vectors of `kBytes` (the target's register width); the
/// body of every reduce_kernel_*.cc entry point.
template <int kBytes>
[[gnu::always_inline]] inline void runReduceKernel(DataType type, LaneOp op,
                                                   const KernelArgs& args) {
  switch (type) {
    case DataType::kInt8: return reduceLoopForOp<IntegerElement<int8_t, kBytes>>(op, args);
    case DataType::kUint8: return reduceLoopForOp<IntegerElement<uint8_t, kBytes>>(op, args);
    case DataType::kInt32: return reduceLoopForOp<IntegerElement<int32_t, kBytes>>(op, args);
    case DataType::kUint32: return reduceLoopForOp<IntegerElement<uint32_t, kBytes>>(op, args);
    case DataType::kInt64: return reduceLoopForOp<IntegerElement<int64_t, kBytes>>(op, args);
    case DataType::kUint64: return reduceLoopForOp<IntegerElement<uint64_t, kBytes>>(op, args);
    case DataType::kFloat16: return reduceLoopForOp<NarrowElement<HalfFormat, kBytes>>(op, args);
    case DataType::kFloat32: return reduceLoopForOp<FloatElement<float, kBytes>>(op, args);
    case DataType::kFloat64: return reduceLoopForOp<FloatElement<double, kBytes>>(op, args);
    case DataType::kBfloat16:
      return reduceLoopForOp<NarrowElement<Bfloat16Format, kBytes>>(op, args);
    case DataType::kFloat8e4m3:
      return reduceLoopForOp<NarrowElement<Fp8e4m3Format, kBytes>>(op, args);
    case DataType::kFloat8e5m2:
      return reduceLoopForOp<NarrowElement<Fp8e5m2Format, kBytes>>(op, args);
  }
}

}  // namespace weft::algorithms
