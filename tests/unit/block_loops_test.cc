// The GPU kernels' block loops (src/device/block_loops.h), run on the CPU: every thread of a
// simulated block in turn, which is how the block's threads divide the work (no two touch one
// element, so their order does not matter).

#include "src/device/block_loops.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

namespace weft::device {
namespace {

struct Visit {
  uint64_t first;
  uint64_t stride;
  int count;
};

std::vector<Visit> visitsOf(uint64_t begin, uint64_t end, uint32_t thread, uint32_t threads) {
  std::vector<Visit> visits;
  walkWords(begin, end, thread, threads, [&](uint64_t first, uint64_t stride, auto batch) {
    visits.push_back({first, stride, decltype(batch)::value});
  });
  return visits;
}

TEST(WalkWords, EveryWordOnceAndBatchedWhileABatchRemains) {
  for (uint32_t threads : {1u, 3u, 32u, 512u}) {
    for (uint64_t begin : {0ull, 5ull, 1000ull}) {
      for (uint64_t length : {0ull, 1ull, 7ull, 511ull, 2048ull, 2049ull, 6000ull}) {
        const uint64_t end = begin + length;
        std::map<uint64_t, int> seen;
        for (uint32_t thread = 0; thread < threads; ++thread) {
          const std::vector<Visit> visits = visitsOf(begin, end, thread, threads);
          uint64_t expected = begin + thread;  // the thread's words, in order
          for (size_t v = 0; v < visits.size(); ++v) {
            const Visit& visit = visits[v];
            ASSERT_EQ(visit.stride, threads);
            ASSERT_EQ(visit.first, expected);
            // A batch holds kWordsInFlight words where that many of the thread's words remain.
            const uint64_t remaining = (end - visit.first + threads - 1) / threads;
            ASSERT_EQ(visit.count, remaining >= kWordsInFlight ? kWordsInFlight : 1)
                << "threads " << threads << " thread " << thread << " word " << visit.first;
            for (int u = 0; u < visit.count; ++u) ++seen[visit.first + u * visit.stride];
            expected += static_cast<uint64_t>(visit.count) * threads;
          }
        }
        ASSERT_EQ(seen.size(), length) << "threads " << threads << " begin " << begin << " length " << length;
        for (const auto& [word, times] : seen) {
          ASSERT_GE(word, begin);
          ASSERT_LT(word, end);
          ASSERT_EQ(times, 1) << "word " << word;
        }
      }
    }
  }
}

// A buffer of `count` elements whose first element lies `offset` bytes past a 16-byte boundary,
// between guard bytes that no loop may touch.
template <class T>
class Placed {
 public:
  static constexpr unsigned char kGuard = 0xA5;
  Placed(uint64_t count, size_t offset)
      : count_(count),
        bytes_(64 + count * sizeof(T) + 64, kGuard),
        base_(16 - reinterpret_cast<uintptr_t>(bytes_.data()) % 16 + 16 + offset) {}
  Placed(const Placed&) = delete;  // a copy's bytes would lie elsewhere; a move keeps them
  Placed(Placed&&) = default;
  T* data() { return reinterpret_cast<T*>(bytes_.data() + base_); }
  T get(uint64_t i) const {
    T value;
    std::memcpy(&value, bytes_.data() + base_ + i * sizeof(T), sizeof(T));
    return value;
  }
  void set(uint64_t i, T value) { std::memcpy(bytes_.data() + base_ + i * sizeof(T), &value, sizeof(T)); }
  bool guardsIntact() const {
    for (size_t b = 0; b < bytes_.size(); ++b) {
      const bool inside = b >= base_ && b < base_ + count_ * sizeof(T);
      if (!inside && bytes_[b] != kGuard) return false;
    }
    return true;
  }

