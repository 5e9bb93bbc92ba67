#include "transport/ib/connection.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstddef>
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

// Offer and count writes the receiver may have in flight (queue pair 0's send depth), and the
// count words they read (one more, so that the word a new count write takes was read by a write
// that completed).
int controlDepth(int slotCount) { return 2 * slotCount + 2; }
uint64_t countSources(uint64_t slotCount) {
  return static_cast<uint64_t>(controlDepth(static_cast<int>(slotCount))) + 1;
}

uint64_t loadOffered(const uint8_t* table) {
  return __atomic_load_n(reinterpret_cast<const uint64_t*>(table), __ATOMIC_ACQUIRE);
}

const Offer& offerAt(const uint8_t* table, uint64_t post, uint64_t slotCount) {
  return reinterpret_cast<const Offer*>(table + kOfferEntriesOffset)[post % slotCount];
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
  const size_t tableBytes = offerTableBytes(slotCount);
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(tableBytes, "ib offer table", &created->offerTable_));  // zeroed
  ibv_mr* tableMr = nullptr;
  WEFT_RETURN_IF_ERROR(first.registerMemory(created->offerTable_.get(), tableBytes,
                                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &tableMr));
  SenderInfo info;
  for (int q = 0; q < queuePairs; ++q) {
    WEFT_RETURN_IF_ERROR(created->queuePairs_[q]->connect(blob.queuePairs[q]));
    info.queuePairs[q] = created->queuePairs_[q]->address();
  }
  info.offerTableAddress = reinterpret_cast<uintptr_t>(created->offerTable_.get());
  info.offerTableKey = tableMr->rkey;

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

bool IbSendConnection::mayPost() const {
  if (loadOffered(offerTable_.get()) <= posted_) return false;
  return std::all_of(completed_.begin(), completed_.end(),
                     [&](uint64_t completed) { return posted_ - completed < slotCount_; });
}

Status IbSendConnection::tryAcquireSlot(void** slot, SlotKind /*kind: no LL ring*/) {
  *slot = nullptr;
  if (!error_.isOk()) return error_;
  WEFT_RETURN_IF_ERROR(pollCompletions());
  if (mayPost()) *slot = slotAt(posted_);
  return Status::ok();
}

Status IbSendConnection::postSlot(size_t bytes) {
  if (!error_.isOk()) return error_;
  if (bytes > slotBytes_) {
    return invalidUsage("ib transport: posted %zu bytes in a slot of %zu bytes (to %s)", bytes, slotBytes_,
                        peer().c_str());
  }
  if (!mayPost()) {
    return invalidUsage("ib transport: postSlot without a free slot (to %s): call tryAcquireSlot until it returns a "
                        "slot",
                        peer().c_str());
  }
  const Offer& offer = offerAt(offerTable_.get(), posted_, slotCount_);
  if (offer.post != posted_) {
    return fail(remoteError("ib transport: %s offered post %llu where post %llu was due: the offer stream is "
                            "corrupted",
                            peer().c_str(), static_cast<unsigned long long>(offer.post),
                            static_cast<unsigned long long>(posted_)));
  }
  if (bytes > offer.bytes) {
    return fail(internalError("ib transport: %zu bytes to post to %s, which offered room for %u: the ranks are not "
                              "calling the same operations with the same counts",
                              bytes, peer().c_str(), offer.bytes));
  }
  const uint32_t immediate = static_cast<uint32_t>(bytes);
  const size_t share = (bytes + queuePairs_.size() - 1) / queuePairs_.size();
  for (size_t q = 0; q < queuePairs_.size(); ++q) {
    const size_t offset = std::min(q * share, bytes);
    const size_t length = std::min(share, bytes - offset);
    WEFT_RETURN_IF_ERROR(fail(queuePairs_[q]->postWrite(slotAt(posted_) + offset, slotsMr_->lkey, length,
                                                        offer.address + offset, offer.key, &immediate)));
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
  created->landedAt_.assign(static_cast<size_t>(slotCount), nullptr);
  created->arrivedShares_.assign(static_cast<size_t>(queuePairs), 0);
  for (int q = 0; q < queuePairs; ++q) {
    // Queue pair 0 also carries the offer and count writes.
    std::unique_ptr<QueuePair> queuePair;
    WEFT_RETURN_IF_ERROR(QueuePair::create(port, q == 0 ? controlDepth(slotCount) : 1, slotCount,
                                           describePeer(params), &queuePair));
    for (int i = 0; i < slotCount; ++i) WEFT_RETURN_IF_ERROR(queuePair->postReceive());
    created->queuePairs_.push_back(std::move(queuePair));
  }
  QueuePair& first = *created->queuePairs_.front();
  const size_t slotsBytes = params.slotBytes * static_cast<size_t>(slotCount);
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(slotsBytes, "ib receive slots", &created->slots_));
  ibv_mr* slotsMr = nullptr;
  WEFT_RETURN_IF_ERROR(first.registerMemory(created->slots_.get(), slotsBytes,
                                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &slotsMr));
  created->slotsKey_ = slotsMr->rkey;
  const size_t sourcesBytes =
      sizeof(Offer) * static_cast<size_t>(slotCount) + sizeof(uint64_t) * countSources(created->slotCount_);
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(sourcesBytes, "ib offer sources", &created->offerSources_));
  WEFT_RETURN_IF_ERROR(first.registerMemory(created->offerSources_.get(), sourcesBytes, IBV_ACCESS_LOCAL_WRITE,
                                            &created->offerSourcesMr_));

  *blob = IbBlob{};
  blob->receiverRank = params.self.rank;
  // The setup connection is small and brief: the first allowed interface carries it.
  net::NetInterface setupInterface;
  WEFT_RETURN_IF_ERROR(listeningInterface("ib", params, 0, &setupInterface));
  WEFT_RETURN_IF_ERROR(
      Acceptor::open("ib", params, setupInterface, &created->acceptor_, &blob->setupAddress, &blob->nonce));
  blob->commHash = params.commHash;
  blob->channel = params.channel;
  blob->slotCount = slotCount;
  blob->slotBytes = params.slotBytes;
  blob->queuePairCount = queuePairs;
  for (int q = 0; q < queuePairs; ++q) blob->queuePairs[q] = created->queuePairs_[q]->address();
  *connection = std::move(created);
  return Status::ok();
}

