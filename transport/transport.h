#pragma once
// The transport interface: how the bytes of one step move between two ranks.
//
// A connection is one direction of one rank pair on one channel: a ring of `slotCount` slots of
// `slotBytes` each. The sender acquires a free slot, fills it and posts it; the receiver peeks at
// the oldest posted slot, consumes it and releases it. Every call is non-blocking, so one thread
// drives many connections; callers wait through the wait helper (src/base/wait.h).
//
// A connection may also have a low-latency ring (NCCL's LL protocol): smaller slots whose every
// 8-byte word carries 4 bytes of payload and a flag, so the receiver sees the data and its arrival
// in one read, with no counter and no fence between them. Which ring a piece takes is the caller's
// choice per call (SlotKind), the same at both ends; a transport without an LL ring carries LL
// pieces in its Simple slots, which are never smaller.
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

/// Which of a connection's rings a piece travels in.
enum class SlotKind : int {
  kSimple,      // bulk slots; the sender publishes a count after the data
  kLowLatency,  // LL: data and flag in each 8-byte word (shm); Simple slots elsewhere
};

/// Payload bytes one LL slot of `llSlotBytes` carries: half of it (4 of every 8 bytes), less the
/// word that holds the byte count, rounded down to 16 so that whole elements of any type fit.
/// 0 when llSlotBytes is under 64.
inline size_t lowLatencyPayloadBytes(size_t llSlotBytes) {
  return llSlotBytes < 64 ? 0 : llSlotBytes / 2 - 16;
}

/// Hears that the network connection behind a proxied device end failed (from the proxy's thread,
/// once per end, under the lock its ends share: it must make no CUDA call, which may wait for
/// kernels that wait for the proxy): its kernels will wait in vain unless told to give up.
class ProxyFailureSink {
 public:
  virtual ~ProxyFailureSink() = default;
  virtual void proxyFailed(const Status& failure) = 0;
  /// Asked now and then (from the proxy's thread) while an end waits without progress: a failure
  /// (the communicator aborted, a peer known dead) ends the end as a network failure would, so a
  /// host that vanished without closing its connections does not leave kernels waiting.
  virtual Status checkAlive() { return Status::ok(); }
};

/// The host thread that carries a device end's pieces between its kernel and a host network
/// connection (transport/proxy/). It works only while launches need it.
class DeviceProxy {
 public:
  virtual ~DeviceProxy() = default;
  /// Adds `pieces` to the pieces the end's kernels move: called once an eager launch has been
  /// enqueued, and at each replay of a captured one from a host node of its graph, before its
  /// kernel (so from CUDA's callback thread: any thread, and no CUDA call on the way). Counts
  /// only: pieces of a later launch may be told before an earlier one's are carried. `sink` must
  /// outlive the connection.
  virtual void expect(uint64_t pieces, ProxyFailureSink* sink) = 0;
  /// Whether every piece expected so far has been carried (a sending end's have left this rank),
  /// or the end has failed. Any thread.
  virtual bool drained() const = 0;
};

/// One connection as a kernel reaches it: slots and counters that the GPU can address (cuda_ipc:
/// the receiver's, in GPU memory; a proxied network connection: this rank's own, in pinned host
/// memory). The sender fills slot `posted % slotCount` and then increments `posted`; the receiver
/// consumes slot `released % slotCount` and then increments `released`. Both counts only grow.
struct DeviceEnd {
  char* slots = nullptr;           // slotCount slots of slotBytes each
  uint64_t* posted = nullptr;      // slots filled so far (written by the sender only)
  uint64_t* released = nullptr;    // slots consumed so far (written by the receiver only)
  /// Where the sender writes each post's byte count (entry `posted % slotCount`) before it
  /// increments `posted`; nullptr where the receiver needs no count (it knows it from its program).
  uint64_t* sizes = nullptr;
  /// The proxy behind a network connection, which the executor tells what each launch moves;
  /// nullptr for cuda_ipc, whose kernels reach each other directly.
  DeviceProxy* proxy = nullptr;
  size_t slotBytes = 0;
  int slotCount = 0;
  /// slotCount LL slots of llSlotBytes (16-byte lines of 8 data bytes and two copies of the
  /// piece's flag): LL pieces go there, and a sender of either kind refreshes their flags
  /// (src/device/kernel_work.h, kLowLatencyCleanMask); nullptr where the connection has none (a
  /// proxied one, or any of a communicator that spans hosts).
  char* llSlots = nullptr;
  size_t llSlotBytes = 0;
};

class RegisteredMemory;

/// Where one piece a receiving end will peek should land: in `dst` (`bytes` of it, inside the
/// registered buffer `memory`) if the transport can write there directly, else in a slot of its
/// own (always, when `dst` is nullptr).
struct Landing {
  char* dst = nullptr;
  size_t bytes = 0;
  RegisteredMemory* memory = nullptr;
};

