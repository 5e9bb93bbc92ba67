#include "transport/ib/connection.h"

#include <sys/random.h>

#include <cstring>
#include <string>
#include <utility>

#include "src/base/knobs.h"
#include "src/base/log.h"
#include "src/base/wait.h"

namespace weft::transport::ib {
namespace {

// Completions taken from the queue per poll.
constexpr int kPollBatch = 16;

std::string describePeer(const ConnectionParams& params) {
  return "rank " + std::to_string(params.peer.rank) + " on host " + params.peer.hostname + ", channel " +
         std::to_string(params.channel);
}

uint64_t loadCredit(const uint8_t* word) {
  return __atomic_load_n(reinterpret_cast<const uint64_t*>(word), __ATOMIC_ACQUIRE);
}

}  // namespace

// ---- IbSendConnection ----

Status IbSendConnection::create(const ConnectionParams& params, const IbPort& port, const IbBlob& blob,
                                std::unique_ptr<IbSendConnection>* connection) {
  std::unique_ptr<IbSendConnection> created(new IbSendConnection);
  const int slotCount = params.slotCount;
  created->slotBytes_ = params.slotBytes;
  created->slotCount_ = static_cast<uint64_t>(slotCount);
  created->remoteSlots_ = blob.slotsAddress;
  created->remoteKey_ = blob.slotsKey;
  WEFT_RETURN_IF_ERROR(QueuePair::create(port, slotCount, 1, describePeer(params), &created->queuePair_));
  QueuePair& qp = *created->queuePair_;
  const size_t slotsBytes = params.slotBytes * static_cast<size_t>(slotCount);
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(slotsBytes, "ib send slots", &created->slots_));
  WEFT_RETURN_IF_ERROR(qp.registerMemory(created->slots_.get(), slotsBytes, IBV_ACCESS_LOCAL_WRITE, &created->slotsMr_));
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(sizeof(uint64_t), "ib credit word", &created->credit_));
  memcpy(created->credit_.get(), &kCreditNotReady, sizeof(kCreditNotReady));
  ibv_mr* creditMr = nullptr;
  WEFT_RETURN_IF_ERROR(qp.registerMemory(created->credit_.get(), sizeof(uint64_t),
                                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &creditMr));
  WEFT_RETURN_IF_ERROR(qp.connect(blob.queuePair));

  const std::string where = qp.peerDescription() + " at " + blob.setupAddress.toString();
  WaitContext context;
  context.timeoutSeconds = defaultTimeoutSeconds();
  context.what = "the ib setup connection to " + where;
  net::Socket socket;
  Status status = net::Socket::connect(blob.setupAddress, context, &socket);
  if (!status.isOk()) return status.withContext("ib transport: connecting to " + where);
  const Handshake handshake = makeHandshake(params.self.rank, blob.nonce, params);
  SenderInfo info;
  info.queuePair = qp.address();
  info.creditAddress = reinterpret_cast<uintptr_t>(created->credit_.get());
  info.creditKey = creditMr->rkey;
  // 40 + 64 bytes on a fresh connection: the kernel's buffer takes them at once.
  uint8_t message[sizeof(Handshake) + sizeof(SenderInfo)];
  memcpy(message, &handshake, sizeof(Handshake));
  memcpy(message + sizeof(Handshake), &info, sizeof(SenderInfo));
  status = socket.sendAll(message, sizeof(message), context);
  if (!status.isOk()) return status.withContext("ib transport: sending the queue pair address to " + where);
  WEFT_INFO(log::kNet, "Channel %02d : sending to rank %d (host %s) over ib %s", params.channel, params.peer.rank,
            params.peer.hostname, port.name().c_str());
  *connection = std::move(created);
  return Status::ok();
}

Status IbSendConnection::fail(Status status) {
  if (!status.isOk() && error_.isOk()) error_ = status;
  return status;
}

Status IbSendConnection::pollCompletions() {
  ibv_wc completions[kPollBatch];
  int count = 0;
  do {
    WEFT_RETURN_IF_ERROR(fail(queuePair_->poll(completions, kPollBatch, &count)));
    completed_ += static_cast<uint64_t>(count);
  } while (count == kPollBatch);
  return Status::ok();
}