IbRecvConnection::~IbRecvConnection() {
  if (directPosts_ > 0) {
    WEFT_INFO(log::kNet, "Channel %02d : %llu of %llu posts from %s (%llu bytes) were written directly into "
              "registered buffers",
              channel_, static_cast<unsigned long long>(directPosts_), static_cast<unsigned long long>(released_),
              peer().c_str(), static_cast<unsigned long long>(directBytes_));
  }
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
  return makeOffers();
}

Status IbRecvConnection::pollCompletions() {
  ibv_wc completions[kPollBatch];
  for (size_t q = 0; q < queuePairs_.size(); ++q) {
    int count = 0;
    do {
      WEFT_RETURN_IF_ERROR(fail(queuePairs_[q]->poll(completions, kPollBatch, &count)));
      for (int i = 0; i < count; ++i) {
        if (completions[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
          // Every share of a post announces the post's whole payload size.
          sizes_[arrivedShares_[q] % slotCount_] = ntohl(completions[i].imm_data);
          ++arrivedShares_[q];
        } else {
          ++controlWritesDone_;
        }
      }
    } while (count == kPollBatch);
  }
  arrived_ = *std::min_element(arrivedShares_.begin(), arrivedShares_.end());
  return Status::ok();
}

ibv_mr* IbRecvConnection::regionOf(const Landing& landing) {
  const std::shared_ptr<DeviceContext>& device = queuePairs_.front()->device();
  void* region = nullptr;
  if (landing.memory->cached(device->pd(), &region)) return static_cast<ibv_mr*>(region);
  ibv_mr* mr = device->verbs().regMr(device->pd(), landing.memory->base(), landing.memory->bytes(),
                                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr == nullptr) {
    // The buffer still works, through the slots.
    WEFT_WARN("ib transport: cannot register the buffer at %p (%zu bytes, from ncclCommRegister) on %s (%s): its "
              "pieces from %s go through the slots; raise the locked-memory limit (ulimit -l) to have them written "
              "directly",
              static_cast<void*>(landing.memory->base()), landing.memory->bytes(),
              queuePairs_.front()->port().name().c_str(), strerror(errno), peer().c_str());
    landing.memory->cache(device->pd(), nullptr, [] {});
    return nullptr;
  }
  // The region keeps the device open: it is deregistered before the protection domain goes.
  landing.memory->cache(device->pd(), mr, [device, mr] { device->verbs().deregMr(mr); });
  return mr;
}

Status IbRecvConnection::makeOffers() {
  if (!connected_) return Status::ok();
  const uint64_t depth = static_cast<uint64_t>(controlDepth(static_cast<int>(slotCount_)));
  uint64_t room = std::min<uint64_t>(released_ + slotCount_ - offered_, landings_.size() - nextLanding_);
  if (room == 0) return Status::ok();
  // One write per offer, and one for the count.
  if (controlWrites_ - controlWritesDone_ + room + 1 > depth) WEFT_RETURN_IF_ERROR(pollCompletions());
  const uint64_t free = depth - (controlWrites_ - controlWritesDone_);
  room = std::min(room, free > 0 ? free - 1 : 0);
  if (room == 0) return Status::ok();  // a later poll offers them
  Offer* sources = reinterpret_cast<Offer*>(offerSources_.get());
  QueuePair& control = *queuePairs_.front();
  for (uint64_t i = 0; i < room; ++i) {
    const Landing& landing = landings_[nextLanding_++];
    const uint64_t post = offered_++;
    ibv_mr* region = landing.dst != nullptr ? regionOf(landing) : nullptr;
    Offer& offer = sources[post % slotCount_];
    offer = Offer{};
    offer.post = post;
    if (region != nullptr) {
      offer.address = reinterpret_cast<uintptr_t>(landing.dst);
      offer.key = region->rkey;
      offer.bytes = static_cast<uint32_t>(landing.bytes);
      landedAt_[post % slotCount_] = landing.dst;
    } else {
      offer.address = reinterpret_cast<uintptr_t>(slotAt(post));
      offer.key = slotsKey_;
      offer.bytes = static_cast<uint32_t>(slotBytes_);
      landedAt_[post % slotCount_] = nullptr;
    }
    const uint64_t entry = sender_.offerTableAddress + kOfferEntriesOffset + (post % slotCount_) * sizeof(Offer);
    WEFT_RETURN_IF_ERROR(fail(control.postWrite(&offer, offerSourcesMr_->lkey, sizeof(Offer), entry,
                                                sender_.offerTableKey, nullptr)));
    ++controlWrites_;
  }
  // The count goes last, on the same queue pair: the sender reads an offer only once it counts it.
  uint64_t* counts = reinterpret_cast<uint64_t*>(sources + slotCount_);
  uint64_t* count = &counts[controlWrites_ % countSources(slotCount_)];
  *count = offered_;
  WEFT_RETURN_IF_ERROR(fail(control.postWrite(count, offerSourcesMr_->lkey, sizeof(uint64_t),
                                              sender_.offerTableAddress, sender_.offerTableKey, nullptr)));
  ++controlWrites_;
  return Status::ok();
}

Status IbRecvConnection::expectLandings(std::span<const Landing> landings) {
  if (!error_.isOk()) return error_;
  landings_.erase(landings_.begin(), landings_.begin() + static_cast<std::ptrdiff_t>(nextLanding_));
  nextLanding_ = 0;
  landings_.insert(landings_.end(), landings.begin(), landings.end());
  return makeOffers();
}

Status IbRecvConnection::tryPeekSlot(const void** data, size_t* bytes, SlotKind /*kind: no LL ring*/) {
  *data = nullptr;
  *bytes = 0;
  if (!error_.isOk()) return error_;
  if (!connected_) {
    WEFT_RETURN_IF_ERROR(trySetup());
    if (!connected_) return Status::ok();
  }
  if (nextLanding_ < landings_.size()) WEFT_RETURN_IF_ERROR(makeOffers());
  if (arrived_ == released_) WEFT_RETURN_IF_ERROR(pollCompletions());
  if (arrived_ > released_) {
    const uint64_t at = released_ % slotCount_;
    *bytes = sizes_[at];
    char* landed = landedAt_[at];
    *data = landed != nullptr ? static_cast<const void*>(landed) : slotAt(released_);
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
  return makeOffers();
}

Status IbRecvConnection::releaseSlot() {
  if (!error_.isOk()) return error_;
  if (arrived_ == released_) {
    return invalidUsage("ib transport: releaseSlot without a peeked slot (from %s)", peer().c_str());
  }
  // The post's receives are posted again before the sender can be offered another.
  for (auto& queuePair : queuePairs_) WEFT_RETURN_IF_ERROR(fail(queuePair->postReceive()));
  if (landedAt_[released_ % slotCount_] != nullptr) {
    ++directPosts_;
    directBytes_ += sizes_[released_ % slotCount_];
  }
  ++released_;
  return makeOffers();
}

}  // namespace weft::transport::ib
