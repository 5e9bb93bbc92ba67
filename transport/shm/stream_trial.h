#pragma once
// Whether a shared-memory sender writes its slots with non-temporal stores, decided by timing its
// own writes both ways.
//
// A slot written through the caches takes each line into the sender's cache first. Where the
// receiver's core shares a cache with the sender's, that costs little, and the receiver then reads
// the lines from that cache. Where it does not (cores of different CCDs of an AMD EPYC, or of
// different sockets), each line the receiver read last must first be taken back from the
// receiver's cache: on this project's 2-core EPYC virtual machine, with its cores on different
// CCDs, that made writing a 512 KiB slot 5-10x slower (100-200 us, against 19 us with
// non-temporal stores, which need no line back), and an 8 MiB allreduce through the slots took 9x
// longer. Non-temporal stores send the slot to memory, and the receiver reads it from there: 2.2x
// slower in all where the cores share a cache, since the receiver's reads then come from memory
// (docs/PERFORMANCE.md). Where the ranks' cores lie is not known beforehand, and a virtual
// machine's cores move while it runs, so each sender measures, and measures again every second.
//
// A trial: the sender writes its pieces through the caches and with non-temporal stores in turn
// (even places of its stream cached, odd ones streamed), and first times a probe: writing the
// first kProbeBytes of the slot, the same way, before the piece goes there. The probe times the
// writes alone, whatever else the caller does for the piece (a copy or a reduce, of data in cache
// or not). The trial pairs each cached probe with the streamed one right after it and, after
// kTrialPairs pairs, takes the median of their ratios: the sender streams from then on if the
// streamed probes took at most kStreamRatio of the cached ones' time. Streaming costs the
// receiver too, which the sender does not see: hence the wide margin (the ratio measured 1.1-1.4
// where the cores share a cache, 0.1-0.2 where they did not).

#include <array>
#include <cstddef>
#include <cstdint>

namespace weft::transport::shm {

class SlotStreamTrial {
 public:
  /// kMeasure runs trials; kCached and kStreamed fix the writes (WEFT_SHM_STREAM_SLOTS 0 and 1).
  enum class Policy { kMeasure, kCached, kStreamed };

  /// Only pieces of at least this many bytes start trials: for smaller ones the hand-off costs
  /// more than the lines, and a stream of them never pays for a trial.
  static constexpr size_t kMinBytes = 64 * 1024;
  /// Bytes a probe writes (the slot's first; all of a smaller slot).
  static constexpr size_t kProbeBytes = 16 * 1024;
  static constexpr int kTrialPairs = 8;
  static constexpr double kStreamRatio = 0.5;
  static constexpr int64_t kRetrialNanos = 1'000'000'000;

  /// The first `warmupPieces` pieces of kMinBytes or more come before the first trial: the first
  /// use of each slot faults its pages in.
  SlotStreamTrial(Policy policy, int warmupPieces);

  /// Whether the piece at place `index` of the stream (0, 1, ...) is to be written with
  /// non-temporal stores.
  bool streams(uint64_t index) const { return inTrial_ ? index % 2 == 1 : streamed_; }
  /// Whether the sender should probe the slots it acquires now (a trial runs).
  bool probing() const { return inTrial_; }
  /// Whether record() wants a posted piece of `bytes`.
  bool wants(size_t bytes) const { return inTrial_ || (policy_ == Policy::kMeasure && bytes >= kMinBytes); }
  /// Records a posted piece that wants() asked for: written streamed or not, `bytes` long, its
  /// probe's nanoseconds (-1: not probed); `now` is the steady clock's nanoseconds. Returns true
  /// when a trial started or ended.
  bool record(bool streamed, size_t bytes, int64_t probeNanos, int64_t now);
  /// Whether the last trial chose non-temporal stores (before one: the policy's choice).
  bool streamed() const { return streamed_; }
  /// The median ratio (streamed / cached probe time) of the last trial; 0 before one.
  double lastRatio() const { return lastRatio_; }

 private:
  void startTrial();
  bool recordProbe(bool streamed, int64_t probeNanos, int64_t now);

  Policy policy_;
  bool streamed_;
  int warmupLeft_;
  bool inTrial_ = false;
  int64_t settledAt_ = 0;
  int64_t cachedProbeNanos_ = -1;  // the cached probe waiting for its streamed partner; -1: none
  std::array<double, kTrialPairs> ratios_{};
  int pairs_ = 0;
  double lastRatio_ = 0;
};

}  // namespace weft::transport::shm
