#include "transport/socket/transport.h"

#include <sys/random.h>

#include <cerrno>
#include <utility>
#include <vector>

#include "src/base/knobs.h"
#include "src/base/log.h"
#include "src/base/socket.h"
#include "src/base/wait.h"
#include "transport/acceptor.h"
#include "transport/socket/connection.h"
#include "transport/socket/wire.h"

namespace weft::transport::socket {
namespace {

Status checkParams(const ConnectionParams& params, const char* side) {
  if (params.slotBytes == 0 || params.slotCount <= 0) {
    return invalidArgument("socket transport %s (rank %d, peer rank %d, channel %d): %d slots of %zu bytes; both "
                           "must be positive",
                           side, params.self.rank, params.peer.rank, params.channel, params.slotCount,
                           params.slotBytes);
  }
  return Status::ok();
}

Status randomNonce(uint64_t* nonce) {
  size_t got = 0;
  while (got < sizeof(*nonce)) {
    ssize_t n = getrandom(reinterpret_cast<uint8_t*>(nonce) + got, sizeof(*nonce) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errnoStatus(errno, "socket transport: getrandom for a connection nonce");
    }
    got += static_cast<size_t>(n);
  }
  return Status::ok();
}

class SocketTransport final : public Transport {
 public:
  const char* name() const override { return "socket"; }

  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override { return true; }

  Status listen(const ConnectionParams& params, std::unique_ptr<RecvConnection>* connection,
                std::vector<uint8_t>* blob) override {
    WEFT_RETURN_IF_ERROR(checkParams(params, "listen"));
    std::vector<net::NetInterface> interfaces;
    WEFT_RETURN_IF_ERROR(net::findInterfaces(&interfaces));
    if (interfaces.empty()) {
      return systemError("socket transport: no network interface to listen on for rank %d (channel %d); check "
                         "NCCL_SOCKET_IFNAME and NCCL_SOCKET_FAMILY",
                         params.peer.rank, params.channel);
    }
    net::SocketAddress address = interfaces.front().address;
    address.setPort(0);
    net::Socket listener;
    Status status = net::Socket::listen(address, &listener);
    if (!status.isOk()) {
      return status.withContext("socket transport: listening on " + interfaces.front().name + " (" +
                                address.toString() + ") for rank " + std::to_string(params.peer.rank));
    }
    ListenBlob published;
    published.receiverRank = params.self.rank;
    WEFT_RETURN_IF_ERROR(randomNonce(&published.nonce));
    published.commHash = params.commHash;
    published.channel = params.channel;
    published.address = listener.localAddress();

    const Handshake expected = makeHandshake(params.peer.rank, published.nonce, params);
    double handshakeTimeout =
        static_cast<double>(knobs::getInt(knobs::KnobId::kBootstrapHandshakeTimeout));
    auto acceptor = std::make_unique<Acceptor>(name(), std::move(listener), expected, handshakeTimeout, params.peer.rank,
                                               params.peer.hostname);
    std::unique_ptr<SocketRecvConnection> created;
    WEFT_RETURN_IF_ERROR(SocketRecvConnection::create(params, std::move(acceptor), &created));
    encodeBlob(published, blob);
    *connection = std::move(created);
    return Status::ok();
  }

  Status connect(const ConnectionParams& params, std::span<const uint8_t> blob,
                 std::unique_ptr<SendConnection>* connection) override {
    WEFT_RETURN_IF_ERROR(checkParams(params, "connect"));
    ListenBlob published;
    WEFT_RETURN_IF_ERROR(decodeBlob(blob, params, &published));
    std::string where = "rank " + std::to_string(params.peer.rank) + " on host " + params.peer.hostname + " at " +
                        published.address.toString() + ", channel " + std::to_string(params.channel);
    WaitContext context;
    context.timeoutSeconds = defaultTimeoutSeconds();
    context.what = "the socket connection to " + where;
    net::Socket socket;
    Status status = net::Socket::connect(published.address, context, &socket);
    if (!status.isOk()) return status.withContext("socket transport: connecting to " + where);

    const Handshake handshake = makeHandshake(params.self.rank, published.nonce, params);
    // 40 bytes on a fresh connection: the kernel's buffer takes them at once, whatever the receiver does.
    status = socket.sendAll(&handshake, sizeof(handshake), context);
    if (!status.isOk()) return status.withContext("socket transport: sending the handshake to " + where);
    WEFT_INFO(log::kNet, "Channel %02d : sending to rank %d (host %s) over socket %s -> %s", params.channel,
              params.peer.rank, params.peer.hostname, socket.localAddress().toString().c_str(),
              published.address.toString().c_str());

    std::unique_ptr<SocketSendConnection> created;
    WEFT_RETURN_IF_ERROR(SocketSendConnection::create(params, std::move(socket), &created));
    *connection = std::move(created);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Transport> makeSocketTransport() { return std::make_unique<SocketTransport>(); }

}  // namespace weft::transport::socket
