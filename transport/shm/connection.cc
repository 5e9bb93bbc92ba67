#include "transport/shm/connection.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "src/base/log.h"

namespace weft::transport::shm {
namespace {

uint8_t* at(const ShmSegment& segment, size_t offset) {
  return static_cast<uint8_t*>(segment.base()) + offset;
}

uint64_t* llSlotWords(uint8_t* slots, size_t slotBytes, uint64_t index) {
  return reinterpret_cast<uint64_t*>(slots + index * slotBytes);
}

// Each LL word is one atomic store or load: its flag vouches for the data beside it, so relaxed
// order suffices.
void storeWord(uint64_t* word, uint64_t value) {
  std::atomic_ref<uint64_t>(*word).store(value, std::memory_order_relaxed);
}
uint64_t loadWord(uint64_t* word) { return std::atomic_ref<uint64_t>(*word).load(std::memory_order_relaxed); }

// Writes `bytes` (a multiple of 16) of zeros at `slot` (16-byte aligned), through the caches or
// with non-temporal stores (x86-64 only: elsewhere slots are never streamed).
void writeZeros(uint8_t* slot, size_t bytes, bool streamed) {
#if defined(__x86_64__)
  const __m128i zero = _mm_setzero_si128();
  auto* lanes = reinterpret_cast<__m128i*>(slot);
  if (streamed) {
    for (size_t i = 0; i < bytes / sizeof(zero); ++i) _mm_stream_si128(lanes + i, zero);
    _mm_sfence();
  } else {
    for (size_t i = 0; i < bytes / sizeof(zero); ++i) _mm_store_si128(lanes + i, zero);
  }
#else
  (void)streamed;
  std::memset(slot, 0, bytes);
#endif
}

int64_t steadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ShmSendConnection::ShmSendConnection(std::unique_ptr<ShmSegment> segment, const RingLayout& layout,
                                     int rank, int peerRank, int channel, SlotStreamTrial::Policy slotWrites)
    : segment_(std::move(segment)),
      header_(reinterpret_cast<RingHeader*>(segment_->base())),
      sizes_(reinterpret_cast<SlotSize*>(at(*segment_, layout.sizesOffset))),
      slots_(at(*segment_, layout.slotsOffset)),
      slotBytes_(layout.slotBytes),
      slotCount_(static_cast<uint64_t>(layout.slotCount)),
      rank_(rank),
      peerRank_(peerRank),
      channel_(channel),
      trial_(slotWrites),
      llSlots_(layout.llSlotBytes > 0 ? at(*segment_, layout.llSlotsOffset) : nullptr),
      llSlotBytes_(layout.llSlotBytes),
      llStaging_(layout.llSlotBytes > 0 ? new uint8_t[lowLatencyPayloadBytes(layout.llSlotBytes)] : nullptr) {}

Status ShmSendConnection::tryAcquireSlot(void** slot, SlotKind kind) {
  if (kind == SlotKind::kLowLatency && llSlots_ != nullptr) {
    if (llPosted_ - llReleasedSeen_ >= slotCount_) {
      // Acquire: the receiver's reads of the slot we are about to overwrite happened before.
      llReleasedSeen_ = header_->llReleased.load(std::memory_order_acquire);
      if (llPosted_ - llReleasedSeen_ >= slotCount_) {
        *slot = nullptr;
        return Status::ok();
      }
    }
    acquired_ = true;
    llAcquired_ = true;
    acquiredStreamed_ = false;
    *slot = llStaging_.get();
    return Status::ok();
  }
  llAcquired_ = false;
  if (posted_ - releasedSeen_ >= slotCount_) {
    // Acquire: the receiver's reads of the slot we are about to overwrite happened before.
    releasedSeen_ = header_->released.load(std::memory_order_acquire);
    if (posted_ - releasedSeen_ >= slotCount_) {
      *slot = nullptr;
      return Status::ok();
    }
  }
  if (!acquired_) {
    // Only Simple pieces are streamed (an LL piece in a Simple slot is for latency). The slot's
    // last size is read only in a trial; only this sender writes it, and the bound keeps a
    // corrupt one from taking the probe past the slot.
    const bool simple = kind == SlotKind::kSimple;
    const bool probed = simple && trial_.inTrial() &&
                        trial_.probes(std::min<uint64_t>(sizes_[ringIndex_].bytes, slotBytes_));
    acquiredStreamed_ = simple && trial_.streams(posted_, probed);
    probeNanos_ = -1;
    if (probed) probeSlot(slots_ + ringIndex_ * slotBytes_);
  }
  acquired_ = true;
  *slot = slots_ + ringIndex_ * slotBytes_;
  return Status::ok();
}

void ShmSendConnection::probeSlot(uint8_t* slot) {
  const int64_t start = steadyNanos();
  writeZeros(slot, SlotStreamTrial::kProbeBytes, acquiredStreamed_);
  probeNanos_ = steadyNanos() - start;
}

Status ShmSendConnection::postSlot(size_t bytes) {
  if (!acquired_) {
    return invalidUsage("shm send to rank %d on channel %d: postSlot without a slot from tryAcquireSlot",
                        peerRank_, channel_);
  }
  if (llAcquired_) return postLowLatency(bytes);
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
  if (trial_.wants(bytes)) recordPiece();
  return Status::ok();
}

void ShmSendConnection::recordPiece() {
  const int decisions = trial_.decisions();
  const bool streamed = trial_.streamed();
  if (!trial_.record(acquiredStreamed_, probeNanos_, steadyNanos()) || trial_.decisions() == decisions) return;
  // Says the first choice, then only changes.
  if (decisions > 0 && trial_.streamed() == streamed) return;
  WEFT_INFO(log::kShm,
            "shm: rank %d's slots to rank %d on channel %d are now written %s (streamed writes took %.2fx the "
            "time of cached ones)",
            rank_, peerRank_, channel_, slotWritesName(trial_.streamed()), trial_.lastRatio());
}

Status ShmSendConnection::postLowLatency(size_t bytes) {
  if (bytes > lowLatencyPayloadBytes(llSlotBytes_)) {
    return invalidUsage("shm send to rank %d on channel %d: postSlot of %zu bytes exceeds the LL slot's %zu",
                        peerRank_, channel_, bytes, lowLatencyPayloadBytes(llSlotBytes_));
  }
  uint64_t* words = llSlotWords(llSlots_, llSlotBytes_, llRingIndex_);
  const uint32_t flag = llFlagOf(llPosted_);
  const uint8_t* payload = llStaging_.get();
  const size_t wholeWords = bytes / 4;
  auto storeWholeWords = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      uint32_t data;
      memcpy(&data, payload + 4 * i, 4);
      storeWord(&words[1 + i], llWord(flag, data));
    }
  };
  // The receiver polls the first cache line (the count and 7 payload words): it is written last,
  // in one burst, so that it changes hands once; the lines after it are complete by then.
  constexpr size_t kFirstLineWords = kCacheLine / sizeof(uint64_t) - 1;
  const size_t firstLineWords = std::min(wholeWords, kFirstLineWords);
  storeWholeWords(firstLineWords, wholeWords);
  if (bytes % 4 != 0) {
    uint32_t data = 0;
    memcpy(&data, payload + 4 * wholeWords, bytes % 4);
    storeWord(&words[1 + wholeWords], llWord(flag, data));
  }
  storeWholeWords(0, firstLineWords);
  storeWord(&words[0], llWord(flag, static_cast<uint32_t>(bytes)));
  ++llPosted_;
  if (++llRingIndex_ == slotCount_) llRingIndex_ = 0;
  acquired_ = false;
  llAcquired_ = false;
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
      channel_(channel),
      llSlots_(layout.llSlotBytes > 0 ? at(*segment_, layout.llSlotsOffset) : nullptr),
      llSlotBytes_(layout.llSlotBytes),
      llUnpacked_(layout.llSlotBytes > 0 ? new uint8_t[lowLatencyPayloadBytes(layout.llSlotBytes)] : nullptr) {
  header_->magic = kRingMagic;
  header_->slotBytes = layout.slotBytes;
  header_->slotCount = slotCount_;
  header_->llSlotBytes = layout.llSlotBytes;
}

Status ShmRecvConnection::tryPeekSlot(const void** data, size_t* bytes, SlotKind kind) {
  if (kind == SlotKind::kLowLatency && llSlots_ != nullptr) return peekLowLatency(data, bytes);
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
  llPeeked_ = false;
  *data = slots_ + ringIndex_ * slotBytes_;
  *bytes = size;
  return Status::ok();
}

Status ShmRecvConnection::peekLowLatency(const void** data, size_t* bytes) {
  uint64_t* words = llSlotWords(llSlots_, llSlotBytes_, llRingIndex_);
  const uint32_t flag = llFlagOf(llReleased_);
  *data = nullptr;
  *bytes = 0;
  if (llWordsRead_ == 0) {
    const uint64_t head = loadWord(&words[0]);
    if (llFlag(head) != flag) return Status::ok();
    llBytes_ = llData(head);
    if (llBytes_ > lowLatencyPayloadBytes(llSlotBytes_)) {
      return remoteError(
          "shm receive from rank %d on channel %d: the sender posted %zu bytes in an LL slot of %zu: the peer's "
          "memory is corrupt or it runs a different build; abort the communicator",
          peerRank_, channel_, llBytes_, lowLatencyPayloadBytes(llSlotBytes_));
    }
    llWordsRead_ = 1;
  }
  const size_t wordCount = 1 + (llBytes_ + 3) / 4;
  for (; llWordsRead_ < wordCount; ++llWordsRead_) {
    const uint64_t word = loadWord(&words[llWordsRead_]);
    if (llFlag(word) != flag) return Status::ok();  // not yet arrived: resume here next time
    const uint32_t value = llData(word);
    memcpy(llUnpacked_.get() + 4 * (llWordsRead_ - 1), &value, 4);
  }
  peeked_ = true;
  llPeeked_ = true;
  *data = llUnpacked_.get();
  *bytes = llBytes_;
  return Status::ok();
}

Status ShmRecvConnection::releaseSlot() {
  if (!peeked_) {
    return invalidUsage("shm receive from rank %d on channel %d: releaseSlot without a slot from tryPeekSlot",
                        peerRank_, channel_);
  }
  peeked_ = false;
  if (llPeeked_) {
    ++llReleased_;
    if (++llRingIndex_ == slotCount_) llRingIndex_ = 0;
    llWordsRead_ = 0;
    // Release: our reads of the LL slot are done before the sender may reuse it.
    header_->llReleased.store(llReleased_, std::memory_order_release);
    return Status::ok();
  }
  ++released_;
  if (++ringIndex_ == slotCount_) ringIndex_ = 0;
  // Release: our reads of the slot are done before the sender may reuse it.
  header_->released.store(released_, std::memory_order_release);
  return Status::ok();
}

}  // namespace weft::transport::shm
