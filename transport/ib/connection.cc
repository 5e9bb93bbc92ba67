#include "transport/ib/connection.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "src/base/knobs.h"
#include "src/base/log.h"

namespace weft::transport::ib {
namespace {

// Completions taken from a queue per poll.
constexpr int kPollBatch = 16;

std::string describePeer(const ConnectionParams& params) {
  return "rank " + std::to_string(params.peer.rank) + " on host " + params.peer.hostname + ", channel " +
         std::to_string(params.channel);
}

// Each queue pair writes one share of a slot in one RDMA write: it must fit the port's largest.
Status checkShare(const ConnectionParams& params, const IbPort& port, int queuePairs) {
  const size_t share = (params.slotBytes + static_cast<size_t>(queuePairs) - 1) / static_cast<size_t>(queuePairs);
  if (share > port.maxMessageBytes) {
    return invalidArgument("ib transport: a slot share of %zu bytes (slots of %zu bytes over %d queue pairs) is more "
                           "than %s takes in one RDMA write (%zu bytes): lower NCCL_BUFFSIZE or raise "
                           "NCCL_IB_QPS_PER_CONNECTION",
                           share, params.slotBytes, queuePairs, port.name().c_str(), port.maxMessageBytes);
  }
  return Status::ok();
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
  const int queuePairs = blob.queuePairCount;
  WEFT_RETURN_IF_ERROR(checkShare(params, port, queuePairs));
  created->slotBytes_ = params.slotBytes;
  created->slotCount_ = static_cast<uint64_t>(slotCount);
  created->remoteSlots_ = blob.slotsAddress;
  created->remoteKey_ = blob.slotsKey;
  created->completed_.assign(static_cast<size_t>(queuePairs), 0);
  for (int q = 0; q < queuePairs; ++q) {
    std::unique_ptr<QueuePair> queuePair;
    WEFT_RETURN_IF_ERROR(QueuePair::create(port, slotCount, 1, describePeer(params), &queuePair));
    created->queuePairs_.push_back(std::move(queuePair));
  }
  // Registrations belong to the device's protection domain: every queue pair uses them.
  QueuePair& first = *created->queuePairs_.front();
  const size_t slotsBytes = params.slotBytes * static_cast<size_t>(slotCount);
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(slotsBytes, "ib send slots", &created->slots_));
  WEFT_RETURN_IF_ERROR(
      first.registerMemory(created->slots_.get(), slotsBytes, IBV_ACCESS_LOCAL_WRITE, &created->slotsMr_));
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(sizeof(uint64_t), "ib credit word", &created->credit_));
  memcpy(created->credit_.get(), &kCreditNotReady, sizeof(kCreditNotReady));
  ibv_mr* creditMr = nullptr;
  WEFT_RETURN_IF_ERROR(first.registerMemory(created->credit_.get(), sizeof(uint64_t),
                                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &creditMr));
  SenderInfo info;
  for (int q = 0; q < queuePairs; ++q) {
    WEFT_RETURN_IF_ERROR(created->queuePairs_[q]->connect(blob.queuePairs[q]));
    info.queuePairs[q] = created->queuePairs_[q]->address();
  }
  info.creditAddress = reinterpret_cast<uintptr_t>(created->credit_.get());
  info.creditKey = creditMr->rkey;

  net::Socket setup;  // closed on return: the kernel still delivers what it took, and the queue pairs carry the rest
  WEFT_RETURN_IF_ERROR(connectToReceiver("ib", params, blob.setupAddress, blob.nonce,
                                         std::span(reinterpret_cast<const uint8_t*>(&info), sizeof(info)), &setup));
  WEFT_INFO(log::kNet, "Channel %02d : sending to rank %d (host %s) over ib %s, %d queue pairs", params.channel,
            params.peer.rank, params.peer.hostname, port.name().c_str(), queuePairs);
  *connection = std::move(created);
  return Status::ok();
}

Status IbSendConnection::fail(Status status) {
  if (!status.isOk() && error_.isOk()) error_ = status;
  return status;
}

Status IbSendConnection::pollCompletions() {
  ibv_wc completions[kPollBatch];
  for (size_t q = 0; q < queuePairs_.size(); ++q) {
    int count = 0;
    do {
      WEFT_RETURN_IF_ERROR(fail(queuePairs_[q]->poll(completions, kPollBatch, &count)));
      completed_[q] += static_cast<uint64_t>(count);
    } while (count == kPollBatch);
  }
  return Status::ok();
}

