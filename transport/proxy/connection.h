#pragma once
// The two ends of a proxied connection: a host network connection (socket or ib) on one side, a
// staged ring (staged_ring.h) on the other, which the kernel drives as it drives a cuda_ipc end.
// The proxy thread (proxy_thread.h) carries pieces between them:
//  - sending: each slot the kernel posts (with its byte count) is copied into a slot of the
//    network connection and posted there; the kernel's slot is then released;
//  - receiving: each piece the network delivers is copied into the kernel's next free slot and
//    posted to it; the network's slot is then released. Where the network writes only where it
//    was told (ib), the proxy announces the expected pieces to it, into its own slots.
// The host path never uses these ends: their slot calls fail (tryFlush says whether the proxy has
// sent every expected piece).

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "transport/proxy/staged_ring.h"
#include "transport/transport.h"

namespace weft::transport::proxy {

/// What the proxy thread drives. Thread-safety: expect() and drained() from any thread; the rest
/// from the proxy thread only.
class ProxiedEnd : public DeviceProxy {
 public:
  /// How often an end waiting without progress asks its sink whether the communicator stands.
  static constexpr std::chrono::milliseconds kAskEvery{100};
  void expect(uint64_t pieces, ProxyFailureSink* sink) override;
  bool drained() const override;

  /// Moves what can move without waiting; true if a piece moved. A failure of the network
  /// connection, or of the sink's checkAlive() (asked every kAskEvery without progress), goes once
  /// to the sink of the last expect(), and the end stops.
  bool advance();
  /// Stops the end for good, with `why`, if it still owes pieces: `why` goes once to the sink and
  /// the end counts as drained. For the proxy thread's exit, when nothing will move it again.
  void halt(const Status& why);

 protected:
  ProxiedEnd(StagedMemory memory, size_t slotBytes, int slotCount, std::string what);
  virtual Status carry(bool* moved) = 0;
  uint64_t expected() const { return expected_.load(std::memory_order_acquire); }
  /// Records that `pieces` pieces have been carried in all (a sending end's: left this rank).
  void carried(uint64_t pieces) { carried_.store(pieces, std::memory_order_release); }

  StagedMemory memory_;
  DeviceEnd ring_;        // as this process reaches it
  DeviceEnd deviceRing_;  // as the GPU reaches it

 private:
  std::string what_;  // "sending to rank 3 on channel 1 over socket"
  std::atomic<uint64_t> expected_{0};
  std::atomic<uint64_t> carried_{0};
  std::atomic<ProxyFailureSink*> sink_{nullptr};
  std::atomic<bool> failed_{false};
  bool waiting_ = false;  // the last advance moved nothing
  std::chrono::steady_clock::time_point lastAsked_;

  Status askWhileWaiting();
  /// Marks the end failed and tells the sink, once.
  void fail(const Status& why);
};

class ProxySendConnection final : public SendConnection, public ProxiedEnd {
 public:
  /// Wraps `network` (connected) with a ring from `allocate`, and hands the end to the proxy thread.
  static Status create(std::unique_ptr<SendConnection> network, StagingAllocator allocate,
                       const ConnectionParams& params, const char* networkName,
                       std::unique_ptr<ProxySendConnection>* out);
  ~ProxySendConnection() override;

  Status tryAcquireSlot(void** slot, SlotKind kind) override;
  Status postSlot(size_t bytes) override;
  Status tryFlush(bool* done) override;
  size_t slotBytes() const override { return ring_.slotBytes; }
  const DeviceEnd* deviceEnd() const override { return &deviceRing_; }

 private:
  ProxySendConnection(std::unique_ptr<SendConnection> network, StagedMemory memory, const ConnectionParams& params,
                      std::string what);
  Status carry(bool* moved) override;

  std::unique_ptr<SendConnection> network_;
  uint64_t forwarded_ = 0;  // kernel posts handed to the network
};

class ProxyRecvConnection final : public RecvConnection, public ProxiedEnd {
 public:
  /// Wraps `network` (listening) with a ring from `allocate`, and hands the end to the proxy thread.
  static Status create(std::unique_ptr<RecvConnection> network, StagingAllocator allocate,
                       const ConnectionParams& params, const char* networkName,
                       std::unique_ptr<ProxyRecvConnection>* out);
  ~ProxyRecvConnection() override;

  Status tryPeekSlot(const void** data, size_t* bytes, SlotKind kind) override;
  Status releaseSlot() override;
  size_t slotBytes() const override { return ring_.slotBytes; }
  const DeviceEnd* deviceEnd() const override { return &deviceRing_; }

 private:
  ProxyRecvConnection(std::unique_ptr<RecvConnection> network, StagedMemory memory, const ConnectionParams& params,
                      std::string what);
  Status carry(bool* moved) override;
  Status announce();

  std::unique_ptr<RecvConnection> network_;
  uint64_t delivered_ = 0;  // network pieces posted to the kernel
  uint64_t announced_ = 0;  // pieces announced to a network that takes landings
};

}  // namespace weft::transport::proxy
