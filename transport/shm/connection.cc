#include "transport/shm/connection.h"

#include <new>
#include <utility>

namespace weft::transport::shm {
namespace {

uint8_t* at(const ShmSegment& segment, size_t offset) {
  return static_cast<uint8_t*>(segment.base()) + offset;
}

}  // namespace

ShmSendConnection::ShmSendConnection(std::unique_ptr<ShmSegment> segment, const RingLayout& layout,
                                     int peerRank, int channel)
    : segment_(std::move(segment)),
      header_(reinterpret_cast<RingHeader*>(segment_->base())),
      sizes_(reinterpret_cast<SlotSize*>(at(*segment_, layout.sizesOffset))),
      slots_(at(*segment_, layout.slotsOffset)),
      slotBytes_(layout.slotBytes),
      slotCount_(static_cast<uint64_t>(layout.slotCount)),
      peerRank_(peerRank),
      channel_(channel) {}

Status ShmSendConnection::tryAcquireSlot(void** slot) {
  if (posted_ - releasedSeen_ >= slotCount_) {
    // Acquire: the receiver's reads of the slot we are about to overwrite happened before.
    releasedSeen_ = header_->released.load(std::memory_order_acquire);
    if (posted_ - releasedSeen_ >= slotCount_) {
      *slot = nullptr;
      return Status::ok();
    }
  }
  acquired_ = true;
  *slot = slots_ + ringIndex_ * slotBytes_;
  return Status::ok();
}

Status ShmSendConnection::postSlot(size_t bytes) {
  if (!acquired_) {
    return invalidUsage("shm send to rank %d on channel %d: postSlot without a slot from tryAcquireSlot",
                        peerRank_, channel_);
  }
  if (bytes > slotBytes_) {
    return invalidUsage(
        "shm send to rank %d on channel %d: postSlot of %zu bytes exceeds the slot size of "
        "%zu bytes",
        peerRank_, channel_, bytes, slotBytes_);
  }
  sizes_[ringIndex_].bytes = bytes;
  ++posted_;
  if (++ringIndex_ == slotCount_) ringIndex_ = 0;
  acquired_ = false;
  // Release: the payload and its byte count are visible before the new count of posted slots.
  header_->posted.store(posted_, std::memory_order_release);
  return Status::ok();
}

Status ShmSendConnection::tryFlush(bool* done) {
  *done = true;
  return Status::ok();
}

ShmRecvConnection::ShmRecvConnection(std::unique_ptr<ShmSegment> segment, const RingLayout& layout,
                                     int peerRank, int channel)
    : segment_(std::move(segment)),
      header_(new (segment_->base()) RingHeader{}),
      sizes_(reinterpret_cast<SlotSize*>(at(*segment_, layout.sizesOffset))),
      slots_(at(*segment_, layout.slotsOffset)),
      slotBytes_(layout.slotBytes),
      slotCount_(static_cast<uint64_t>(layout.slotCount)),
      peerRank_(peerRank),
      channel_(channel) {
  header_->magic = kRingMagic;
  header_->slotBytes = layout.slotBytes;
  header_->slotCount = slotCount_;
}

Status ShmRecvConnection::tryPeekSlot(const void** data, size_t* bytes) {
  if (postedSeen_ == released_) {
    // Acquire: the sender's payload and byte count are visible once we see its count.
    postedSeen_ = header_->posted.load(std::memory_order_acquire);
    if (postedSeen_ == released_) {
      *data = nullptr;
      *bytes = 0;
      return Status::ok();
    }
  }
  size_t size = sizes_[ringIndex_].bytes;
  if (size > slotBytes_) {
    return remoteError(
        "shm receive from rank %d on channel %d: the sender posted %zu bytes in a slot of "
        "%zu: the peer's memory is corrupt or it runs a different build; abort the "
        "communicator",
        peerRank_, channel_, size, slotBytes_);
  }
  peeked_ = true;
  *data = slots_ + ringIndex_ * slotBytes_;
  *bytes = size;
  return Status::ok();
}

Status ShmRecvConnection::releaseSlot() {
  if (!peeked_) {
    return invalidUsage("shm receive from rank %d on channel %d: releaseSlot without a slot from tryPeekSlot",
                        peerRank_, channel_);
  }
  ++released_;
  if (++ringIndex_ == slotCount_) ringIndex_ = 0;
  peeked_ = false;
  // Release: our reads of the slot are done before the sender may reuse it.
  header_->released.store(released_, std::memory_order_release);
  return Status::ok();
}

}  // namespace weft::transport::shm
