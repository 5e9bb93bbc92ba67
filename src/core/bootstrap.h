#pragma once
// The bootstrap: how the ranks of a communicator first find each other, before any transport.
//
// ncclGetUniqueId starts a root listener (on the interface of NCCL_SOCKET_IFNAME) and returns an id
// holding its address and a random secret. Each rank listens on its own port, connects to the root,
// presents the secret and its address, and is welcomed at once (a rank that gets no welcome has
// reached something other than the root, and fails after WEFT_SOCKET_CONNECT_TIMEOUT plus
// WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT seconds); once all ranks have joined, the root sends everyone the
// table of addresses and its thread ends. Ranks then exchange messages directly, each connection
// opened with the secret; connections that do not present it are dropped without disturbing init.
// With NCCL_COMM_ID=host:port, rank 0 hosts the root there and the secret is WEFT_COMM_SECRET, or
// a fixed value (that mode rejects garbage, not an informed attacker).

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "src/base/socket.h"
#include "src/base/status.h"
#include "src/base/wait.h"

namespace weft::core {

/// The 128 bytes of an ncclUniqueId.
struct UniqueId {
  std::array<uint8_t, 128> bytes{};
};

/// Where the root of a new id lives.
enum class RootPlacement {
  kFromEnvironment,  // NCCL_COMM_ID if set (rank 0 will host the root there), else this process
  kThisProcess,      // always this process (communicators made from others, e.g. by a split)
};

/// Fills `id` for a new communicator. With the root in this process, it starts the root listener
/// thread (which ends once every rank has joined, or at process exit); with NCCL_COMM_ID it only
/// encodes that address.
Status createUniqueId(UniqueId* id, RootPlacement placement = RootPlacement::kFromEnvironment);

/// One rank's bootstrap network. Used by one thread at a time.
class Bootstrap {
 public:
  virtual ~Bootstrap() = default;

  /// Tags from this value up are the Bootstrap's own (allGather, barrier); send and recv take
  /// tags below it. The communicator layer numbers its messages (transport blobs, ...) from 0 up.
  static constexpr uint32_t kFirstReservedTag = 0xFFFF0000u;

  /// Joins the communicator of `nranks` described by `id` as `rank`. Blocks until every rank has
  /// joined; waits through `context` (which must outlive the Bootstrap).
  static Status create(const UniqueId& id, int rank, int nranks, const WaitContext* context,
                       std::unique_ptr<Bootstrap>* out);

  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  /// Where this rank accepts bootstrap connections: its interface's address (and port).
  virtual net::SocketAddress listenAddress() const = 0;

  /// Sends `size` bytes to `peer` under `tag`. Does not wait for the peer to receive (messages of
  /// init size are buffered by the kernel).
  virtual Status send(int peer, uint32_t tag, const void* data, size_t size) = 0;
  /// Receives the next message from `peer` under `tag`, which must be exactly `size` bytes (a
  /// different size is an error naming both). Messages under other tags are kept for later.
  virtual Status recv(int peer, uint32_t tag, void* data, size_t size) = 0;
  /// `data` holds nranks blocks of `bytesPerRank`; this rank's block is filled on entry and every
  /// block on return.
  virtual Status allGather(void* data, size_t bytesPerRank) = 0;
  virtual Status barrier() = 0;
};

}  // namespace weft::core
