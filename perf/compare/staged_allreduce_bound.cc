// staged_allreduce_bound: the fastest allreduce found when no rank sees another's buffers, so that
// every byte passes through memory that both ends map: a ring through shared slots and nothing
// else (two counters per connection, no protocol, no argument checks, no tuner). Against
// visible_allreduce_bound it prices the staging itself; against all_reduce_perf, Weft's overhead
// on top of it.
//
// -p N processes, each with private input and output buffers, in a ring: rank r sends to r+1
// through a connection of slots of Weft's default size in one shared mapping. Each operation is
// the ring allreduce Weft runs: the buffer in N chunks, and for each piece of a slot's size a
// reduce-scatter then an allgather of 2N-1 steps, with the reductions written straight into the
// next slot. Outputs of 8 MiB and more are written with non-temporal stores, as Weft writes them
// (WEFT_STREAM_MIN_BYTES). busbw uses the allreduce formula, 2(N-1)/N.
//   staged_allreduce_bound -p 2 -b 8 -e 256M -f 2

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "perf/compare/forked_team.h"
#include "perf/compare/sweep.h"

namespace weft::perf::compare {
namespace {

constexpr size_t kSlotBytes = 512 << 10;  // NCCL_BUFFSIZE's default of 4 MiB over 8 slots
constexpr size_t kStreamMinBytes = 8 << 20;
constexpr size_t kLineFloats = 16;
constexpr size_t kLineBytes = kLineFloats * sizeof(float);
typedef float Line __attribute__((vector_size(kLineBytes)));

// Slots per connection: a round sends 2N-2 pieces over each connection before it receives the
// last of the round's, so a ring needs that many, and at least Weft's 8.
size_t slotsFor(int ranks) { return std::max<size_t>(8, 2 * static_cast<size_t>(ranks)); }

// One direction of one pair: a ring of slots and how many have been posted and released, each
// counter on its own cache line.
struct alignas(kLineBytes) Connection {
  alignas(kLineBytes) std::atomic<uint64_t> posted{0};
  alignas(kLineBytes) std::atomic<uint64_t> released{0};
  // The slots follow the header in the mapping.
  char* slot(uint64_t position, size_t slots) { return reinterpret_cast<char*>(this + 1) + position % slots * kSlotBytes; }
};

size_t connectionBytes(size_t slots) { return sizeof(Connection) + slots * kSlotBytes; }

// Stores one line at `out`: non-temporal when `stream` (out then 16-byte aligned).
inline void storeLine(float* out, const Line& value, bool stream) {
#if defined(__x86_64__)
  if (stream) {
    typedef long long Words __attribute__((vector_size(16)));
    Words words[4];
    std::memcpy(words, &value, sizeof(words));
    for (int k = 0; k < 4; ++k) _mm_stream_si128(reinterpret_cast<__m128i*>(out) + k, words[k]);
    return;
  }
#endif
  std::memcpy(out, &value, sizeof(Line));
}

// out[i] = a[i] + b[i] for count floats, and the same into out2 when not null. The caller fences
// streamed stores.
[[gnu::target_clones("avx512f", "avx2", "default")]]
void sum(const float* a, const float* b, float* out, float* out2, size_t count, bool stream) {
  stream = stream && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  size_t i = 0;
  for (; i + kLineFloats <= count; i += kLineFloats) {
    Line value;
    Line other;
    std::memcpy(&value, a + i, sizeof(Line));
    std::memcpy(&other, b + i, sizeof(Line));
    value += other;
    storeLine(out + i, value, stream);
    if (out2 != nullptr) std::memcpy(out2 + i, &value, sizeof(Line));
  }
  for (; i < count; ++i) {
    out[i] = a[i] + b[i];
    if (out2 != nullptr) out2[i] = out[i];
  }
}

// Copies count floats from `from` to `out` (streamed when `stream`) and to out2 when not null.
[[gnu::target_clones("avx512f", "avx2", "default")]]
void copy(const float* from, float* out, float* out2, size_t count, bool stream) {
  if (out2 != nullptr) std::memcpy(out2, from, count * sizeof(float));
  if (!stream || reinterpret_cast<uintptr_t>(out) % 16 != 0) {
    std::memcpy(out, from, count * sizeof(float));
    return;
  }
  size_t i = 0;
  for (; i + kLineFloats <= count; i += kLineFloats) {
    Line value;
    std::memcpy(&value, from + i, sizeof(Line));
    storeLine(out + i, value, true);
  }
  std::memcpy(out + i, from + i, (count - i) * sizeof(float));
}

class StagedAllReduce final : public SweepTarget {
 public:
  // mapping: one connection per rank (rank r's is the one it sends on), each connectionBytes().
  StagedAllReduce(ForkedTeam& team, char* mapping, size_t maxBytes)
      : team_(team), maxBytes_(maxBytes), slots_(slotsFor(team.ranks())), input_(maxBytes), output_(maxBytes) {
    const size_t bytes = connectionBytes(slots_);
    const int ranks = team.ranks();
    send_ = reinterpret_cast<Connection*>(mapping + static_cast<size_t>(rank()) * bytes);
    recv_ = reinterpret_cast<Connection*>(mapping + static_cast<size_t>((rank() + ranks - 1) % ranks) * bytes);
  }

  int rank() const override { return team_.rank(); }
  int ranks() const override { return team_.ranks(); }
  double busBandwidthFactor() const override { return allReduceBusFactor(team_.ranks()); }
  RowLabels labels() const override { return kFloatSum; }

