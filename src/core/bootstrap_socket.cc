#include "src/core/bootstrap_socket.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "src/base/knobs.h"
#include "src/base/log.h"

namespace weft::core {
namespace {

constexpr uint32_t kAllGatherTag = Bootstrap::kFirstReservedTag + 1;
constexpr uint32_t kBarrierTag = Bootstrap::kFirstReservedTag + 2;
/// Messages up to this size leave in one write with their frame header.
constexpr size_t kCoalesceBytes = 4096;

}  // namespace

SocketBootstrap::SocketBootstrap(int rank, int nranks, const WaitContext* context, const wire::Secret& secret,
                                 net::Socket listener, std::vector<net::SocketAddress> peers)
    : rank_(rank),
      nranks_(nranks),
      context_(context),
      secret_(secret),
      listener_(std::move(listener)),
      peers_(std::move(peers)),
      handshakeTimeout_(
          std::chrono::seconds(std::max<int64_t>(1, knobs::getInt(knobs::KnobId::kBootstrapHandshakeTimeout)))),
      outbound_(nranks),
      peerConnected_(nranks, false),
      peerClosed_(nranks, false) {}

std::string SocketBootstrap::describe(int peer) const {
  return "rank " + std::to_string(peer) + " (" + peers_[peer].toString() + ")";
}

Status SocketBootstrap::checkPeer(int peer, uint32_t tag, const char* what) const {
  if (peer < 0 || peer >= nranks_) {
    return invalidArgument("bootstrap %s: peer %d is not a rank in [0, %d)", what, peer, nranks_);
  }
  if (tag >= kFirstReservedTag) {
    return invalidArgument("bootstrap %s: tag 0x%x is reserved for the bootstrap itself (use tags below 0x%x)", what,
                           tag, kFirstReservedTag);
  }
  return Status::ok();
}

Status SocketBootstrap::send(int peer, uint32_t tag, const void* data, size_t size) {
  WEFT_RETURN_IF_ERROR(checkPeer(peer, tag, "send"));
  return sendTagged(peer, tag, data, size);
}

Status SocketBootstrap::recv(int peer, uint32_t tag, void* data, size_t size) {
  WEFT_RETURN_IF_ERROR(checkPeer(peer, tag, "recv"));
  return recvTagged(peer, tag, data, size);
}

Status SocketBootstrap::allGather(void* data, size_t bytesPerRank) {
  return allGatherTagged(data, bytesPerRank, kAllGatherTag);
}

Status SocketBootstrap::barrier() {
  // Rank r's token reaches every rank only after r entered the barrier.
  std::vector<uint8_t> tokens(nranks_, 1);
  return allGatherTagged(tokens.data(), 1, kBarrierTag);
}

// A ring: at step s every rank passes on the block it got at step s-1 (its own at step 0).
Status SocketBootstrap::allGatherTagged(void* data, size_t bytesPerRank, uint32_t tag) {
  if (nranks_ == 1 || bytesPerRank == 0) return Status::ok();
  auto* blocks = static_cast<uint8_t*>(data);
  const int next = (rank_ + 1) % nranks_;
  const int prev = (rank_ + nranks_ - 1) % nranks_;
  for (int step = 0; step < nranks_ - 1; ++step) {
    const int sendBlock = (rank_ - step + nranks_) % nranks_;
    const int recvBlock = (rank_ - step - 1 + nranks_) % nranks_;
    WEFT_RETURN_IF_ERROR(sendTagged(next, tag, blocks + sendBlock * bytesPerRank, bytesPerRank));
    WEFT_RETURN_IF_ERROR(recvTagged(prev, tag, blocks + recvBlock * bytesPerRank, bytesPerRank));
  }
  return Status::ok();
}

Status SocketBootstrap::sendTagged(int peer, uint32_t tag, const void* data, size_t size) {
  if (peer == rank_) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    queued_.push_back({peer, tag, std::vector<uint8_t>(bytes, bytes + size)});
    return Status::ok();
  }
  if (!outbound_[peer].valid()) WEFT_RETURN_IF_ERROR(connectTo(peer));
  auto header = wire::encodeFrameHeader({tag, size});
  if (size <= kCoalesceBytes) {
    uint8_t frame[wire::kFrameHeaderBytes + kCoalesceBytes];
    memcpy(frame, header.data(), header.size());
    if (size > 0) memcpy(frame + header.size(), data, size);
    return writeAll(peer, frame, header.size() + size);
  }
  WEFT_RETURN_IF_ERROR(writeAll(peer, header.data(), header.size()));
  return writeAll(peer, data, size);
}

