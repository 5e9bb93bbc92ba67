// The unique id, and how a rank joins: listen, tell the root, receive everyone's address.
#include "src/core/bootstrap.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <vector>

#include "src/base/knobs.h"
#include "src/base/log.h"
#include "src/base/socket.h"
#include "src/core/bootstrap_root.h"
#include "src/core/bootstrap_socket.h"
#include "src/core/bootstrap_wire.h"

namespace weft::core {
namespace {

/// The text behind the NCCL_COMM_ID secret when WEFT_COMM_SECRET is unset.
constexpr const char* kDefaultCommSecret = "weft bootstrap: NCCL_COMM_ID without WEFT_COMM_SECRET";

Status commIdContents(const std::string& commId, wire::IdContents* out) {
  wire::IdContents contents;
  contents.kind = wire::IdKind::kCommId;
  WEFT_RETURN_IF_ERROR(net::SocketAddress::parse(commId, &contents.root).withContext("NCCL_COMM_ID"));
  if (contents.root.port() == 0) {
    return invalidArgument("NCCL_COMM_ID=%s has port 0: give the port where rank 0 hosts the bootstrap root",
                           commId.c_str());
  }
  std::string secret = knobs::getString(knobs::KnobId::kCommSecret);
  contents.secret = wire::secretFromText(secret.empty() ? kDefaultCommSecret : secret);
  *out = contents;
  return Status::ok();
}

/// Receives the root's welcome, which says that a bootstrap root has admitted this rank's hello.
/// Whatever answers at the root's address must send it within WEFT_SOCKET_CONNECT_TIMEOUT plus
/// WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT seconds (a root whose every slot is held by silent strangers
/// hears the rank once one of them times out): a process there that is no root (another
/// program's socket, a port taken before rank 0 listened) would otherwise hold this rank for ever,
/// since waiting for the table has no deadline.
Status awaitWelcome(net::Socket* socket, int rank, int nranks, const std::string& root, const WaitContext& context) {
  const int64_t limitSeconds = std::max<int64_t>(1, knobs::getInt(knobs::KnobId::kSocketConnectTimeout)) +
                               std::max<int64_t>(1, knobs::getInt(knobs::KnobId::kBootstrapHandshakeTimeout));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limitSeconds);
  std::array<uint8_t, wire::kWelcomeBytes> welcome{};
  size_t got = 0;
  Waiter waiter(&context);
  while (got < welcome.size()) {
    const size_t before = got;
    WEFT_RETURN_IF_ERROR(socket->tryRecv(welcome.data(), welcome.size(), &got));
    if (got > before) {
      waiter.progressed();
      continue;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return remoteError("what answers at %s sent no welcome within %lld s (WEFT_SOCKET_CONNECT_TIMEOUT plus "
                         "WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT): it is not the bootstrap root, or the root is stuck. "
                         "Check NCCL_COMM_ID, and that rank 0 runs and hosts the root there",
                         root.c_str(), static_cast<long long>(limitSeconds));
    }
    WEFT_RETURN_IF_ERROR(waiter.idle());
  }
  return wire::parseWelcome(welcome, static_cast<uint32_t>(rank), static_cast<uint32_t>(nranks))
      .withContext("from " + root + ", which is not a bootstrap root of this Weft build");
}

/// Sends this rank's hello to the root and receives the table of every rank's listen address.
Status joinRoot(const wire::IdContents& id, int rank, int nranks, const net::SocketAddress& listenAddress,
                const WaitContext& context, std::vector<net::SocketAddress>* peers) {
  const std::string root = id.root.toString();
  net::Socket socket;
  WEFT_RETURN_IF_ERROR(
      net::Socket::connect(id.root, context, &socket)
          .withContext("rank " + std::to_string(rank) + " cannot reach the bootstrap root at " + root));
  auto hello = wire::encodeRootHello(
      {id.secret, static_cast<uint32_t>(rank), static_cast<uint32_t>(nranks), listenAddress});
  WEFT_RETURN_IF_ERROR(socket.sendAll(hello.data(), hello.size(), context)
                           .withContext("rank " + std::to_string(rank) + " joining the bootstrap root at " + root));

  const std::string rejected =
      "rank " + std::to_string(rank) + " waiting for the rank table from the bootstrap root at " + root +
      " (if the root closed the connection, it rejected this rank or gave up waiting for the other ranks: see its "
      "WARN; all ranks need the same unique id, the same nranks and distinct ranks)";
  WEFT_RETURN_IF_ERROR(awaitWelcome(&socket, rank, nranks, root, context).withContext(rejected));
  std::array<uint8_t, wire::kTableHeaderBytes> header{};
  WEFT_RETURN_IF_ERROR(socket.recvAll(header.data(), header.size(), context).withContext(rejected));
  WEFT_RETURN_IF_ERROR(
      wire::parseTableHeader(header, static_cast<uint32_t>(nranks)).withContext("from the bootstrap root at " + root));
  std::vector<uint8_t> table(static_cast<size_t>(nranks) * wire::kAddressBytes);
  WEFT_RETURN_IF_ERROR(socket.recvAll(table.data(), table.size(), context).withContext(rejected));
  peers->assign(nranks, net::SocketAddress());
  for (int r = 0; r < nranks; ++r) {
    std::span<const uint8_t> entry(table.data() + static_cast<size_t>(r) * wire::kAddressBytes, wire::kAddressBytes);
    WEFT_RETURN_IF_ERROR(wire::parseAddress(entry, &(*peers)[r])
                             .withContext("rank table entry " + std::to_string(r) + " from the root at " + root));
  }
  if ((*peers)[rank].toString() != listenAddress.toString()) {
    return internalError("the bootstrap root at %s lists rank %d at %s, but it listens on %s", root.c_str(), rank,
                         (*peers)[rank].toString().c_str(), listenAddress.toString().c_str());
  }
  return Status::ok();
}

}  // namespace

