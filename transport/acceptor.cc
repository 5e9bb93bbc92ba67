#include "transport/acceptor.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "src/base/knobs.h"
#include "src/base/log.h"
#include "src/base/wait.h"

namespace weft::transport {
namespace {

// Connections still to present their handshake, at most; each holds a descriptor. When a new one
// arrives at the limit, the one that has waited longest is closed: the real sender writes its
// handshake as soon as it connects, so a crowd of silent strangers cannot shut it out.
constexpr size_t kMaxPending = 64;

}  // namespace

Status listeningInterface(const char* transportName, const ConnectionParams& params, int choice,
                          net::NetInterface* out) {
  std::vector<net::NetInterface> interfaces;
  WEFT_RETURN_IF_ERROR(net::findInterfaces(&interfaces));
  if (interfaces.empty()) {
    return systemError("%s transport: no network interface to listen on for rank %d (channel %d); check "
                       "NCCL_SOCKET_IFNAME and NCCL_SOCKET_FAMILY",
                       transportName, params.peer.rank, params.channel);
  }
  *out = interfaces[static_cast<size_t>(std::max(choice, 0)) % interfaces.size()];
  return Status::ok();
}

Status Acceptor::open(const char* transportName, const ConnectionParams& params, const net::NetInterface& on,
                      std::unique_ptr<Acceptor>* acceptor, net::SocketAddress* address, uint64_t* nonce) {
  net::SocketAddress local = on.address;
  local.setPort(0);
  net::Socket listener;
  Status status = net::Socket::listen(local, &listener);
  if (!status.isOk()) {
    return status.withContext(std::string(transportName) + " transport: listening on " + on.name + " (" +
                              local.toString() + ") for rank " + std::to_string(params.peer.rank));
  }
  for (size_t got = 0; got < sizeof(*nonce);) {
    const ssize_t n = getrandom(reinterpret_cast<uint8_t*>(nonce) + got, sizeof(*nonce) - got, 0);
    if (n < 0 && errno != EINTR) {
      return errnoStatus(errno, "%s transport: getrandom for a connection nonce", transportName);
    }
    if (n > 0) got += static_cast<size_t>(n);
  }
  *address = listener.localAddress();
  const double handshakeTimeout = static_cast<double>(knobs::getInt(knobs::KnobId::kBootstrapHandshakeTimeout));
  acceptor->reset(new Acceptor(transportName, std::move(listener), makeHandshake(params.peer.rank, *nonce, params),
                               handshakeTimeout, params.peer.rank, params.peer.hostname));
  return Status::ok();
}

Status connectToReceiver(const char* transportName, const ConnectionParams& params, const net::SocketAddress& address,
                         uint64_t nonce, std::span<const uint8_t> payload, net::Socket* socket) {
  const std::string where = "rank " + std::to_string(params.peer.rank) + " on host " + params.peer.hostname + " at " +
                            address.toString() + ", channel " + std::to_string(params.channel);
  WaitContext context;
  context.timeoutSeconds = defaultTimeoutSeconds();
  context.what = std::string("the ") + transportName + " connection to " + where;
  Status status = net::Socket::connect(address, context, socket);
  if (!status.isOk()) return status.withContext(std::string(transportName) + " transport: connecting to " + where);
  std::vector<uint8_t> message(sizeof(Handshake) + payload.size());
  const Handshake handshake = makeHandshake(params.self.rank, nonce, params);
  memcpy(message.data(), &handshake, sizeof(Handshake));
  if (!payload.empty()) memcpy(message.data() + sizeof(Handshake), payload.data(), payload.size());
  status = socket->sendAll(message.data(), message.size(), context);
  if (!status.isOk()) {
    return status.withContext(std::string(transportName) + " transport: sending the handshake to " + where);
  }
  return Status::ok();
}

Acceptor::Acceptor(const char* transportName, net::Socket listener, const Handshake& expected,
                   double handshakeTimeoutSeconds, int peerRank, std::string peerHost)
    : transportName_(transportName),
      listener_(std::move(listener)),
      address_(listener_.localAddress()),
      expected_(expected),
      handshakeTimeout_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(handshakeTimeoutSeconds))),
      peerRank_(peerRank),
      peerHost_(std::move(peerHost)) {}