Status SocketBootstrap::connectTo(int peer) {
  net::Socket socket;
  WEFT_RETURN_IF_ERROR(net::Socket::connect(peers_[peer], *context_, &socket)
                           .withContext("bootstrap: rank " + std::to_string(rank_) + " cannot reach " + describe(peer)));
  outbound_[peer] = std::move(socket);
  auto hello = wire::encodePeerHello({secret_, static_cast<uint32_t>(rank_), static_cast<uint32_t>(nranks_)});
  return writeAll(peer, hello.data(), hello.size());
}

Status SocketBootstrap::writeAll(int peer, const void* data, size_t size) {
  Waiter waiter(context_);
  size_t offset = 0;
  while (offset < size) {
    size_t before = offset;
    Status status = outbound_[peer].trySend(data, size, &offset);
    if (!status.isOk()) {
      outbound_[peer].close();
      return status.withContext("bootstrap send from rank " + std::to_string(rank_) + " to " + describe(peer));
    }
    if (offset == size) break;
    // The peer may itself be blocked sending to us: keep our side of the kernel buffers moving.
    bool progressed = offset > before;
    WEFT_RETURN_IF_ERROR(pumpInbound(&progressed));
    if (progressed) {
      waiter.progressed();
    } else {
      WEFT_RETURN_IF_ERROR(waiter.idle().withContext("bootstrap send to " + describe(peer)));
    }
  }
  return Status::ok();
}

Status SocketBootstrap::recvTagged(int peer, uint32_t tag, void* data, size_t size) {
  Waiter waiter(context_);
  Status status;
  while (true) {
    if (takeQueued(peer, tag, data, size, &status)) return status;
    bool progressed = false;
    WEFT_RETURN_IF_ERROR(pumpInbound(&progressed));
    if (takeQueued(peer, tag, data, size, &status)) return status;
    if (peerClosed_[peer]) {
      return remoteError("bootstrap recv on rank %d: %s closed its connection without sending the message under "
                         "tag 0x%x (%zu bytes): that rank exited, aborted or destroyed its communicator early",
                         rank_, describe(peer).c_str(), tag, size);
    }
    if (progressed) {
      waiter.progressed();
    } else {
      WEFT_RETURN_IF_ERROR(waiter.idle().withContext("bootstrap recv on rank " + std::to_string(rank_) + " from " +
                                                     describe(peer)));
    }
  }
}

bool SocketBootstrap::takeQueued(int peer, uint32_t tag, void* data, size_t size, Status* status) {
  auto found = std::find_if(queued_.begin(), queued_.end(),
                            [&](const Message& message) { return message.peer == peer && message.tag == tag; });
  if (found == queued_.end()) return false;
  if (found->data.size() != size) {
    *status = internalError("bootstrap recv on rank %d from %s under tag 0x%x: expected %zu bytes, the peer sent %zu; "
                            "both ranks must agree on the size of each message",
                            rank_, describe(peer).c_str(), tag, size, found->data.size());
  } else {
    if (size > 0) memcpy(data, found->data.data(), size);
    *status = Status::ok();
  }
  queued_.erase(found);
  return true;
}

Status SocketBootstrap::pumpInbound(bool* progressed) {
  while (true) {
    net::Socket socket;
    WEFT_RETURN_IF_ERROR(listener_.tryAccept(&socket).withContext("bootstrap listener of rank " +
                                                                  std::to_string(rank_)));
    if (!socket.valid()) break;
    Inbound in;
    in.address = socket.peerAddress().toString();
    in.socket = std::move(socket);
    in.deadline = Clock::now() + handshakeTimeout_;
    inbound_.push_back(std::move(in));
    *progressed = true;
  }
  const Clock::time_point now = Clock::now();
  for (size_t i = 0; i < inbound_.size();) {
    Inbound& in = inbound_[i];
    bool keep = true;
    if (in.peer < 0) readHello(&in, now, progressed, &keep);
    if (keep && in.peer >= 0) WEFT_RETURN_IF_ERROR(readFrames(&in, progressed, &keep));
    if (keep) {
      ++i;
    } else {
      inbound_.erase(inbound_.begin() + static_cast<ptrdiff_t>(i));
    }
  }
  return Status::ok();
}

