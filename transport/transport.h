#pragma once
// The transport interface: how the bytes of one step move between two ranks.
//
// A connection is one direction of one rank pair on one channel: a ring of `slotCount` slots of
// `slotBytes` each. The sender acquires a free slot, fills it and posts it; the receiver peeks at
// the oldest posted slot, consumes it and releases it. Every call is non-blocking, so one thread
// drives many connections; callers wait through the wait helper (src/base/wait.h).
//
// Setup is two-sided: the receiving end calls Transport::listen (allocating what it owns) and
// hands the returned blob to the sender, over the bootstrap; the sending end calls
// Transport::connect with that blob. connect must not wait for the receiver to act again, so a
// single thread may set up both ends of many connections (ncclCommInitAll).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/base/peer_info.h"
#include "src/base/status.h"

namespace weft::transport {

/// One connection whose slots live in GPU memory (cuda_ipc), as a kernel reaches it: the
/// receiver's slots and counters, mapped into this process. The sender fills slot
/// `posted % slotCount` and then increments `posted`; the receiver consumes slot
/// `released % slotCount` and then increments `released`. Both counts only grow.
struct DeviceEnd {
  char* slots = nullptr;           // slotCount slots of slotBytes each
  uint64_t* posted = nullptr;      // slots filled so far (written by the sender only)
  uint64_t* released = nullptr;    // slots consumed so far (written by the receiver only)
  size_t slotBytes = 0;
  int slotCount = 0;
};

/// Sending end of a connection. Used by one thread at a time.
class SendConnection {
 public:
  virtual ~SendConnection() = default;
  /// Non-blocking. Sets *slot to a free slot of slotBytes() bytes, or to nullptr if none is free
  /// yet. Calling it again before postSlot returns the same slot.
  virtual Status tryAcquireSlot(void** slot) = 0;
  /// Publishes the acquired slot holding `bytes` (<= slotBytes()) of payload. Non-blocking.
  virtual Status postSlot(size_t bytes) = 0;
  /// Non-blocking. Sets *done when every posted slot has left this rank's hands (for network
  /// transports, handed to the kernel), so the connection may be torn down or left idle.
  virtual Status tryFlush(bool* done) = 0;
  virtual size_t slotBytes() const = 0;
  /// For a connection driven by GPU kernels: where a kernel finds it; nullptr for host connections.
  virtual const DeviceEnd* deviceEnd() const { return nullptr; }
};

/// Receiving end of a connection. Used by one thread at a time.
class RecvConnection {
 public:
  virtual ~RecvConnection() = default;
  /// Non-blocking. Sets *data/*bytes to the oldest posted slot, or *data to nullptr if none yet.
  /// Calling it again before releaseSlot returns the same slot.
  virtual Status tryPeekSlot(const void** data, size_t* bytes) = 0;
  /// Returns the peeked slot to the sender. Non-blocking.
  virtual Status releaseSlot() = 0;
  virtual size_t slotBytes() const = 0;
  /// For a connection driven by GPU kernels: where a kernel finds it; nullptr for host connections.
  virtual const DeviceEnd* deviceEnd() const { return nullptr; }
};

/// What both ends of a connection agree on.
struct ConnectionParams {
  PeerInfo self;
  PeerInfo peer;
  uint64_t commHash = 0;  // identifies the communicator, for names and handshakes
  int channel = 0;
  size_t slotBytes = 0;   // a multiple of 64
  int slotCount = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  /// "shm", "socket", ... as NCCL names them in logs.
  virtual const char* name() const = 0;
  /// True if this transport can connect `self` and `peer` (e.g. shm: same host and shm folder).
  virtual bool canConnect(const PeerInfo& self, const PeerInfo& peer) const = 0;
  /// Receiving end: allocates the connection's resources and writes the blob for the sender.
  /// Does not block on the peer.
  virtual Status listen(const ConnectionParams& params, std::unique_ptr<RecvConnection>* connection,
                        std::vector<uint8_t>* blob) = 0;
  /// Sending end: connects to the receiver that produced `blob`. Does not wait for the receiver
  /// to act again (it may be driven by the same thread later).
  virtual Status connect(const ConnectionParams& params, std::span<const uint8_t> blob,
                         std::unique_ptr<SendConnection>* connection) = 0;
};

}  // namespace weft::transport