Status IbSendConnection::tryAcquireSlot(void** slot) {
  *slot = nullptr;
  if (!error_.isOk()) return error_;
  WEFT_RETURN_IF_ERROR(pollCompletions());
  const uint64_t released = loadCredit(credit_.get());
  if (released == kCreditNotReady) return Status::ok();  // the receiver has not connected yet
  if (posted_ - released < slotCount_ && posted_ - completed_ < slotCount_) *slot = slotAt(posted_);
  return Status::ok();
}

Status IbSendConnection::postSlot(size_t bytes) {
  if (!error_.isOk()) return error_;
  if (bytes > slotBytes_) {
    return invalidUsage("ib transport: posted %zu bytes in a slot of %zu bytes (to %s)", bytes, slotBytes_,
                        queuePair_->peerDescription().c_str());
  }
  const uint64_t released = loadCredit(credit_.get());
  if (released == kCreditNotReady || posted_ - released >= slotCount_ || posted_ - completed_ >= slotCount_) {
    return invalidUsage("ib transport: postSlot without a free slot (to %s): call tryAcquireSlot until it returns a "
                        "slot",
                        queuePair_->peerDescription().c_str());
  }
  const uint32_t immediate = static_cast<uint32_t>(bytes);
  const uint64_t remote = remoteSlots_ + (posted_ % slotCount_) * slotBytes_;
  WEFT_RETURN_IF_ERROR(fail(queuePair_->postWrite(slotAt(posted_), slotsMr_->lkey, bytes, remote, remoteKey_, &immediate)));
  ++posted_;
  return Status::ok();
}

Status IbSendConnection::tryFlush(bool* done) {
  *done = false;
  if (!error_.isOk()) return error_;
  WEFT_RETURN_IF_ERROR(pollCompletions());
  *done = completed_ == posted_;
  return Status::ok();
}

// ---- IbRecvConnection ----

Status IbRecvConnection::create(const ConnectionParams& params, const IbPort& port,
                                std::unique_ptr<IbRecvConnection>* connection, IbBlob* blob) {
  std::unique_ptr<IbRecvConnection> created(new IbRecvConnection);
  created->channel_ = params.channel;
  const int slotCount = params.slotCount;
  created->slotBytes_ = params.slotBytes;
  created->slotCount_ = static_cast<uint64_t>(slotCount);
  created->sizes_.assign(static_cast<size_t>(slotCount), 0);
  WEFT_RETURN_IF_ERROR(QueuePair::create(port, slotCount + 1, slotCount, describePeer(params), &created->queuePair_));
  QueuePair& qp = *created->queuePair_;
  const size_t slotsBytes = params.slotBytes * static_cast<size_t>(slotCount);
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(slotsBytes, "ib receive slots", &created->slots_));
  ibv_mr* slotsMr = nullptr;
  WEFT_RETURN_IF_ERROR(qp.registerMemory(created->slots_.get(), slotsBytes,
                                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &slotsMr));
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(sizeof(uint64_t), "ib credit source", &created->creditSource_));
  WEFT_RETURN_IF_ERROR(qp.registerMemory(created->creditSource_.get(), sizeof(uint64_t), IBV_ACCESS_LOCAL_WRITE,
                                         &created->creditMr_));
  for (int i = 0; i < slotCount; ++i) WEFT_RETURN_IF_ERROR(qp.postReceive());

  std::vector<net::NetInterface> interfaces;
  WEFT_RETURN_IF_ERROR(net::findInterfaces(&interfaces));
  if (interfaces.empty()) {
    return systemError("ib transport: no network interface for the setup connection of %s; check "
                       "NCCL_SOCKET_IFNAME and NCCL_SOCKET_FAMILY",
                       qp.peerDescription().c_str());
  }
  net::SocketAddress address = interfaces.front().address;
  address.setPort(0);
  net::Socket listener;
  Status status = net::Socket::listen(address, &listener);
  if (!status.isOk()) return status.withContext("ib transport: listening on " + address.toString());

  *blob = IbBlob{};
  blob->receiverRank = params.self.rank;
  if (getrandom(&blob->nonce, sizeof(blob->nonce), 0) != sizeof(blob->nonce)) {
    return systemError("ib transport: getrandom for a connection nonce failed");
  }
  blob->commHash = params.commHash;
  blob->channel = params.channel;
  blob->slotCount = slotCount;
  blob->slotBytes = params.slotBytes;
  blob->slotsAddress = reinterpret_cast<uintptr_t>(created->slots_.get());
  blob->slotsKey = slotsMr->rkey;
  blob->queuePair = qp.address();
  blob->setupAddress = listener.localAddress();

  created->acceptor_ = std::make_unique<Acceptor>(
      "ib", std::move(listener), makeHandshake(params.peer.rank, blob->nonce, params),
      static_cast<double>(knobs::getInt(knobs::KnobId::kBootstrapHandshakeTimeout)), params.peer.rank,
      params.peer.hostname);
  *connection = std::move(created);
  return Status::ok();
}

