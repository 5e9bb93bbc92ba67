#pragma once
// The two ends of an ib connection (the protocol is in transport/ib/wire.h).
//
// The receiver owns slotCount registered slots. It offers a post to its sender only once its user
// has announced the piece (expectLandings) and fewer than slotCount posts are outstanding: post n
// goes to slot n % slotCount, or, when the piece lands in a buffer registered with
// ncclCommRegister, straight into that buffer (whose memory region is made on first use and cached
// in the registration). The sender stages each post in its own registered slot and writes it
// where its offer says, split over the connection's queue pairs (NCCL_IB_QPS_PER_CONNECTION):
// queue pair q writes the q-th contiguous share with write-with-immediate (the immediate is the
// payload size). Each such write consumes one receive of its queue pair, posted before the post
// was offered, so a write never finds none (an RNR wait); a post has arrived when every queue pair
// completed its share. Releasing it posts its receives again and lets the receiver offer another.
// Neither end blocks: the receiver finishes the setup (the sender's addresses arrive over TCP)
// when polled.

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
#include "transport/registered_memory.h"
#include "transport/slot_memory.h"
#include "transport/transport.h"

namespace weft::transport::ib {

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
  /// True when post posted_ has its offer and its staging slot is free.
  bool mayPost() const;
  const std::string& peer() const { return queuePairs_.front()->peerDescription(); }
  Status pollCompletions();
  Status fail(Status status);

  size_t slotBytes_ = 0;
  uint64_t slotCount_ = 0;
  SlotMemory slots_;
  ibv_mr* slotsMr_ = nullptr;
  SlotMemory offerTable_;        // wire.h's OfferTable, RDMA-written by the receiver
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

  /// Logs how many posts were written directly into registered buffers.
  ~IbRecvConnection() override;

  /// Until the sender has connected, also finishes the setup (see the file comment).
  Status tryPeekSlot(const void** data, size_t* bytes, SlotKind kind) override;
  Status releaseSlot() override;
  /// Finishes the setup and makes the offers that wait, so that the sender may post before the first peek.
  Status progress() override;
  bool takesLandings() const override { return true; }
  Status expectLandings(std::span<const Landing> landings) override;
  size_t slotBytes() const override { return slotBytes_; }

 private:
  IbRecvConnection() = default;
  uint8_t* slotAt(uint64_t post) const { return slots_.get() + (post % slotCount_) * slotBytes_; }
  const std::string& peer() const { return queuePairs_.front()->peerDescription(); }
  Status trySetup();
  Status pollCompletions();
  /// Offers the announced pieces that may be offered now (see the file comment).
  Status makeOffers();
  /// The memory region of `landing`'s registered buffer on this device, made on first use;
  /// nullptr where it cannot be registered (then the piece takes a slot).
  ibv_mr* regionOf(const Landing& landing);
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
  uint32_t slotsKey_ = 0;
  // What the offer writes read: slotCount offers (post n's at n % slotCount), then
  // kCountSources offered counts (the w-th count write reads word w % kCountSources).
  SlotMemory offerSources_;
  ibv_mr* offerSourcesMr_ = nullptr;
  std::vector<Landing> landings_;     // announced pieces; [nextLanding_, end) not offered yet
  size_t nextLanding_ = 0;
  std::vector<char*> landedAt_;       // per post n % slotCount, its place in a user buffer or nullptr
  std::vector<uint32_t> sizes_;       // per post n % slotCount, the payload size its writes announced
  std::vector<uint64_t> arrivedShares_;  // per queue pair, writes whose completion was polled
  uint64_t offered_ = 0;              // posts offered to the sender
  uint64_t arrived_ = 0;              // posts whose every share arrived
  uint64_t released_ = 0;
  uint64_t controlWrites_ = 0;        // offer and count writes posted (queue pair 0)
  uint64_t controlWritesDone_ = 0;
  uint64_t directPosts_ = 0;          // posts written straight into registered buffers
  uint64_t directBytes_ = 0;
  Status error_;
  // Last: destroyed first, so the memory they registered is deregistered before it is freed.
  std::vector<std::unique_ptr<QueuePair>> queuePairs_;
};

}  // namespace weft::transport::ib
