#pragma once
// Whether a shared-memory sender writes its slots with non-temporal stores, decided by timing its
// own writes both ways.
//
// A slot written through the caches takes each line into the sender's cache first. Where the
// receiver's core shares a cache with the sender's, that costs little, and the receiver then reads
// the lines from that cache. Where it does not (cores of different CCDs of an AMD EPYC, or of
// different sockets), each line the receiver read last must first be taken back from the
// receiver's cache, and on a 2-core EPYC virtual machine whose cores sat on different CCDs at
// times, an 8 MiB allreduce through the slots then took 5x longer.
// Non-temporal stores need no line back: they send the slot to memory, and the receiver reads it
// from there, which made the same allreduce up to 1.7x slower where the cores share a cache
// (docs/PERFORMANCE.md). Where the ranks' cores lie is not known beforehand, and a virtual
// machine's cores move while it runs, so each sender measures, and measures again every second.
//
// A trial: the sender writes its pieces through the caches and with non-temporal stores in turn
// (even places of its stream cached, odd ones streamed), and first times a probe: writing the
// first kProbeBytes of the slot, the same way, before the piece goes there. Only a slot whose last
// piece filled those bytes is probed: the receiver has read them, as it will have read a big
// piece's. The probe times the writes alone, whatever else the caller does for the piece (a copy
// or a reduce, of data in cache or not). The trial pairs each cached probe with the streamed one
// right after it and, after kTrialPairs pairs, takes the median of their ratios: the sender
// streams from then on if the streamed probes took at most kStreamRatio of the cached ones' time.
// Streaming costs the receiver too, which the sender does not see: hence the margin (the ratio
// measured 0.45-1.4 where the cores shared a cache, 0.07-0.3 where they did not).

#include <array>
#include <cstddef>
#include <cstdint>

namespace weft::transport::shm {

/// How a sender's slots are written, for messages: "with non-temporal stores" or "through the caches".
const char* slotWritesName(bool streamed);

class SlotStreamTrial {
 public:
  /// kMeasure runs trials; kCached and kStreamed fix the writes (WEFT_SHM_STREAM_SLOTS 0 and 1).
  enum class Policy { kMeasure, kCached, kStreamed };

  /// Only pieces of at least this many bytes start trials: for smaller ones the hand-off costs
  /// more than the lines, and a stream of them never pays for a trial.
  static constexpr size_t kMinBytes = 64 * 1024;
  /// Bytes a probe writes: the first of the slot.
  static constexpr size_t kProbeBytes = 16 * 1024;
  static constexpr int kTrialPairs = 8;
  static constexpr double kStreamRatio = 0.4;
  static constexpr int64_t kRetrialNanos = 1'000'000'000;

  /// kMeasure starts its first trial with the first piece of kMinBytes or more.
  explicit SlotStreamTrial(Policy policy);

  /// Whether the piece at place `index` of the stream (0, 1, ...) is to be written with
  /// non-temporal stores.
  bool streams(uint64_t index) const { return inTrial_ ? index % 2 == 1 : streamed_; }
  /// Whether the sender should probe a slot it acquires whose last piece was `lastBytes` long.
  bool probes(size_t lastBytes) const { return inTrial_ && lastBytes >= kProbeBytes; }
  /// Whether record() wants a posted piece of `bytes`.
  bool wants(size_t bytes) const { return inTrial_ || (policy_ == Policy::kMeasure && bytes >= kMinBytes); }
  /// Records a posted piece that wants() asked for: written streamed or not, its probe's
  /// nanoseconds (-1: not probed); `now` is the steady clock's nanoseconds. Returns true when a
  /// trial started or ended.
  bool record(bool streamed, int64_t probeNanos, int64_t now);
  /// Whether a trial runs.
  bool inTrial() const { return inTrial_; }
  /// Whether the last trial chose non-temporal stores (before one: the policy's choice).
  bool streamed() const { return streamed_; }
  /// The median ratio (streamed / cached probe time) of the last trial; 0 before one.
  double lastRatio() const { return lastRatio_; }

 private:
  bool recordProbe(bool streamed, int64_t probeNanos, int64_t now);

  Policy policy_;
  bool streamed_;
  bool inTrial_ = false;
  bool tried_ = false;  // a trial has ended
  int64_t settledAt_ = 0;
  int64_t cachedProbeNanos_ = -1;  // the cached probe waiting for its streamed partner; -1: none
  std::array<double, kTrialPairs> ratios_{};
  int pairs_ = 0;
  double lastRatio_ = 0;
};

}  // namespace weft::transport::shm