Status IbRecvConnection::fail(Status status) {
  if (!status.isOk() && error_.isOk()) error_ = status;
  return status;
}

Status IbRecvConnection::trySetup() {
  if (!setup_.valid()) {
    WEFT_RETURN_IF_ERROR(fail(acceptor_->tryAccept(&setup_)));
    if (!setup_.valid()) return Status::ok();
    acceptor_.reset();
  }
  Status status = setup_.tryRecv(&sender_, sizeof(SenderInfo), &senderBytes_);
  if (!status.isOk()) {
    return fail(status.withContext("ib transport: receiving the queue pair address of " +
                                   queuePair_->peerDescription()));
  }
  if (senderBytes_ < sizeof(SenderInfo)) return Status::ok();
  setup_.close();
  if (sender_.magic != kIbWireMagic) {
    return fail(internalError("ib transport: %s sent a queue pair address without Weft's mark",
                              queuePair_->peerDescription().c_str()));
  }
  WEFT_RETURN_IF_ERROR(fail(queuePair_->connect(sender_.queuePair)));
  connected_ = true;
  WEFT_INFO(log::kNet, "Channel %02d : receiving from %s over ib %s", channel_,
            queuePair_->peerDescription().c_str(), queuePair_->port().name().c_str());
  return writeCredit();  // released 0: the sender may start
}

Status IbRecvConnection::pollCompletions() {
  ibv_wc completions[kPollBatch];
  int count = 0;
  do {
    WEFT_RETURN_IF_ERROR(fail(queuePair_->poll(completions, kPollBatch, &count)));
    for (int i = 0; i < count; ++i) {
      if (completions[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        sizes_[arrived_ % slotCount_] = ntohl(completions[i].imm_data);
        ++arrived_;
      } else {
        ++creditWritesDone_;
      }
    }
  } while (count == kPollBatch);
  return Status::ok();
}

Status IbRecvConnection::writeCredit() {
  // Bounded outstanding sends: at most one credit write per slot plus the first is in flight.
  while (creditWrites_ - creditWritesDone_ > slotCount_) WEFT_RETURN_IF_ERROR(pollCompletions());
  memcpy(creditSource_.get(), &released_, sizeof(released_));
  WEFT_RETURN_IF_ERROR(fail(queuePair_->postWrite(creditSource_.get(), creditMr_->lkey, sizeof(uint64_t),
                                                  sender_.creditAddress, sender_.creditKey, nullptr)));
  ++creditWrites_;
  return Status::ok();
}

Status IbRecvConnection::tryPeekSlot(const void** data, size_t* bytes) {
  *data = nullptr;
  *bytes = 0;
  if (!error_.isOk()) return error_;
  if (!connected_) {
    WEFT_RETURN_IF_ERROR(trySetup());
    if (!connected_) return Status::ok();
  }
  if (arrived_ == released_) WEFT_RETURN_IF_ERROR(pollCompletions());
  if (arrived_ > released_) {
    *data = slotAt(released_);
    *bytes = sizes_[released_ % slotCount_];
    if (*bytes > slotBytes_) {
      return fail(remoteError("ib transport: %s announced %zu bytes in a slot of %zu bytes: the stream is corrupted",
                              queuePair_->peerDescription().c_str(), *bytes, slotBytes_));
    }
  }
  return Status::ok();
}

Status IbRecvConnection::releaseSlot() {
  if (!error_.isOk()) return error_;
  if (arrived_ == released_) {
    return invalidUsage("ib transport: releaseSlot without a peeked slot (from %s)",
                        queuePair_->peerDescription().c_str());
  }
  // The slot's receive is posted again before the sender can learn the slot is free.
  WEFT_RETURN_IF_ERROR(fail(queuePair_->postReceive()));
  ++released_;
  return writeCredit();
}

}  // namespace weft::transport::ib
