#pragma once
// The two ends of a shared-memory connection: a ring of slots in a segment both processes map
// (layout.h). The sender owns `posted`, the receiver owns `released`; slot i of the stream lives in
// ring slot i % slotCount. Each end caches the last value it read of the other's counter, so a
// poll that already knows a slot is free (or ready) touches no shared cache line. No call of the
// data path makes a syscall, takes a lock or allocates (except to build an error message).

#include <cstddef>
#include <cstdint>
#include <memory>

#include "transport/shm/layout.h"
#include "transport/shm/segment.h"
#include "transport/transport.h"

namespace weft::transport::shm {

class ShmSendConnection final : public SendConnection {
 public:
  /// Takes over the sender's mapping of a segment whose header the receiver has initialized for
  /// `layout`. `peerRank` and `channel` are for messages.
  ShmSendConnection(std::unique_ptr<ShmSegment> segment, const RingLayout& layout, int peerRank, int channel);

  /// Non-blocking; nullptr while all slotCount slots are posted and not yet released.
  Status tryAcquireSlot(void** slot) override;
  /// kInvalidUsage without a prior successful tryAcquireSlot, or if bytes > slotBytes().
  Status postSlot(size_t bytes) override;
  /// Always done: a posted slot is already in the receiver's memory.
  Status tryFlush(bool* done) override;
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
  uint64_t posted_ = 0;        // our counter; the shared copy is published from it
  uint64_t releasedSeen_ = 0;  // last value read of the receiver's counter
  uint64_t ringIndex_ = 0;     // posted_ % slotCount_, kept without a division
  bool acquired_ = false;
};

class ShmRecvConnection final : public RecvConnection {
 public:
  /// Takes over the receiver's segment and initializes its header for `layout`.
  ShmRecvConnection(std::unique_ptr<ShmSegment> segment, const RingLayout& layout, int peerRank, int channel);

  /// Non-blocking; nullptr until the sender has posted a slot not yet released. kRemoteError if
  /// the sender wrote a byte count larger than the slot.
  Status tryPeekSlot(const void** data, size_t* bytes) override;
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
};

}  // namespace weft::transport::shm