bool IbSendConnection::slotFree(uint64_t released) const {
  if (released == kCreditNotReady || posted_ - released >= slotCount_) return false;
  return std::all_of(completed_.begin(), completed_.end(),
                     [&](uint64_t completed) { return posted_ - completed < slotCount_; });
}

Status IbSendConnection::tryAcquireSlot(void** slot, SlotKind /*kind: no LL ring*/) {
  *slot = nullptr;
  if (!error_.isOk()) return error_;
  WEFT_RETURN_IF_ERROR(pollCompletions());
  // Until the receiver has connected, the credit word holds kCreditNotReady.
  if (slotFree(loadCredit(credit_.get()))) *slot = slotAt(posted_);
  return Status::ok();
}

Status IbSendConnection::postSlot(size_t bytes) {
  if (!error_.isOk()) return error_;
  if (bytes > slotBytes_) {
    return invalidUsage("ib transport: posted %zu bytes in a slot of %zu bytes (to %s)", bytes, slotBytes_,
                        peer().c_str());
  }
  if (!slotFree(loadCredit(credit_.get()))) {
    return invalidUsage("ib transport: postSlot without a free slot (to %s): call tryAcquireSlot until it returns a "
                        "slot",
                        peer().c_str());
  }
  const uint32_t immediate = static_cast<uint32_t>(bytes);
  const uint64_t remote = remoteSlots_ + (posted_ % slotCount_) * slotBytes_;
  const size_t share = (bytes + queuePairs_.size() - 1) / queuePairs_.size();
  for (size_t q = 0; q < queuePairs_.size(); ++q) {
    const size_t offset = std::min(q * share, bytes);
    const size_t length = std::min(share, bytes - offset);
    WEFT_RETURN_IF_ERROR(fail(queuePairs_[q]->postWrite(slotAt(posted_) + offset, slotsMr_->lkey, length,
                                                        remote + offset, remoteKey_, &immediate)));
  }
  ++posted_;
  return Status::ok();
}

Status IbSendConnection::tryFlush(bool* done) {
  *done = false;
  if (!error_.isOk()) return error_;
  WEFT_RETURN_IF_ERROR(pollCompletions());
  *done = std::all_of(completed_.begin(), completed_.end(), [&](uint64_t completed) { return completed == posted_; });
  return Status::ok();
}

// ---- IbRecvConnection ----

Status IbRecvConnection::create(const ConnectionParams& params, const IbPort& port,
                                std::unique_ptr<IbRecvConnection>* connection, IbBlob* blob) {
  std::unique_ptr<IbRecvConnection> created(new IbRecvConnection);
  created->channel_ = params.channel;
  const int slotCount = params.slotCount;
  const int queuePairs =
      std::clamp(static_cast<int>(knobs::getInt(knobs::KnobId::kIbQpsPerConnection)), 1, kMaxQueuePairs);
  WEFT_RETURN_IF_ERROR(checkShare(params, port, queuePairs));
  created->slotBytes_ = params.slotBytes;
  created->slotCount_ = static_cast<uint64_t>(slotCount);
  created->sizes_.assign(static_cast<size_t>(slotCount), 0);
  created->arrivedShares_.assign(static_cast<size_t>(queuePairs), 0);
  for (int q = 0; q < queuePairs; ++q) {
    // Queue pair 0 also carries the credit writes: at most one per slot plus the first.
    std::unique_ptr<QueuePair> queuePair;
    WEFT_RETURN_IF_ERROR(
        QueuePair::create(port, q == 0 ? slotCount + 1 : 1, slotCount, describePeer(params), &queuePair));
    for (int i = 0; i < slotCount; ++i) WEFT_RETURN_IF_ERROR(queuePair->postReceive());
    created->queuePairs_.push_back(std::move(queuePair));
  }
  QueuePair& first = *created->queuePairs_.front();
  const size_t slotsBytes = params.slotBytes * static_cast<size_t>(slotCount);
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(slotsBytes, "ib receive slots", &created->slots_));
  ibv_mr* slotsMr = nullptr;
  WEFT_RETURN_IF_ERROR(first.registerMemory(created->slots_.get(), slotsBytes,
                                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &slotsMr));
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(sizeof(uint64_t), "ib credit source", &created->creditSource_));
  WEFT_RETURN_IF_ERROR(first.registerMemory(created->creditSource_.get(), sizeof(uint64_t), IBV_ACCESS_LOCAL_WRITE,
                                            &created->creditMr_));

  *blob = IbBlob{};
  blob->receiverRank = params.self.rank;
  WEFT_RETURN_IF_ERROR(Acceptor::open("ib", params, &created->acceptor_, &blob->setupAddress, &blob->nonce));
  blob->commHash = params.commHash;
  blob->channel = params.channel;
  blob->slotCount = slotCount;
  blob->slotBytes = params.slotBytes;
  blob->slotsAddress = reinterpret_cast<uintptr_t>(created->slots_.get());
  blob->slotsKey = slotsMr->rkey;
  blob->queuePairCount = queuePairs;
  for (int q = 0; q < queuePairs; ++q) blob->queuePairs[q] = created->queuePairs_[q]->address();
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
    return fail(status.withContext("ib transport: receiving the queue pair addresses of " + peer()));
  }
  if (senderBytes_ < sizeof(SenderInfo)) return Status::ok();
  setup_.close();
  if (sender_.magic != kIbWireMagic) {
    return fail(internalError("ib transport: %s sent queue pair addresses without Weft's mark", peer().c_str()));
  }
  for (size_t q = 0; q < queuePairs_.size(); ++q) {
    WEFT_RETURN_IF_ERROR(fail(queuePairs_[q]->connect(sender_.queuePairs[q])));
  }
  connected_ = true;
  WEFT_INFO(log::kNet, "Channel %02d : receiving from %s over ib %s, %zu queue pairs", channel_, peer().c_str(),
            queuePairs_.front()->port().name().c_str(), queuePairs_.size());
  return writeCredit();  // released 0: the sender may start
}

