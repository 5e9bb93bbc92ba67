#pragma once
// The two ends of an ib connection (the protocol is in transport/ib/wire.h).
//
// The receiver owns slotCount registered slots that the sender RDMA-writes, slot n % slotCount for
// the n-th post, split over the connection's queue pairs (NCCL_IB_QPS_PER_CONNECTION): queue pair
// q writes the q-th contiguous share with write-with-immediate (the immediate is the slot's
// payload size). Each such write consumes one receive of its queue pair, posted before the slot
// was offered, so a write never finds none (an RNR wait); a slot has arrived when every queue pair
// completed its share. Releasing a slot posts its receives again and RDMA-writes the released
// count into the sender's credit word (over queue pair 0). The sender stages each post in its own
// registered slot; a slot is free when the receiver's count shows it consumed and the writes'
// completions were polled. Neither end blocks: the receiver finishes the setup (the sender's
// addresses arrive over TCP) when polled.

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/base/socket.h"
#include "src/base/status.h"
#include "transport/acceptor.h"
#include "transport/ib/queue_pair.h"
#include "transport/ib/wire.h"
#include "transport/slot_memory.h"
#include "transport/transport.h"

namespace weft::transport::ib {

/// Until the receiver has connected: its released count is written over this value.
inline constexpr uint64_t kCreditNotReady = ~uint64_t{0};

class IbSendConnection final : public SendConnection {
 public:
  /// Creates the sending end from the receiver's blob: connects its queue pair, then sends the
  /// handshake and its own address over TCP (which the kernel takes whatever the receiver does).
  static Status create(const ConnectionParams& params, const IbPort& port, const IbBlob& blob,
                       std::unique_ptr<IbSendConnection>* connection);

  Status tryAcquireSlot(void** slot, SlotKind kind) override;
  Status postSlot(size_t bytes) override;
  Status tryFlush(bool* done) override;
  size_t slotBytes() const override { return slotBytes_; }

 private:
  IbSendConnection() = default;
  uint8_t* slotAt(uint64_t post) const { return slots_.get() + (post % slotCount_) * slotBytes_; }
  bool slotFree(uint64_t released) const;
  const std::string& peer() const { return queuePairs_.front()->peerDescription(); }
  Status pollCompletions();
  Status fail(Status status);

  size_t slotBytes_ = 0;
  uint64_t slotCount_ = 0;
  SlotMemory slots_;
  ibv_mr* slotsMr_ = nullptr;
  SlotMemory credit_;            // the receiver's released count, RDMA-written by it
  uint64_t remoteSlots_ = 0;
  uint32_t remoteKey_ = 0;
  uint64_t posted_ = 0;
  std::vector<uint64_t> completed_;  // per queue pair, writes whose completion was polled
  Status error_;
  // Last: destroyed first, so the memory they registered is deregistered before it is freed.
  std::vector<std::unique_ptr<QueuePair>> queuePairs_;
};

class IbRecvConnection final : public RecvConnection {
 public:
  /// Creates the receiving end on `port`: registers its slots, posts their receives, listens for
  /// the sender, and fills *blob.
  static Status create(const ConnectionParams& params, const IbPort& port, std::unique_ptr<IbRecvConnection>* connection,
                       IbBlob* blob);

  /// Until the sender has connected, also finishes the setup (see the file comment).
  Status tryPeekSlot(const void** data, size_t* bytes, SlotKind kind) override;
  Status releaseSlot() override;
  /// Finishes the setup and writes a pending credit, so that the sender may post before the first peek.
  Status progress() override;
  size_t slotBytes() const override { return slotBytes_; }

 private:
  IbRecvConnection() = default;
  uint8_t* slotAt(uint64_t post) const { return slots_.get() + (post % slotCount_) * slotBytes_; }
  const std::string& peer() const { return queuePairs_.front()->peerDescription(); }
  Status trySetup();
  Status pollCompletions();
  Status writeCredit();
  Status fail(Status status);

  std::unique_ptr<Acceptor> acceptor_;
  net::Socket setup_;            // the sender's setup connection, until its SenderInfo arrived
  SenderInfo sender_;
  size_t senderBytes_ = 0;
  bool connected_ = false;
  int channel_ = 0;
  size_t slotBytes_ = 0;
  uint64_t slotCount_ = 0;
  SlotMemory slots_;
  SlotMemory creditSource_;      // the released count, as the credit write reads it
  ibv_mr* creditMr_ = nullptr;
  std::vector<uint32_t> sizes_;  // per slot, the payload size its writes announced
  std::vector<uint64_t> arrivedShares_;  // per queue pair, writes whose completion was polled
  uint64_t arrived_ = 0;         // slots whose every share arrived
  uint64_t released_ = 0;
  uint64_t creditWrites_ = 0;    // credit writes posted
  uint64_t creditWritesDone_ = 0;
  bool creditPending_ = false;   // the newest released count still has to be written
  Status error_;
  // Last: destroyed first, so the memory they registered is deregistered before it is freed.
  std::vector<std::unique_ptr<QueuePair>> queuePairs_;
};

}  // namespace weft::transport::ib
