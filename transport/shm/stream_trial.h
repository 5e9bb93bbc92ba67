#pragma once
// Whether a shared-memory sender writes its slots with non-temporal stores, decided by timing its
// own writes both ways.
//
// A slot written through the caches takes each line into the sender's cache first. Where the
// receiver's core shares a cache with the sender's, that costs little, and the receiver then reads
// the lines from that cache. Where it does not (cores of different CCDs of an AMD EPYC; likely of
// different sockets too, not measured), each line the receiver read last must first be taken back
// from the receiver's cache, and on a 2-core EPYC virtual machine whose cores sat on different
// CCDs at times, an 8 MiB allreduce through the slots then took 5x longer.
// Non-temporal stores need no line back: they send the slot to memory, and the receiver reads it
// from there, which made the same allreduce up to 1.7x slower where the cores share a cache
// (docs/PERFORMANCE.md). Where the ranks' cores lie is not known beforehand, and a virtual
// machine's cores move while it runs, so each sender measures, and measures again every second.
//
// A trial: the sender probes the slots whose last piece filled their first kProbeBytes (so every
// probed line was read by the receiver): it times writing those bytes before the piece goes
// there, through the caches at even places of its stream and with non-temporal stores at odd
// ones, and writes the piece the same way; other pieces keep the last choice. The probe times the
// writes alone, whatever else the caller does for the piece (a copy or a reduce, of data in cache
// or not). The trial pairs each cached probe with the streamed one right after it and, after
// kTrialPairs pairs, takes the median of their ratios: the sender streams from then on if the
// streamed probes took at most kStreamRatio of the cached ones' time. Streaming costs the receiver
// too, which the sender does not see: hence the margin (the ratio measured 0.45-1.4 where the
// cores shared a cache, 0.07-0.3 where they did not). Trials start with pieces of kMinBytes or
// more only, and one that has not ended within kRetrialNanos (big pieces stopped) gives up.

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

  /// Only pieces of at least this many bytes start trials: the lines cost most there, and a
  /// stream of small pieces never pays for a trial.
  static constexpr size_t kMinBytes = 64 * 1024;
  /// Bytes a probe writes: the first of the slot.
  static constexpr size_t kProbeBytes = 16 * 1024;
  static constexpr int kTrialPairs = 8;
  static constexpr double kStreamRatio = 0.4;
  static constexpr int64_t kRetrialNanos = 1'000'000'000;

  /// kMeasure starts its first trial with the first piece of kMinBytes or more.
  explicit SlotStreamTrial(Policy policy);

  /// Whether the sender should probe a slot it acquires whose last piece was `lastBytes` long.
  bool probes(size_t lastBytes) const { return inTrial_ && lastBytes >= kProbeBytes; }
  /// Whether a piece at place `index` (0, 1, ...) of the stream is written with non-temporal
  /// stores: for a probed one, as the trial alternates; for others, the last choice.
  bool streams(uint64_t index, bool probed) const { return probed ? index % 2 == 1 : streamed_; }
  /// Whether record() wants a posted piece of `bytes`.
  bool wants(size_t bytes) const { return inTrial_ || (policy_ == Policy::kMeasure && bytes >= kMinBytes); }
  /// Records a posted piece that wants() asked for: written streamed or not, its probe's
  /// nanoseconds (-1: not probed); `now` is the steady clock's nanoseconds. Returns true when a
  /// trial started or ended.
  bool record(bool streamed, int64_t probeNanos, int64_t now);
  /// How many trials have ended with a choice (not given up).
  int decisions() const { return decisions_; }
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
  bool tried_ = false;  // a trial has ended (or given up)
  int64_t trialStartedAt_ = 0;
  int64_t settledAt_ = 0;
  int decisions_ = 0;
  int64_t cachedProbeNanos_ = -1;  // the cached probe waiting for its streamed partner; -1: none
  std::array<double, kTrialPairs> ratios_{};
  int pairs_ = 0;
  double lastRatio_ = 0;
};

}  // namespace weft::transport::shm