 private:
  uint64_t count_;
  std::vector<unsigned char> bytes_;
  size_t base_;  // where the data starts in bytes_: `offset` past a 16-byte boundary
};

template <class T>
T receivedValue(uint64_t i) {
  return static_cast<T>(i * 2654435761u + 17);
}
template <class T>
T localValue(uint64_t i) {
  return static_cast<T>(i * 40503u + 3);
}

// Where each buffer starts past a 16-byte boundary.
struct Offsets {
  size_t received;
  size_t local;
  size_t out;
  size_t out2;
};

template <class T>
T combined(T received, T local) {
  return static_cast<T>(received * 3 + local);  // not symmetric: swapped operands show
}

// Runs combineElements over every thread of a block and checks every output element and guard:
// an element combined with the wrong partner or with its operands swapped shows, and in place one
// combined twice.
template <class T>
void checkCombine(uint64_t units, uint32_t threads, Offsets offsets, bool withReceived, bool withLocal, bool withOut2,
                  bool inPlace) {
  SCOPED_TRACE(::testing::Message() << "element bytes " << sizeof(T) << ", units " << units << ", threads " << threads
                                    << ", offsets " << offsets.received << "/" << offsets.local << "/" << offsets.out
                                    << "/" << offsets.out2 << ", received " << withReceived << ", local " << withLocal
                                    << ", out2 " << withOut2 << ", in place " << inPlace);
  Placed<T> received(units, offsets.received);
  Placed<T> local(units, offsets.local);
  Placed<T> out(units, offsets.out);
  Placed<T> out2(units, offsets.out2);
  for (uint64_t i = 0; i < units; ++i) {
    received.set(i, receivedValue<T>(i));
    local.set(i, localValue<T>(i));
    out.set(i, static_cast<T>(0x5a));
    out2.set(i, static_cast<T>(0x5a));
  }
  T* outData = inPlace ? local.data() : out.data();
  for (uint32_t thread = 0; thread < threads; ++thread) {
    combineElements<T>(withReceived ? received.data() : nullptr, withLocal ? local.data() : nullptr, outData,
                       withOut2 ? out2.data() : nullptr, units, thread, threads, combined<T>);
  }
  const Placed<T>& result = inPlace ? local : out;
  for (uint64_t i = 0; i < units; ++i) {
    const T expected = combined<T>(withReceived ? receivedValue<T>(i) : T{}, withLocal ? localValue<T>(i) : T{});
    ASSERT_EQ(result.get(i), expected) << "element " << i;
    if (withOut2) {
      ASSERT_EQ(out2.get(i), expected) << "element " << i << " of out2";
    }
  }
  EXPECT_TRUE(received.guardsIntact());
  EXPECT_TRUE(local.guardsIntact());
  EXPECT_TRUE(out.guardsIntact());
  EXPECT_TRUE(out2.guardsIntact());
}

// All aligned (words); then one buffer (each in turn) or all of them an element or 8 bytes off a
// boundary, which must move element by element.
template <class T>
std::vector<Offsets> layouts() {
  std::vector<Offsets> all = {{0, 0, 0, 0}};
  for (size_t shift : {sizeof(T) % 16, size_t{8}}) {
    if (shift == 8 && sizeof(T) == 8) continue;  // the element's own size, already taken
    all.insert(all.end(), {{shift, 0, 0, 0}, {0, shift, 0, 0}, {0, 0, shift, 0}, {0, 0, 0, shift}, {shift, shift, shift, shift}});
  }
  return all;
}

template <class T>
void checkCombineShapes() {
  for (uint64_t units : {0ull, 1ull, 15ull, 16ull, 17ull, 255ull, 4099ull, 20000ull}) {
    for (uint32_t threads : {1u, 32u, 512u}) {
      for (const Offsets& offsets : layouts<T>()) {
        checkCombine<T>(units, threads, offsets, true, true, false, false);
        checkCombine<T>(units, threads, offsets, true, true, true, false);
        checkCombine<T>(units, threads, offsets, false, true, true, false);
        checkCombine<T>(units, threads, offsets, true, false, false, false);
        checkCombine<T>(units, threads, offsets, true, true, true, true);
      }
    }
  }
}

TEST(CombineElements, EveryElementOnceForEachElementSize) {
  checkCombineShapes<uint8_t>();
  checkCombineShapes<uint16_t>();
  checkCombineShapes<uint32_t>();
  checkCombineShapes<uint64_t>();
}

// copyBytes over every thread of a block from a buffer `fromOffset` bytes past a 16-byte
// boundary to one (and a second) `outOffset` past one: every byte copied, no guard touched.
void checkCopy(uint64_t bytes, uint32_t threads, size_t fromOffset, size_t outOffset, bool withOut2) {
  SCOPED_TRACE(::testing::Message() << "bytes " << bytes << ", threads " << threads << ", offsets " << fromOffset
                                    << "/" << outOffset << ", out2 " << withOut2);
  Placed<uint8_t> from(bytes, fromOffset);
  Placed<uint8_t> out(bytes, outOffset);
  Placed<uint8_t> out2(bytes, outOffset);
  for (uint64_t i = 0; i < bytes; ++i) from.set(i, receivedValue<uint8_t>(i));
  for (uint32_t thread = 0; thread < threads; ++thread) {
    copyBytes(from.data(), out.data(), withOut2 ? out2.data() : nullptr, bytes, thread, threads);
  }
  for (uint64_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(out.get(i), receivedValue<uint8_t>(i)) << "byte " << i;
    if (withOut2) {
      ASSERT_EQ(out2.get(i), receivedValue<uint8_t>(i)) << "byte " << i << " of out2";
    }
  }
  EXPECT_TRUE(from.guardsIntact());
  EXPECT_TRUE(out.guardsIntact());
  EXPECT_TRUE(out2.guardsIntact());
}

TEST(CopyBytes, EveryByteOnceAtEveryAlignment) {
  for (uint64_t bytes : {0ull, 1ull, 6ull, 12ull, 16ull, 20ull, 255ull, 4100ull, 20000ull}) {
    for (uint32_t threads : {1u, 32u, 512u}) {
      for (size_t fromOffset : {0, 1, 2, 4, 8}) {
        for (size_t outOffset : {0, 4, 8}) {
          checkCopy(bytes, threads, fromOffset, outOffset, false);
          checkCopy(bytes, threads, fromOffset, outOffset, true);
        }
      }
    }
  }
}

TEST(CopyBytes, TheUnitIsTheWidestEveryAddressAndTheCountAllow) {
  alignas(16) static unsigned char memory[64];
  unsigned char* aligned = memory;
  EXPECT_EQ(copyUnit(aligned, aligned + 16, nullptr, 4096), 8u);
  EXPECT_EQ(copyUnit(aligned, aligned + 16, aligned + 32, 4096), 8u);
  EXPECT_EQ(copyUnit(aligned + 4, aligned + 16, nullptr, 4096), 4u);  // a float chunk's start
  EXPECT_EQ(copyUnit(aligned, aligned + 16, aligned + 36, 4096), 4u);
  EXPECT_EQ(copyUnit(aligned, aligned + 16, nullptr, 4094), 2u);
  EXPECT_EQ(copyUnit(aligned + 1, aligned + 16, nullptr, 4096), 1u);
}

TEST(CombineElements, WordsTakeElementsInOrder) {
  const auto firstMinusSecond = [](int32_t a, int32_t b) { return a - b; };
  Word16 received;
  Word16 local;
  for (int e = 0; e < 4; ++e) {
    const int32_t r = 100 * (e + 1);
    const int32_t l = e + 1;
    std::memcpy(&received.part[e], &r, 4);
    std::memcpy(&local.part[e], &l, 4);
  }
  const Word16 result = combineWords<int32_t>(received, local, firstMinusSecond);
  for (int e = 0; e < 4; ++e) {
    int32_t value;
    std::memcpy(&value, &result.part[e], 4);
    EXPECT_EQ(value, 100 * (e + 1) - (e + 1));
  }
  const Word16 doubled = mapWord<int32_t>(local, [](int32_t v) { return 2 * v; });
  for (int e = 0; e < 4; ++e) {
    int32_t value;
    std::memcpy(&value, &doubled.part[e], 4);
    EXPECT_EQ(value, 2 * (e + 1));
  }
}

// reduceRankWords on n ranks' buffers of `words` words, over every thread of a block, for the
// words [begin, end), into separate outputs or in place: an order- and rank-sensitive fold shows a
// rank skipped, taken twice, out of order or with another's index; the words outside [begin, end)
// must keep their old values.
template <class T>
void checkReduceRanks(int n, uint64_t words, uint64_t begin, uint64_t end, uint32_t threads, bool inPlace) {
  SCOPED_TRACE(::testing::Message() << "element bytes " << sizeof(T) << ", ranks " << n << ", words [" << begin << ", "
                                    << end << ") of " << words << ", threads " << threads << ", in place " << inPlace);
  constexpr uint64_t kPerWord = sizeof(Word16) / sizeof(T);
  const uint64_t count = words * kPerWord;
  const auto fold = [](T partial, T x, int r) {
    return r == 0 ? static_cast<T>(x + 1) : static_cast<T>(partial * 3 + x * (r + 2));
  };
  const auto finish = [](T value) { return static_cast<T>(value ^ 0x5A); };
  const auto input = [](int r, uint64_t i) { return static_cast<T>(i * 2654435761u + r * 977u + 5); };
  const T untouched = static_cast<T>(0x33);
  std::vector<Placed<T>> ins;
  std::vector<Placed<T>> outs;
  for (int r = 0; r < n; ++r) {
    ins.emplace_back(count, 0);
    outs.emplace_back(count, 0);
  }
  std::vector<const T*> inputs;
  std::vector<T*> outputs;
  for (int r = 0; r < n; ++r) {
    for (uint64_t i = 0; i < count; ++i) {
      ins[r].set(i, input(r, i));
      outs[r].set(i, untouched);
    }
    inputs.push_back(ins[r].data());
    outputs.push_back(inPlace ? ins[r].data() : outs[r].data());
  }
  for (uint32_t thread = 0; thread < threads; ++thread) {
    reduceRankWords<T>(inputs.data(), outputs.data(), n, begin, end, thread, threads, fold, finish);
  }
  for (uint64_t i = 0; i < count; ++i) {
    const bool inside = i / kPerWord >= begin && i / kPerWord < end;
    T reduced{};
    for (int r = 0; r < n; ++r) reduced = fold(reduced, input(r, i), r);
    reduced = finish(reduced);
    for (int r = 0; r < n; ++r) {
      const T expected = inside ? reduced : inPlace ? input(r, i) : untouched;
      ASSERT_EQ((inPlace ? ins[r] : outs[r]).get(i), expected) << "rank " << r << " element " << i;
    }
  }
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(ins[r].guardsIntact());
    EXPECT_TRUE(outs[r].guardsIntact());
  }
}

TEST(ReduceRankWords, EveryRankFoldsInRankOrderIntoEveryOutput) {
  for (int n = 1; n <= 8; ++n) {
    for (uint32_t threads : {1u, 32u, 512u}) {
      for (bool inPlace : {false, true}) {
        checkReduceRanks<uint8_t>(n, 3000, 3, 2990, threads, inPlace);
        checkReduceRanks<uint32_t>(n, 3000, 0, 3000, threads, inPlace);
        checkReduceRanks<uint64_t>(n, 5000, 1, 4990, threads, inPlace);
        checkReduceRanks<uint64_t>(n, 5, 1, 4, threads, inPlace);
      }
    }
  }
}

}  // namespace
}  // namespace weft::device