Status Acceptor::tryAccept(net::Socket* sender) {
  sender->close();
  if (!listener_.valid()) return internalError("%s transport: tryAccept called after the sender was accepted", transportName_);
  auto now = std::chrono::steady_clock::now();
  // Each new connection is heard as soon as it is accepted: a sender with strangers queued behind
  // it is recognised before they can push it out.
  while (true) {
    net::Socket accepted;
    Status status = listener_.tryAccept(&accepted);
    if (!status.isOk()) {
      return status.withContext(std::string(transportName_) + " transport: listening at " + address_.toString() + " for rank " +
                                std::to_string(peerRank_) + " on host " + peerHost_);
    }
    if (!accepted.valid()) break;
    Pending pending{std::move(accepted), Handshake{}, 0, now + handshakeTimeout_};
    const Heard heard = hear(&pending, now);
    if (heard == Heard::kSender) return admit(&pending, sender);
    if (heard == Heard::kStranger) continue;
    if (pending_.size() >= kMaxPending) {
      const Pending& oldest = pending_.front();
      WEFT_WARN("%s transport: closed a connection from %s to %s (waiting for rank %d on host %s): it had not "
                "presented its handshake and %zu connections are waiting to; still waiting for rank %d. Check what "
                "else connects to this host", transportName_,
                oldest.socket.peerAddress().toString().c_str(), address_.toString().c_str(), peerRank_,
                peerHost_.c_str(), pending_.size(), peerRank_);
      pending_.erase(pending_.begin());
    }
    pending_.push_back(std::move(pending));
  }
  for (size_t i = 0; i < pending_.size();) {
    const Heard heard = hear(&pending_[i], now);
    if (heard == Heard::kSender) return admit(&pending_[i], sender);
    if (heard == Heard::kStranger) {
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  return Status::ok();
}

Status Acceptor::admit(Pending* pending, net::Socket* sender) {
  *sender = std::move(pending->socket);
  size_t others = 0;
  for (const Pending& other : pending_) others += other.socket.valid() ? 1 : 0;
  if (others > 0) {
    WEFT_WARN("%s transport: rank %d on host %s connected to %s; closed %zu other connections that had not "
              "presented a handshake. Check what else connects to this host", transportName_,
              peerRank_, peerHost_.c_str(), address_.toString().c_str(), others);
  }
  pending_.clear();
  listener_.close();
  return Status::ok();
}

Acceptor::Heard Acceptor::hear(Pending* pending, std::chrono::steady_clock::time_point now) {
  const char* why = nullptr;
  Status status = pending->socket.tryRecv(&pending->received, sizeof(Handshake), &pending->receivedBytes);
  if (!status.isOk()) {
    WEFT_WARN("%s transport: dropped a connection from %s to %s (waiting for rank %d on host %s): it failed "
              "before presenting its handshake (%s); still waiting for rank %d", transportName_,
              pending->socket.peerAddress().toString().c_str(), address_.toString().c_str(), peerRank_,
              peerHost_.c_str(), status.message().c_str(),
              peerRank_);
    return Heard::kStranger;
  }
  if (pending->receivedBytes == sizeof(Handshake)) {
    const Handshake& got = pending->received;
    if (handshakeMatches(got, expected_)) return Heard::kSender;
    why = got.magic == kHandshakeMagic ? "it presented the handshake of another connection (wrong rank, communicator, "
                                    "channel or nonce: a process of an earlier or other job?)"
                                  : "it sent bytes that are not a Weft transport handshake";
  } else if (now >= pending->deadline) {
    why = "it did not present a handshake within WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT";
  } else {
    return Heard::kNotYet;
  }
  WEFT_WARN("%s transport: closed a connection from %s to %s (waiting for rank %d on host %s): %s; still "
            "waiting for rank %d. If this repeats, check what else connects to this host's ports", transportName_,
            pending->socket.peerAddress().toString().c_str(), address_.toString().c_str(), peerRank_,
            peerHost_.c_str(), why, peerRank_);
  return Heard::kStranger;
}

}  // namespace weft::transport
