#pragma once
// How the threads of one block walk a piece of memory so that each keeps several loads in flight.
//
// A block's memory throughput is at most the bytes its threads have in flight divided by the
// memory's latency. A loop that loads one 4-byte element per thread per iteration keeps only
// 2 KiB per operand in flight in a block of 512 threads. So the kernels load 16-byte words
// (`Word16`), kWordsInFlight of them per thread and operand before they use any. A thread's words are `threads` apart, so that at each load the block's
// threads read consecutive words. This header is plain C++ as well, so that host tests check
// the walk and the element loop on the CPU.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "src/device/host_device.h"

namespace weft::device {

/// The unit of a vector load or store: on the GPU one 128-bit access.
struct alignas(16) Word16 {
  uint32_t part[4];
};

/// Word `index` of `words` (16-byte aligned): one vector load on the GPU; a copy on the host,
/// where the memory's declared type is not Word16. A misaligned vector access faults on the GPU,
/// so on the host too it traps, for host tests to catch.
WEFT_HOST_DEVICE Word16 loadWord(const void* words, uint64_t index) {
#if defined(__CUDA_ARCH__)
  return static_cast<const Word16*>(words)[index];
#else
  if (reinterpret_cast<uintptr_t>(words) % sizeof(Word16) != 0) __builtin_trap();
  Word16 word;
  std::memcpy(&word, static_cast<const char*>(words) + index * sizeof(Word16), sizeof(Word16));
  return word;
#endif
}

WEFT_HOST_DEVICE void storeWord(void* words, uint64_t index, const Word16& word) {
#if defined(__CUDA_ARCH__)
  static_cast<Word16*>(words)[index] = word;
#else
  if (reinterpret_cast<uintptr_t>(words) % sizeof(Word16) != 0) __builtin_trap();
  std::memcpy(static_cast<char*>(words) + index * sizeof(Word16), &word, sizeof(Word16));
#endif
}

/// Words each thread loads, per operand, before it combines any of them.
inline constexpr int kWordsInFlight = 4;

/// Words [begin, end) over `threads` threads, this one being `thread`: the thread takes words
/// begin + thread, + threads, + 2 threads, ... and hands them to `visit(first, stride, batch)`,
/// kWordsInFlight at a time while that many remain, then one at a time. `batch` is a
/// std::integral_constant holding the number of words, `stride` apart from `first`.
template <class Visit>
WEFT_HOST_DEVICE void walkWords(uint64_t begin, uint64_t end, uint32_t thread, uint32_t threads, const Visit& visit) {
  const uint64_t stride = threads;
  uint64_t first = begin + thread;
  for (; first + (kWordsInFlight - 1) * stride < end; first += kWordsInFlight * stride) {
    visit(first, stride, std::integral_constant<int, kWordsInFlight>{});
  }
  for (; first < end; first += stride) visit(first, stride, std::integral_constant<int, 1>{});
}

/// `combine` applied to each element of two words: element e of the result is
/// combine(received's e, local's e).
template <class Storage, class Combine>
WEFT_HOST_DEVICE Word16 combineWords(const Word16& received, const Word16& local, const Combine& combine) {
  constexpr int kElements = sizeof(Word16) / sizeof(Storage);
  Storage in[kElements];
  Storage mine[kElements];
  Storage out[kElements];
  std::memcpy(in, &received, sizeof(Word16));
  std::memcpy(mine, &local, sizeof(Word16));
  WEFT_UNROLL
  for (int e = 0; e < kElements; ++e) out[e] = combine(in[e], mine[e]);
  Word16 result;
  std::memcpy(&result, out, sizeof(Word16));
  return result;
}

/// `fn` applied to each element of a word.
template <class Storage, class Fn>
WEFT_HOST_DEVICE Word16 mapWord(const Word16& word, const Fn& fn) {
  return combineWords<Storage>(word, word, [&](Storage value, Storage) { return fn(value); });
}

/// One block's share (`thread` of `threads`) of out[i] = combine(received[i], local[i]) for
/// i < units, also written to out2[i] where out2 is set. A null `received` or `local` reads as
/// Storage{} and is not loaded. Where every pointer is 16-byte aligned, the elements up to the
/// last whole word move as words (walkWords); the rest, or all where a pointer is not aligned,
/// move as elements, walked as the words are (kWordsInFlight of them per thread in flight).
template <class Storage, class Combine>
WEFT_HOST_DEVICE void combineElements(const Storage* received, const Storage* local, Storage* out, Storage* out2,
                                      uint64_t units, uint32_t thread, uint32_t threads, const Combine& combine) {
  static_assert(sizeof(Word16) % sizeof(Storage) == 0, "an element must divide a word");
  constexpr uint64_t kPerWord = sizeof(Word16) / sizeof(Storage);
  const uintptr_t alignment = reinterpret_cast<uintptr_t>(received) | reinterpret_cast<uintptr_t>(local) |
                              reinterpret_cast<uintptr_t>(out) | reinterpret_cast<uintptr_t>(out2);
  const uint64_t words = alignment % sizeof(Word16) == 0 ? units / kPerWord : 0;
  walkWords(0, words, thread, threads, [&](uint64_t first, uint64_t stride, auto batch) {
    constexpr int kCount = decltype(batch)::value;
    Word16 in[kCount];
    Word16 mine[kCount];
    WEFT_UNROLL
    for (int u = 0; u < kCount; ++u) {
      in[u] = received != nullptr ? loadWord(received, first + u * stride) : Word16{};
      mine[u] = local != nullptr ? loadWord(local, first + u * stride) : Word16{};
    }
    WEFT_UNROLL
    for (int u = 0; u < kCount; ++u) {
      const Word16 result = combineWords<Storage>(in[u], mine[u], combine);
      storeWord(out, first + u * stride, result);
      if (out2 != nullptr) storeWord(out2, first + u * stride, result);
    }
  });
  walkWords(words * kPerWord, units, thread, threads, [&](uint64_t first, uint64_t stride, auto batch) {
    constexpr int kCount = decltype(batch)::value;
    Storage in[kCount];
    Storage mine[kCount];
    WEFT_UNROLL
    for (int u = 0; u < kCount; ++u) {
      in[u] = received != nullptr ? received[first + u * stride] : Storage{};
      mine[u] = local != nullptr ? local[first + u * stride] : Storage{};
    }
    WEFT_UNROLL
    for (int u = 0; u < kCount; ++u) {
      const Storage result = combine(in[u], mine[u]);
      out[first + u * stride] = result;
      if (out2 != nullptr) out2[first + u * stride] = result;
    }
  });
}

/// The widest of 8, 4, 2 and 1 bytes that the addresses of `from`, `out` and `out2` (null is
/// aligned) and `bytes` are all multiples of.
WEFT_HOST_DEVICE uint32_t copyUnit(const void* from, const void* out, const void* out2, uint64_t bytes) {
  const uint64_t alignment = reinterpret_cast<uintptr_t>(from) | reinterpret_cast<uintptr_t>(out) |
                             reinterpret_cast<uintptr_t>(out2) | bytes;
  return alignment % 8 == 0 ? 8 : alignment % 4 == 0 ? 4 : alignment % 2 == 0 ? 2 : 1;
}

/// One block's share (`thread` of `threads`) of copying `bytes` from `from` to `out`, and to
/// `out2` where it is set: through combineElements in units of copyUnit (so in words where all are
/// 16-byte aligned). Chunks start on 64-byte units of the buffer, but a buffer or a rank's block
/// may not start on 16 bytes (a float's always does on 4): in bytes, a block would keep a quarter
/// as much in flight.
WEFT_HOST_DEVICE void copyBytes(const void* from, void* out, void* out2, uint64_t bytes, uint32_t thread,
                                uint32_t threads) {
  const auto copy = [&](auto unit) {
    using Unit = decltype(unit);
    combineElements(static_cast<const Unit*>(from), static_cast<const Unit*>(nullptr), static_cast<Unit*>(out),
                    static_cast<Unit*>(out2), bytes / sizeof(Unit), thread, threads,
                    [](Unit received, Unit) { return received; });
  };
  switch (copyUnit(from, out, out2, bytes)) {
    case 8: copy(uint64_t{}); break;
    case 4: copy(uint32_t{}); break;
    case 2: copy(uint16_t{}); break;
    default: copy(uint8_t{}); break;
  }
}

/// One block's share (`thread` of `threads`) of words [begin, end) of n ranks' inputs, reduced
/// into every rank's output (all 16-byte aligned). Each element of the result is, in rank order,
/// finish(fold(... fold(fold(Storage{}, x0, 0), x1, 1) ..., x(n-1), n - 1)), where x_r is rank
/// r's element (`fold` ignores its first operand for rank 0). A thread loads its words of two
/// ranks at a time (ranks 0 and 1, then 2 and 3, ...; the last of an odd count alone) before
/// folding them in.
template <class Storage, class Fold, class Finish>
WEFT_HOST_DEVICE void reduceRankWords(const Storage* const* inputs, Storage* const* outputs, int n, uint64_t begin,
                                      uint64_t end, uint32_t thread, uint32_t threads, const Fold& fold,
                                      const Finish& finish) {
  walkWords(begin, end, thread, threads, [&](uint64_t first, uint64_t stride, auto batch) {
    constexpr int kCount = decltype(batch)::value;
    Word16 sum[kCount] = {};
    for (int r = 0; r < n; r += 2) {
      const bool pair = r + 1 < n;
      Word16 in[kCount];
      Word16 next[kCount];
      WEFT_UNROLL
      for (int u = 0; u < kCount; ++u) {
        in[u] = loadWord(inputs[r], first + u * stride);
        next[u] = pair ? loadWord(inputs[r + 1], first + u * stride) : Word16{};
      }
      WEFT_UNROLL
      for (int u = 0; u < kCount; ++u) {
        sum[u] = combineWords<Storage>(sum[u], in[u], [&](Storage partial, Storage x) { return fold(partial, x, r); });
        if (pair) {
          sum[u] = combineWords<Storage>(sum[u], next[u],
                                         [&](Storage partial, Storage x) { return fold(partial, x, r + 1); });
        }
      }
    }
    WEFT_UNROLL
    for (int u = 0; u < kCount; ++u) sum[u] = mapWord<Storage>(sum[u], finish);
    for (int r = 0; r < n; ++r) {
      WEFT_UNROLL
      for (int u = 0; u < kCount; ++u) storeWord(outputs[r], first + u * stride, sum[u]);
    }
  });
}

}  // namespace weft::device