/// Sending end of a connection. Used by one thread at a time.
class SendConnection {
 public:
  virtual ~SendConnection() = default;
  /// Non-blocking. Sets *slot to a free slot of `kind`, or to nullptr if none is free yet. A
  /// Simple slot holds slotBytes() bytes, an LL one lowLatencyPayloadBytes(llSlotBytes). Calling it
  /// again before postSlot returns the same slot.
  virtual Status tryAcquireSlot(void** slot, SlotKind kind) = 0;
  /// Publishes the acquired slot holding `bytes` (at most what its kind holds). Non-blocking.
  virtual Status postSlot(size_t bytes) = 0;
  /// Non-blocking. Sets *done when every posted slot has left this rank's hands (for network
  /// transports, handed to the kernel), so the connection may be torn down or left idle.
  virtual Status tryFlush(bool* done) = 0;
  virtual size_t slotBytes() const = 0;
  /// Between a successful tryAcquireSlot and postSlot: whether the caller should fill the slot
  /// with non-temporal stores, which send it to memory rather than keep it in this core's cache
  /// (shm: as the sender's trials or WEFT_SHM_STREAM_SLOTS say). Default: false.
  virtual bool streamsSlot() const { return false; }
  /// For a connection driven by GPU kernels: where a kernel finds it; nullptr for host connections.
  virtual const DeviceEnd* deviceEnd() const { return nullptr; }
};

/// Receiving end of a connection. Used by one thread at a time.
class RecvConnection {
 public:
  virtual ~RecvConnection() = default;
  /// Non-blocking. Sets *data/*bytes to the oldest posted slot of `kind` (the kind its sender
  /// used), or *data to nullptr if none yet. Calling it again before releaseSlot returns the same
  /// slot.
  virtual Status tryPeekSlot(const void** data, size_t* bytes, SlotKind kind) = 0;
  /// Returns the peeked slot to the sender. Non-blocking.
  virtual Status releaseSlot() = 0;
  /// Non-blocking. Moves on the end's own work without taking a slot (ib: finishing its setup,
  /// which lets the sender start). Callers call it on every receiving end they will use while
  /// they wait, so that no sender waits on an end that nobody peeks yet. Default: nothing to do.
  virtual Status progress() { return Status::ok(); }
  /// True for an end that lets its sender write only where it was told, piece by piece (ib): its
  /// user must announce every piece through expectLandings before peeking it.
  virtual bool takesLandings() const { return false; }
  /// Announces, in order, the pieces that come after those announced so far (which may not have
  /// arrived yet). Only pieces the sender will send: the n-th piece announced lands where the
  /// n-th announcement says. A piece that landed in its `dst` is peeked there.
  virtual Status expectLandings(std::span<const Landing> /*landings*/) { return Status::ok(); }
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
  /// Bytes of each of the slotCount slots of the LL ring (a multiple of 64, at most 2 slotBytes; 0:
  /// no LL ring, LL pieces take Simple slots). Transports without an LL ring ignore it.
  size_t llSlotBytes = 0;
  /// The network device this channel uses at this end, as an index into the transport's
  /// netDevices(): chosen by the topology layer (src/core/channel_nics.h). -1: the transport
  /// chooses. Transports without network devices ignore it.
  int netDevice = -1;
  /// GPU transports (which need it): the stream (a non-blocking cudaStream_t) on which they prepare
  /// a new end's GPU memory and wait for it. One per communicator keeps a process's streams few:
  /// streams share CUDA's hardware queues once there are more of them than queues, and a shared
  /// queue can hold one rank's kernel behind another's (src/device/hardware_queues.h).
  void* gpuSetupStream = nullptr;
};

/// A device a network transport sends through (an ib port, a socket transport's interface), where
/// the topology layer finds it: the PCI function it sits on, or its names.
struct NetDevice {
  std::string name;       // "mlx5_0:1", "rxe0:1", "eth0"
  std::string device;     // "mlx5_0", "rxe0", "eth0": the name hwloc and NCCL's topology files give it
  std::string netdev;     // the network interface it carries ("eth0"), where it has one
  std::string pciBusId;   // "0000:3b:00.0" (lower case): its PCI function, or its netdev's; empty: none
};

class Transport {
 public:
  virtual ~Transport() = default;
  /// "shm", "socket", ... as NCCL names them in logs.
  virtual const char* name() const = 0;
  /// True if this transport can connect `self` and `peer` (e.g. shm: same host and shm folder).
  virtual bool canConnect(const PeerInfo& self, const PeerInfo& peer) const = 0;
  /// The devices this process may send through, in the order ConnectionParams::netDevice indexes
  /// them; empty for transports that are not networks of several devices.
  virtual std::vector<NetDevice> netDevices() const { return {}; }
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