void SocketBootstrap::readHello(Inbound* in, Clock::time_point now, bool* progressed, bool* keep) {
  size_t before = in->helloGot;
  Status status = in->socket.tryRecv(in->hello.data(), in->hello.size(), &in->helloGot);
  if (in->helloGot > before) *progressed = true;
  std::string why;
  wire::PeerHello hello;
  if (!status.isOk()) {
    why = status.message();
  } else if (in->helloGot < in->hello.size()) {
    if (now < in->deadline) return;
    why = "no complete hello within " + std::to_string(handshakeTimeout_.count()) +
          " s (WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT)";
  } else if (Status parsed = wire::parsePeerHello(in->hello, &hello); !parsed.isOk()) {
    why = "not a Weft bootstrap hello: " + parsed.message();
  } else if (!wire::secretsEqual(hello.secret, secret_)) {
    why = "it presented a wrong secret (another communicator's unique id?)";
  } else if (hello.nranks != static_cast<uint32_t>(nranks_) || static_cast<int>(hello.rank) == rank_) {
    why = "it claims to be rank " + std::to_string(hello.rank) + " of " + std::to_string(hello.nranks) +
          ", which is not a peer of rank " + std::to_string(rank_) + " of " + std::to_string(nranks_);
  } else if (peerConnected_[hello.rank]) {
    why = "rank " + std::to_string(hello.rank) + " is connected already";
  } else {
    in->peer = static_cast<int>(hello.rank);
    peerConnected_[in->peer] = true;
    WEFT_TRACE(log::kBootstrap, "bootstrap rank %d: %s connected from %s", rank_, describe(in->peer).c_str(),
               in->address.c_str());
    return;
  }
  WEFT_WARN("bootstrap rank %d: closed the connection from %s: %s. Only the ranks of this communicator should "
            "connect to %s", rank_, in->address.c_str(), why.c_str(), listener_.localAddress().toString().c_str());
  *keep = false;
}

Status SocketBootstrap::readFrames(Inbound* in, bool* progressed, bool* keep) {
  while (true) {
    Status status;
    if (!in->inPayload) {
      size_t before = in->headerGot;
      status = in->socket.tryRecv(in->header.data(), in->header.size(), &in->headerGot);
      if (in->headerGot > before) *progressed = true;
      if (!status.isOk() && in->headerGot == 0) {
        // The peer is done with us (it finished, or destroyed its Bootstrap): not an error unless
        // a recv still expects something from it.
        WEFT_TRACE(log::kBootstrap, "bootstrap rank %d: %s closed its connection", rank_, describe(in->peer).c_str());
        peerClosed_[in->peer] = true;
        *keep = false;
        return Status::ok();
      }
      if (status.isOk() && in->headerGot < in->header.size()) return Status::ok();
      if (status.isOk()) {
        wire::FrameHeader header;
        status = wire::parseFrameHeader(in->header, &header);
        if (status.isOk()) {
          in->tag = header.tag;
          in->payload.assign(header.size, 0);
          in->payloadGot = 0;
          in->inPayload = true;
        }
      }
    }
    if (status.isOk() && in->inPayload) {
      size_t before = in->payloadGot;
      status = in->socket.tryRecv(in->payload.data(), in->payload.size(), &in->payloadGot);
      if (in->payloadGot > before) *progressed = true;
      if (status.isOk() && in->payloadGot < in->payload.size()) return Status::ok();
      if (status.isOk()) {
        queued_.push_back({in->peer, in->tag, std::move(in->payload)});
        in->payload = {};
        in->inPayload = false;
        in->headerGot = 0;
        *progressed = true;
      }
    }
    if (!status.isOk()) {
      return makeStatus(StatusCode::kRemoteError, "bootstrap rank %d: the connection from %s broke inside a message: %s",
                        rank_, describe(in->peer).c_str(), status.message().c_str());
    }
  }
}

}  // namespace weft::core
