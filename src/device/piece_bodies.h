#pragma once
// What the step kernel does with one piece (src/device/lane_loop.h): combine the received slot
// with the local input (ReduceBody) or move one of them (CopyBody), into the local output and the
// slot to send. Compiled for the GPU, and for the CPU where unit tests run the lane loop.

#include <cstdint>

#include "src/device/block_loops.h"
#include "src/device/device_reduce.cuh"
#include "src/device/lane_loop.h"

namespace weft::device {

/// Reducing launches: units are elements of Math::Storage.
template <class MathType, RedOpKind kOpKind>
struct ReduceBody {
  using Math = MathType;
  using Storage = typename Math::Storage;
  static constexpr RedOpKind kKind = kOpKind;
  static constexpr bool kReduces = true;
  Reducer<Math, kKind> reducer;

  /// One element of the piece's output from the received one and the local one (either unused
  /// where the piece has none).
  WEFT_HOST_DEVICE Storage element(const Piece& piece, Storage received, Storage local) const {
    if (!piece.contribute) return piece.received != nullptr ? received : local;
    const Storage value = piece.received != nullptr ? reducer.reduce(received, local) : reducer.scale(local);
    return piece.finalize ? reducer.finish(value) : value;
  }

  /// The share of thread `thread` of `threads` of a Simple piece.
  WEFT_HOST_DEVICE void operator()(const Piece& piece, uint32_t thread, uint32_t threads) const {
    combineElements(reinterpret_cast<const Storage*>(piece.received), reinterpret_cast<const Storage*>(piece.src),
                    reinterpret_cast<Storage*>(piece.dst != nullptr ? piece.dst : piece.slot),
                    reinterpret_cast<Storage*>(piece.dst != nullptr ? piece.slot : nullptr), piece.units, thread,
                    threads, [&](Storage received, Storage local) { return element(piece, received, local); });
  }

  /// An LL word: the elements among its first `valid` bytes.
  WEFT_HOST_DEVICE uint64_t combineWord(const Piece& piece, uint64_t received, uint64_t local, uint64_t valid) const {
    constexpr int kElements = kLowLatencyLineData / sizeof(Storage);
    union Word {
      uint64_t bits;
      Storage values[kElements];
    };
    Word in{received};
    Word mine{local};
    Word out{0};
    WEFT_UNROLL
    for (int e = 0; e < kElements; ++e) {
      if (e * sizeof(Storage) < valid) out.values[e] = element(piece, in.values[e], mine.values[e]);
    }
    return out.bits;
  }
};

/// Copy launches: units are bytes.
struct CopyBody {
  static constexpr bool kReduces = false;
  WEFT_HOST_DEVICE uint64_t combineWord(const Piece& piece, uint64_t received, uint64_t local, uint64_t) const {
    return piece.received != nullptr ? received : local;
  }

  WEFT_HOST_DEVICE void operator()(const Piece& piece, uint32_t thread, uint32_t threads) const {
    const char* from = piece.received != nullptr ? piece.received : piece.src;
    char* out = piece.dst != nullptr ? piece.dst : piece.slot;
    char* out2 = piece.dst != nullptr ? piece.slot : nullptr;
    if (from == out) {
      if (out2 == nullptr) return;  // in place, nothing to send
      out = out2;
      out2 = nullptr;
    }
    copyBytes(from, out, out2, piece.units, thread, threads);
  }
};

}  // namespace weft::device
