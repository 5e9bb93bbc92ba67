#pragma once
// The two ends of a shared-memory connection: a ring of slots in a segment both processes map
// (layout.h). The sender owns `posted`, the receiver owns `released`; slot i of the stream lives in
// ring slot i % slotCount. Each end caches the last value it read of the other's counter, so a
// poll that already knows a slot is free (or ready) touches no shared cache line. No call of the
// data path makes a syscall, takes a lock or allocates (except to build an error message).
//
// LL pieces (layout.h) are written by the sender into a private buffer and packed into the LL slot
// on postSlot; the receiver unpacks the words as their flags arrive into a private buffer, which
// tryPeekSlot returns once the whole piece is there.
//
// The sender writes its Simple slots through the caches or with non-temporal stores, as
// WEFT_SHM_STREAM_SLOTS fixes or its trials (stream_trial.h) measure faster, and says which to its
// caller (streamsSlot).

#include <cstddef>
#include <cstdint>
#include <memory>

#include "transport/shm/layout.h"
#include "transport/shm/segment.h"
#include "transport/shm/stream_trial.h"
#include "transport/transport.h"

namespace weft::transport::shm {

class ShmSendConnection final : public SendConnection {
 public:
  /// Takes over the sender's mapping of a segment whose header the receiver has initialized for
  /// `layout`. `rank`, `peerRank` and `channel` are for messages; `slotWrites` says how the slots
  /// are written (WEFT_SHM_STREAM_SLOTS: measured, or fixed).
  ShmSendConnection(std::unique_ptr<ShmSegment> segment, const RingLayout& layout, int rank, int peerRank,
                    int channel, SlotStreamTrial::Policy slotWrites);

  /// Non-blocking; nullptr while all slotCount slots of `kind` are posted and not yet released.
  /// LL pieces take Simple slots when the segment has no LL ring.
  Status tryAcquireSlot(void** slot, SlotKind kind) override;
  /// kInvalidUsage without a prior successful tryAcquireSlot, or if bytes > slotBytes().
  Status postSlot(size_t bytes) override;
  /// Always done: a posted slot is already in the receiver's memory.
  Status tryFlush(bool* done) override;
  size_t slotBytes() const override { return slotBytes_; }
  /// Only pieces acquired as SlotKind::kSimple are streamed.
  bool streamsSlot() const override { return acquiredStreamed_; }

 private:
  // Times writing the slot's first bytes the way the acquired piece is written (a trial's probe).
  void probeSlot(uint8_t* slot);
  // Hands the posted piece to the trial, and logs what a trial that ended chose.
  void recordPiece();

  std::unique_ptr<ShmSegment> segment_;
  RingHeader* header_;
  SlotSize* sizes_;
  uint8_t* slots_;
  size_t slotBytes_;
  uint64_t slotCount_;
  int rank_;
  int peerRank_;
  int channel_;
  uint64_t posted_ = 0;        // our counter; the shared copy is published from it
  uint64_t releasedSeen_ = 0;  // last value read of the receiver's counter
  uint64_t ringIndex_ = 0;     // posted_ % slotCount_, kept without a division
  bool acquired_ = false;
  // How the acquired Simple slot is written, and what its probe took (-1: not probed).
  SlotStreamTrial trial_;
  bool acquiredStreamed_ = false;
  int64_t probeNanos_ = -1;
  // The LL ring (no LL ring: llSlots_ is nullptr).
  Status postLowLatency(size_t bytes);
  uint8_t* llSlots_;
  size_t llSlotBytes_;
  std::unique_ptr<uint8_t[]> llStaging_;  // the acquired LL piece, before packing
  uint64_t llPosted_ = 0;
  uint64_t llReleasedSeen_ = 0;
  uint64_t llRingIndex_ = 0;
  bool llAcquired_ = false;
};

class ShmRecvConnection final : public RecvConnection {
 public:
  /// Takes over the receiver's segment and initializes its header for `layout`.
  ShmRecvConnection(std::unique_ptr<ShmSegment> segment, const RingLayout& layout, int peerRank, int channel);

  /// Non-blocking; nullptr until the sender has posted a slot of `kind` not yet released (for LL:
  /// until every word of the piece has arrived). kRemoteError if the sender wrote a byte count
  /// larger than the slot.
  Status tryPeekSlot(const void** data, size_t* bytes, SlotKind kind) override;
  /// kInvalidUsage without a prior successful tryPeekSlot.
  Status releaseSlot() override;
  size_t slotBytes() const override { return slotBytes_; }

 private:
  std::unique_ptr<ShmSegment> segment_;
  RingHeader* header_;
  SlotSize* sizes_;
  uint8_t* slots_;
  size_t slotBytes_;
  uint64_t slotCount_;
  int peerRank_;
  int channel_;
  uint64_t released_ = 0;    // our counter; the shared copy is published from it
  uint64_t postedSeen_ = 0;  // last value read of the sender's counter
  uint64_t ringIndex_ = 0;   // released_ % slotCount_
  bool peeked_ = false;
  // The LL ring (no LL ring: llSlots_ is nullptr).
  Status peekLowLatency(const void** data, size_t* bytes);
  uint8_t* llSlots_;
  size_t llSlotBytes_;
  std::unique_ptr<uint8_t[]> llUnpacked_;  // the piece being received, unpacked
  uint64_t llReleased_ = 0;
  uint64_t llRingIndex_ = 0;
  size_t llBytes_ = 0;        // the piece's byte count, once word 0 has arrived
  size_t llWordsRead_ = 0;    // words of the piece unpacked so far (word 0 included)
  bool llPeeked_ = false;     // which ring the peeked slot is in
};

}  // namespace weft::transport::shm