Status IbRecvConnection::pollCompletions() {
  ibv_wc completions[kPollBatch];
  for (size_t q = 0; q < queuePairs_.size(); ++q) {
    int count = 0;
    do {
      WEFT_RETURN_IF_ERROR(fail(queuePairs_[q]->poll(completions, kPollBatch, &count)));
      for (int i = 0; i < count; ++i) {
        if (completions[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
          // Every share of a slot announces the slot's whole payload size.
          sizes_[arrivedShares_[q] % slotCount_] = ntohl(completions[i].imm_data);
          ++arrivedShares_[q];
        } else {
          ++creditWritesDone_;
        }
      }
    } while (count == kPollBatch);
  }
  arrived_ = *std::min_element(arrivedShares_.begin(), arrivedShares_.end());
  return Status::ok();
}

Status IbRecvConnection::writeCredit() {
  creditPending_ = true;
  // At most slotCount + 1 credit writes are in flight (queue pair 0's send depth). When that many
  // are, the write waits for a later peek or release, which writes the newest count then.
  if (creditWrites_ - creditWritesDone_ > slotCount_) WEFT_RETURN_IF_ERROR(pollCompletions());
  if (creditWrites_ - creditWritesDone_ > slotCount_) return Status::ok();
  creditPending_ = false;
  memcpy(creditSource_.get(), &released_, sizeof(released_));
  WEFT_RETURN_IF_ERROR(fail(queuePairs_.front()->postWrite(creditSource_.get(), creditMr_->lkey, sizeof(uint64_t),
                                                           sender_.creditAddress, sender_.creditKey, nullptr)));
  ++creditWrites_;
  return Status::ok();
}

Status IbRecvConnection::tryPeekSlot(const void** data, size_t* bytes, SlotKind /*kind: no LL ring*/) {
  *data = nullptr;
  *bytes = 0;
  if (!error_.isOk()) return error_;
  if (!connected_) {
    WEFT_RETURN_IF_ERROR(trySetup());
    if (!connected_) return Status::ok();
  }
  if (creditPending_) WEFT_RETURN_IF_ERROR(writeCredit());
  if (arrived_ == released_) WEFT_RETURN_IF_ERROR(pollCompletions());
  if (arrived_ > released_) {
    *data = slotAt(released_);
    *bytes = sizes_[released_ % slotCount_];
    if (*bytes > slotBytes_) {
      return fail(remoteError("ib transport: %s announced %zu bytes in a slot of %zu bytes: the stream is corrupted",
                              peer().c_str(), *bytes, slotBytes_));
    }
  }
  return Status::ok();
}

Status IbRecvConnection::progress() {
  if (!error_.isOk()) return error_;
  if (!connected_) return trySetup();
  return creditPending_ ? writeCredit() : Status::ok();
}

Status IbRecvConnection::releaseSlot() {
  if (!error_.isOk()) return error_;
  if (arrived_ == released_) {
    return invalidUsage("ib transport: releaseSlot without a peeked slot (from %s)", peer().c_str());
  }
  // The slot's receives are posted again before the sender can learn the slot is free.
  for (auto& queuePair : queuePairs_) WEFT_RETURN_IF_ERROR(fail(queuePair->postReceive()));
  ++released_;
  return writeCredit();
}

}  // namespace weft::transport::ib
