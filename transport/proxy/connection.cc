#include "transport/proxy/connection.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "transport/proxy/proxy_thread.h"

namespace weft::transport::proxy {
namespace {

uint64_t loadAcquire(uint64_t* counter) { return std::atomic_ref<uint64_t>(*counter).load(std::memory_order_acquire); }

void storeRelease(uint64_t* counter, uint64_t value) {
  std::atomic_ref<uint64_t>(*counter).store(value, std::memory_order_release);
}

Status notOnHostPath() {
  return internalError("a proxied connection is moved by its kernel and the proxy thread; the host path cannot use "
                       "it");
}

std::string describe(const char* direction, const ConnectionParams& params, const char* networkName) {
  return std::string(direction) + " rank " + std::to_string(params.peer.rank) + " on channel " +
         std::to_string(params.channel) + " over " + networkName;
}

// A zeroed ring for `params`, in memory from `allocate`.
Status makeRing(StagingAllocator allocate, const ConnectionParams& params, StagedMemory* memory) {
  const size_t bytes = stagedRingBytes(params.slotBytes, params.slotCount);
  WEFT_RETURN_IF_ERROR(allocate(bytes, params.self.cudaDevice, memory));
  std::memset(memory->host(), 0, bytes);
  return Status::ok();
}

}  // namespace

ProxiedEnd::ProxiedEnd(StagedMemory memory, size_t slotBytes, int slotCount, std::string what)
    : memory_(std::move(memory)),
      ring_(stagedRingAt(memory_.host(), slotBytes, slotCount)),
      deviceRing_(stagedRingAt(memory_.device(), slotBytes, slotCount)),
      what_(std::move(what)) {
  deviceRing_.proxy = this;
}

void ProxiedEnd::expect(uint64_t pieces, ProxyFailureSink* sink) {
  sink_.store(sink, std::memory_order_release);
  expected_.fetch_add(pieces, std::memory_order_acq_rel);
  if (!ProxyThread::instance().wake()) halt(ProxyThread::exitingError());
}

void ProxiedEnd::halt(const Status& why) {
  if (carried_.load(std::memory_order_acquire) < expected()) fail(why);
}

void ProxiedEnd::fail(const Status& why) {
  if (failed_.exchange(true, std::memory_order_acq_rel)) return;
  ProxyFailureSink* sink = sink_.load(std::memory_order_acquire);  // set by the expect() that made the end needed
  if (sink != nullptr) sink->proxyFailed(why.withContext("network proxy " + what_));
}

bool ProxiedEnd::drained() const {
  return failed_.load(std::memory_order_acquire) || carried_.load(std::memory_order_acquire) >= expected();
}

bool ProxiedEnd::advance() {
  bool moved = false;
  Status status = carry(&moved);
  if (status.isOk() && !moved) status = askWhileWaiting();
  if (moved) waiting_ = false;
  if (!status.isOk()) fail(status);
  return moved;
}

Status ProxiedEnd::askWhileWaiting() {
  const auto now = std::chrono::steady_clock::now();
  if (!waiting_) {
    waiting_ = true;
    lastAsked_ = now;
    return Status::ok();
  }
  if (now - lastAsked_ < kAskEvery) return Status::ok();
  lastAsked_ = now;
  ProxyFailureSink* sink = sink_.load(std::memory_order_acquire);
  return sink != nullptr ? sink->checkAlive() : Status::ok();
}

// Sending end.

ProxySendConnection::ProxySendConnection(std::unique_ptr<SendConnection> network, StagedMemory memory,
                                         const ConnectionParams& params, std::string what)
    : ProxiedEnd(std::move(memory), params.slotBytes, params.slotCount, std::move(what)),
      network_(std::move(network)) {}

Status ProxySendConnection::create(std::unique_ptr<SendConnection> network, StagingAllocator allocate,
                                   const ConnectionParams& params, const char* networkName,
                                   std::unique_ptr<ProxySendConnection>* out) {
  if (network->slotBytes() < params.slotBytes) {
    return internalError("the network connection's slots (%zu bytes) are smaller than the kernel's (%zu)",
                         network->slotBytes(), params.slotBytes);
  }
  StagedMemory memory;
  WEFT_RETURN_IF_ERROR(makeRing(allocate, params, &memory));
  out->reset(new ProxySendConnection(std::move(network), std::move(memory), params,
                                     describe("sending to", params, networkName)));
  ProxyThread::instance().add(out->get());
  return Status::ok();
}

ProxySendConnection::~ProxySendConnection() { ProxyThread::instance().remove(this); }

Status ProxySendConnection::tryAcquireSlot(void** slot, SlotKind /*kind*/) {
  *slot = nullptr;
  return notOnHostPath();
}

Status ProxySendConnection::postSlot(size_t /*bytes*/) { return notOnHostPath(); }

Status ProxySendConnection::tryFlush(bool* done) {
  *done = drained();  // the proxy thread flushes the network connection
  return Status::ok();
}

Status ProxySendConnection::carry(bool* moved) {
  const uint64_t posted = loadAcquire(ring_.posted);
  while (forwarded_ < posted) {
    void* slot = nullptr;
    WEFT_RETURN_IF_ERROR(network_->tryAcquireSlot(&slot, SlotKind::kSimple));
    if (slot == nullptr) break;
    const uint64_t at = forwarded_ % ring_.slotCount;
    // Written before `posted`, whose acquire load above orders this read after it.
    const uint64_t bytes = std::atomic_ref<uint64_t>(ring_.sizes[at]).load(std::memory_order_relaxed);
    if (bytes > ring_.slotBytes) {
      return internalError("the kernel posted %llu bytes in a slot of %zu", static_cast<unsigned long long>(bytes),
                           ring_.slotBytes);
    }
    std::memcpy(slot, ring_.slots + at * ring_.slotBytes, bytes);
    WEFT_RETURN_IF_ERROR(network_->postSlot(bytes));
    ++forwarded_;
    storeRelease(ring_.released, forwarded_);
    *moved = true;
  }
  bool flushed = false;
  WEFT_RETURN_IF_ERROR(network_->tryFlush(&flushed));
  if (flushed) carried(forwarded_);
  return Status::ok();
}

// Receiving end.

ProxyRecvConnection::ProxyRecvConnection(std::unique_ptr<RecvConnection> network, StagedMemory memory,
                                         const ConnectionParams& params, std::string what)
    : ProxiedEnd(std::move(memory), params.slotBytes, params.slotCount, std::move(what)),
      network_(std::move(network)) {
  deviceRing_.sizes = nullptr;  // the kernel knows each piece's size from its program
}

Status ProxyRecvConnection::create(std::unique_ptr<RecvConnection> network, StagingAllocator allocate,
                                   const ConnectionParams& params, const char* networkName,
                                   std::unique_ptr<ProxyRecvConnection>* out) {
  StagedMemory memory;
  WEFT_RETURN_IF_ERROR(makeRing(allocate, params, &memory));
  out->reset(new ProxyRecvConnection(std::move(network), std::move(memory), params,
                                     describe("receiving from", params, networkName)));
  ProxyThread::instance().add(out->get());
  return Status::ok();
}

ProxyRecvConnection::~ProxyRecvConnection() { ProxyThread::instance().remove(this); }

Status ProxyRecvConnection::tryPeekSlot(const void** data, size_t* bytes, SlotKind /*kind*/) {
  *data = nullptr;
  *bytes = 0;
  return notOnHostPath();
}

Status ProxyRecvConnection::releaseSlot() { return notOnHostPath(); }

// A network that takes landings (ib) is told the expected pieces one to two rings ahead of those
// delivered (topped up a ring at a time), at least as many as it can offer, so that its sender is
// offered each slot as soon as it frees; the pieces land in the network's own slots.
Status ProxyRecvConnection::announce() {
  const uint64_t ring = static_cast<uint64_t>(ring_.slotCount);
  if (announced_ - delivered_ >= ring) return Status::ok();
  const uint64_t target = std::min(expected(), delivered_ + 2 * ring);
  if (announced_ >= target) return Status::ok();
  const std::vector<Landing> landings(target - announced_);
  WEFT_RETURN_IF_ERROR(network_->expectLandings(landings));
  announced_ = target;
  return Status::ok();
}

Status ProxyRecvConnection::carry(bool* moved) {
  WEFT_RETURN_IF_ERROR(network_->progress());
  const bool takesLandings = network_->takesLandings();
  for (;;) {
    if (takesLandings) {
      WEFT_RETURN_IF_ERROR(announce());
      if (delivered_ == announced_) break;
    }
    // The kernel's slot delivered_ % slotCount is free once it has released delivered_ - slotCount + 1.
    if (delivered_ - loadAcquire(ring_.released) >= static_cast<uint64_t>(ring_.slotCount)) break;
    const void* data = nullptr;
    size_t bytes = 0;
    WEFT_RETURN_IF_ERROR(network_->tryPeekSlot(&data, &bytes, SlotKind::kSimple));
    if (data == nullptr) break;
    if (bytes > ring_.slotBytes) {
      return internalError("the network delivered %zu bytes for a slot of %zu", bytes, ring_.slotBytes);
    }
    const uint64_t at = delivered_ % ring_.slotCount;
    std::memcpy(ring_.slots + at * ring_.slotBytes, data, bytes);
    WEFT_RETURN_IF_ERROR(network_->releaseSlot());
    ++delivered_;
    storeRelease(ring_.posted, delivered_);
    carried(delivered_);
    *moved = true;
  }
  return Status::ok();
}

}  // namespace weft::transport::proxy