Status createUniqueId(UniqueId* id, RootPlacement placement) {
  wire::IdContents contents;
  std::string commId =
      placement == RootPlacement::kFromEnvironment ? knobs::getString(knobs::KnobId::kCommId) : std::string();
  if (!commId.empty()) {
    WEFT_RETURN_IF_ERROR(commIdContents(commId, &contents));
    wire::encodeUniqueId(contents, id);
    WEFT_INFO(log::kBootstrap, "unique id for NCCL_COMM_ID=%s: rank 0 will host the bootstrap root",
              contents.root.toString().c_str());
    return Status::ok();
  }
  std::vector<net::NetInterface> interfaces;
  WEFT_RETURN_IF_ERROR(net::findInterfaces(&interfaces).withContext("choosing the bootstrap root's interface"));
  net::Socket listener;
  WEFT_RETURN_IF_ERROR(net::Socket::listen(interfaces.front().address, &listener));
  contents.kind = wire::IdKind::kRootInProcess;
  contents.root = listener.localAddress();
  WEFT_RETURN_IF_ERROR(wire::randomSecret(&contents.secret));
  WEFT_RETURN_IF_ERROR(startBootstrapRoot(std::move(listener), contents.secret));
  wire::encodeUniqueId(contents, id);
  WEFT_INFO(log::kBootstrap, "unique id: bootstrap root on %s (interface %s)", contents.root.toString().c_str(),
            interfaces.front().name.c_str());
  return Status::ok();
}

Status Bootstrap::create(const UniqueId& id, int rank, int nranks, const WaitContext* context,
                         std::unique_ptr<Bootstrap>* out) {
  if (context == nullptr) return invalidArgument("Bootstrap::create needs a WaitContext");
  if (nranks < 1 || static_cast<uint32_t>(nranks) > wire::kMaxRanks) {
    return invalidArgument("nranks %d is not in [1, %u]", nranks, wire::kMaxRanks);
  }
  if (rank < 0 || rank >= nranks) return invalidArgument("rank %d is not in [0, %d)", rank, nranks);
  wire::IdContents contents;
  WEFT_RETURN_IF_ERROR(wire::parseUniqueId(id, &contents));

  if (contents.kind == wire::IdKind::kCommId && rank == 0) {
    net::Socket rootListener;
    WEFT_RETURN_IF_ERROR(net::Socket::listen(contents.root, &rootListener)
                             .withContext("rank 0 hosting the bootstrap root of NCCL_COMM_ID"));
    WEFT_RETURN_IF_ERROR(startBootstrapRoot(std::move(rootListener), contents.secret));
  }

  net::NetInterface interface;
  WEFT_RETURN_IF_ERROR(net::findInterfaceFor(contents.root, &interface)
                           .withContext("choosing the bootstrap interface of rank " + std::to_string(rank)));
  net::Socket listener;
  WEFT_RETURN_IF_ERROR(net::Socket::listen(interface.address, &listener));
  const net::SocketAddress listenAddress = listener.localAddress();

  std::vector<net::SocketAddress> peers;
  WEFT_RETURN_IF_ERROR(joinRoot(contents, rank, nranks, listenAddress, *context, &peers));
  WEFT_INFO(log::kBootstrap, "bootstrap rank %d of %d: listening on %s (interface %s), root %s", rank, nranks,
            listenAddress.toString().c_str(), interface.name.c_str(), contents.root.toString().c_str());
  *out = std::make_unique<SocketBootstrap>(rank, nranks, context, contents.secret, std::move(listener),
                                           std::move(peers));
  return Status::ok();
}

}  // namespace weft::core