  bool runOnce(size_t bytes, int iter) override {
    const size_t offset = iterationOffset(bytes, maxBytes_, iter);
    ring(input_.floats(offset), output_.floats(offset), bytes / sizeof(float), bytes >= kStreamMinBytes);
    return true;
  }

  int64_t checkOnce(size_t bytes) override {
    const size_t count = bytes / sizeof(float);
    fillCheckInput(input_.floats(), count, rank());
    std::memset(output_.bytes(), 0, bytes);
    team_.barrier();
    runOnce(bytes, 0);
    return countWrongSums(output_.floats(), count, ranks());
  }

  void barrier() override { team_.barrier(); }
  double sumOverRanks(double value) override { return team_.sumOverRanks(value); }

 private:
  // The ring allreduce of count floats: piece k of every step, then piece k + 1. Step s handles
  // chunk (rank - s) mod N: s = 0 sends this rank's input; 0 < s < N-1 adds the input to what
  // arrived and sends it on; s = N-1 completes the chunk into the output and sends it; later steps
  // copy the arriving complete chunks into the output, sending on all but the last.
  void ring(const float* input, float* output, size_t count, bool stream) {
    const int n = ranks();
    const size_t pieceFloats = kSlotBytes / sizeof(float);
    const size_t rounds = (chunkStart(count, 1) + pieceFloats - 1) / pieceFloats;  // chunk 0 is the largest
    for (size_t round = 0; round < rounds; ++round) {
      for (int step = 0; step <= 2 * n - 2; ++step) {
        const int chunk = ((rank() - step) % n + n) % n;
        const size_t begin = chunkStart(count, chunk) + round * pieceFloats;
        const size_t end = std::min(chunkStart(count, chunk + 1), begin + pieceFloats);
        if (begin >= end) continue;
        const float* arrived = step > 0 ? peek() : nullptr;
        float* next = step < 2 * n - 2 ? acquire() : nullptr;
        float* out = step >= n - 1 ? output + begin : next;
        float* out2 = step >= n - 1 ? next : nullptr;
        const float* local = step < n ? input + begin : nullptr;
        const bool streams = stream && out == output + begin;
        if (step == 0) {
          copy(local, next, nullptr, end - begin, false);
        } else if (local != nullptr) {
          sum(arrived, local, out, out2, end - begin, streams);
        } else {
          copy(arrived, out, out2, end - begin, streams);
        }
        fenceStreamedStores(stream);
        if (next != nullptr) send_->posted.store(++sent_, std::memory_order_release);
        if (arrived != nullptr) recv_->released.store(++received_, std::memory_order_release);
      }
    }
  }

  // The oldest posted slot from the previous rank.
  const float* peek() {
    for (int spins = 0; recv_->posted.load(std::memory_order_acquire) <= received_;) idlePoll(spins);
    return reinterpret_cast<const float*>(recv_->slot(received_, slots_));
  }

  // The next free slot toward the next rank.
  float* acquire() {
    for (int spins = 0; sent_ - send_->released.load(std::memory_order_acquire) >= slots_;) idlePoll(spins);
    return reinterpret_cast<float*>(send_->slot(sent_, slots_));
  }

  static void fenceStreamedStores(bool stream) {
#if defined(__x86_64__)
    if (stream) _mm_sfence();
#endif
    (void)stream;
  }

  // Where chunk c of count floats starts: N chunks of whole lines (the last takes the rest).
  size_t chunkStart(size_t count, int chunk) const {
    const size_t lines = (count + kLineFloats - 1) / kLineFloats;
    const size_t perChunk = (lines + static_cast<size_t>(ranks()) - 1) / static_cast<size_t>(ranks());
    return std::min(count, perChunk * kLineFloats * static_cast<size_t>(chunk));
  }

  ForkedTeam& team_;
  size_t maxBytes_;
  size_t slots_;
  TouchedBuffer input_;
  TouchedBuffer output_;
  Connection* send_ = nullptr;
  Connection* recv_ = nullptr;
  uint64_t sent_ = 0;      // slots posted on send_
  uint64_t received_ = 0;  // slots released on recv_
};

}  // namespace
}  // namespace weft::perf::compare

int main(int argc, char** argv) {
  using namespace weft::perf::compare;
  SweepOptions options;
  int exitCode = 0;
  if (!parseSweepOptions(argc, argv,
                         "an allreduce (float sum) between -p processes with private buffers, as a ring through "
                         "shared slots with no protocol: the bound of staging through shared memory",
                         ExtraFlags{.ranks = true}, &options, &exitCode)) {
    return exitCode;
  }
  if (options.ranks < 2) {
    std::fprintf(stderr, "staged_allreduce_bound: a ring needs -p 2 or more\n");
    return 2;
  }
  const size_t perConnection = connectionBytes(slotsFor(options.ranks));
  const size_t mappingBytes = static_cast<size_t>(options.ranks) * perConnection;
  void* mapping = mmap(nullptr, mappingBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    std::fprintf(stderr, "staged_allreduce_bound: cannot map %zu shared bytes: lower -p\n", mappingBytes);
    return 1;
  }
  std::memset(mapping, 0, mappingBytes);  // every page exists before forking
  for (int rank = 0; rank < options.ranks; ++rank) {
    new (static_cast<char*>(mapping) + static_cast<size_t>(rank) * perConnection) Connection;
  }
  const int status = ForkedTeam::run(options.ranks, [&](ForkedTeam& team) {
    StagedAllReduce target(team, static_cast<char*>(mapping), options.maxBytes);
    return runSweep(options, "# staged_allreduce_bound: private buffers, a ring through shared slots", target);
  });
  munmap(mapping, mappingBytes);
  return status;
}
