#include "transport/socket/connection.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "src/base/log.h"
#include "transport/socket/wire.h"

namespace weft::transport::socket {
namespace {

// Up to this many frames (two iovecs each) leave in one sendmsg.
constexpr int kMaxSendIovecs = 64;
// What the receiver reads past the current frame in one call: many small frames at once.
constexpr size_t kStagingBytes = 64 * 1024;

// errno values that mean the peer, or the path to it, is gone.
bool isConnectionLost(int err) {
  return err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ETIMEDOUT || err == ECONNABORTED ||
         err == EHOSTUNREACH || err == ENETUNREACH;
}

}  // namespace

// ---- SocketSendConnection ----

SocketSendConnection::SocketSendConnection(const ConnectionParams& params, net::Socket socket)
    : socket_(std::move(socket)),
      slotBytes_(params.slotBytes),
      slotCount_(static_cast<uint64_t>(params.slotCount)),
      peerRank_(params.peer.rank),
      peerHost_(params.peer.hostname),
      channel_(params.channel),
      headers_(static_cast<size_t>(params.slotCount), 0) {}

Status SocketSendConnection::create(const ConnectionParams& params, net::Socket socket,
                                    std::unique_ptr<SocketSendConnection>* connection) {
  std::unique_ptr<SocketSendConnection> created(new SocketSendConnection(params, std::move(socket)));
  WEFT_RETURN_IF_ERROR(
      allocateSlotMemory(params.slotBytes * static_cast<size_t>(params.slotCount), "socket send slots", &created->slots_));
  *connection = std::move(created);
  return Status::ok();
}

Status SocketSendConnection::fail(Status status) {
  if (!status.isOk() && error_.isOk()) error_ = status;
  return status;
}

Status SocketSendConnection::peerClosed(int err) const {
  return remoteError("rank %d on host %s (%s) closed the connection of channel %d (%s): it may have exited or "
                     "crashed; look for its own error first",
                     peerRank_, peerHost_.c_str(), socket_.peerAddress().toString().c_str(), channel_,
                     strerror(err));
}

Status SocketSendConnection::tryAcquireSlot(void** slot, SlotKind /*kind: no LL ring*/) {
  *slot = nullptr;
  if (!error_.isOk()) return error_;
  if (sent_ < posted_) WEFT_RETURN_IF_ERROR(fail(pushFrames()));
  if (posted_ - sent_ < slotCount_) *slot = slotAt(posted_);
  return Status::ok();
}

Status SocketSendConnection::postSlot(size_t bytes) {
  if (!error_.isOk()) return error_;
  if (bytes > slotBytes_) {
    return invalidUsage("socket transport: posted %zu bytes in a slot of %zu bytes (to rank %d, channel %d)", bytes,
                        slotBytes_, peerRank_, channel_);
  }
  if (posted_ - sent_ >= slotCount_) {
    return invalidUsage("socket transport: postSlot without a free slot (to rank %d, channel %d): call "
                        "tryAcquireSlot until it returns a slot",
                        peerRank_, channel_);
  }
  headers_[posted_ % slotCount_] = encodeFrameHeader(bytes);
  ++posted_;
  return fail(pushFrames());
}

Status SocketSendConnection::tryFlush(bool* done) {
  *done = false;
  if (!error_.isOk()) return error_;
  if (sent_ < posted_) WEFT_RETURN_IF_ERROR(fail(pushFrames()));
  *done = sent_ == posted_;
  return Status::ok();
}

Status SocketSendConnection::pushFrames() {
  while (sent_ < posted_) {
    iovec iov[kMaxSendIovecs];
    int count = 0;
    size_t wanted = 0;
    size_t skip = sentOfFrame_;
    for (uint64_t frame = sent_; frame < posted_ && count + 2 <= kMaxSendIovecs; ++frame) {
      uint64_t* header = &headers_[frame % slotCount_];
      size_t payload = decodeFrameHeader(*header);
      size_t payloadOffset = 0;
      if (skip < kFrameHeaderBytes) {
        iov[count++] = {reinterpret_cast<uint8_t*>(header) + skip, kFrameHeaderBytes - skip};
      } else {
        payloadOffset = skip - kFrameHeaderBytes;
      }
      if (payload > payloadOffset) iov[count++] = {slotAt(frame) + payloadOffset, payload - payloadOffset};
      wanted += kFrameHeaderBytes + payload - skip;
      skip = 0;
    }
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<size_t>(count);
    ssize_t written = sendmsg(socket_.fd(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) {
      int err = errno;
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) return Status::ok();
      if (isConnectionLost(err)) return peerClosed(err);
      return errnoStatus(err, "socket transport: sending to rank %d on host %s (%s), channel %d", peerRank_,
                         peerHost_.c_str(), socket_.peerAddress().toString().c_str(), channel_);
    }
    advance(static_cast<size_t>(written));
    // A short write means the kernel's buffer is full: asking again now would only fail.
    if (static_cast<size_t>(written) < wanted) return Status::ok();
  }
  return Status::ok();
}

void SocketSendConnection::advance(size_t bytes) {
  while (bytes > 0) {
    size_t frameLeft = kFrameHeaderBytes + decodeFrameHeader(headers_[sent_ % slotCount_]) - sentOfFrame_;
    if (bytes < frameLeft) {
      sentOfFrame_ += bytes;
      return;
    }
    bytes -= frameLeft;
    sentOfFrame_ = 0;
    ++sent_;
  }
}

// ---- SocketRecvConnection ----

SocketRecvConnection::SocketRecvConnection(const ConnectionParams& params, std::unique_ptr<Acceptor> acceptor)
    : acceptor_(std::move(acceptor)),
      slotBytes_(params.slotBytes),
      slotCount_(static_cast<uint64_t>(params.slotCount)),
      peerRank_(params.peer.rank),
      peerHost_(params.peer.hostname),
      channel_(params.channel),
      sizes_(static_cast<size_t>(params.slotCount), 0) {}

Status SocketRecvConnection::create(const ConnectionParams& params, std::unique_ptr<Acceptor> acceptor,
                                    std::unique_ptr<SocketRecvConnection>* connection) {
  std::unique_ptr<SocketRecvConnection> created(new SocketRecvConnection(params, std::move(acceptor)));
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(params.slotBytes * static_cast<size_t>(params.slotCount),
                                          "socket receive slots", &created->slots_));
  WEFT_RETURN_IF_ERROR(allocateSlotMemory(kStagingBytes, "socket receive staging", &created->staging_));
  *connection = std::move(created);
  return Status::ok();
}

Status SocketRecvConnection::peerClosed(int err) const {
  return remoteError("rank %d on host %s (%s) closed the connection of channel %d (%s): it may have exited or "
                     "crashed; look for its own error first",
                     peerRank_, peerHost_.c_str(), socket_.peerAddress().toString().c_str(), channel_,
                     err == 0 ? "end of stream" : strerror(err));
}

Status SocketRecvConnection::tryAcceptSender() {
  WEFT_RETURN_IF_ERROR(acceptor_->tryAccept(&socket_));
  if (!socket_.valid()) return Status::ok();
  WEFT_INFO(log::kNet, "Channel %02d : receiving from rank %d (host %s) over socket %s -> %s", channel_, peerRank_,
            peerHost_.c_str(), socket_.peerAddress().toString().c_str(), acceptor_->address().toString().c_str());
  acceptor_.reset();
  return Status::ok();
}

Status SocketRecvConnection::tryPeekSlot(const void** data, size_t* bytes, SlotKind /*kind: no LL ring*/) {
  *data = nullptr;
  *bytes = 0;
  if (complete_ == released_) {
    if (!error_.isOk()) return error_;
    if (!socket_.valid()) {
      Status status = tryAcceptSender();
      if (!status.isOk() || !socket_.valid()) return status;
    }
    Status status = receive();
    if (!status.isOk()) error_ = status;
    // Frames that arrived complete before a failure are still delivered; the failure comes next.
    if (complete_ == released_) return error_;
  }
  *data = slotAt(released_);
  *bytes = sizes_[released_ % slotCount_];
  return Status::ok();
}

Status SocketRecvConnection::releaseSlot() {
  if (complete_ == released_) {
    return invalidUsage("socket transport: releaseSlot without a peeked slot (from rank %d, channel %d)", peerRank_,
                        channel_);
  }
  ++released_;
  return Status::ok();
}

Status SocketRecvConnection::receive() {
  while (true) {
    WEFT_RETURN_IF_ERROR(consumeStaged());
    if (stagedBegin_ < stagedEnd_ || ringFull()) return Status::ok();
    iovec iov[2];
    int count = 0;
    if (headerBytes_ < kFrameHeaderBytes) {
      iov[count++] = {reinterpret_cast<uint8_t*>(&header_) + headerBytes_, kFrameHeaderBytes - headerBytes_};
    } else {
      iov[count++] = {slotAt(complete_) + payloadBytes_, frameBytes_ - payloadBytes_};
    }
    // Read past the current frame only when a slot is free for what follows.
    if (complete_ + 1 - released_ < slotCount_) iov[count++] = {staging_.get(), kStagingBytes};
    size_t wanted = iov[0].iov_len + (count > 1 ? iov[1].iov_len : 0);
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<size_t>(count);
    ssize_t got = recvmsg(socket_.fd(), &message, MSG_DONTWAIT);
    if (got < 0) {
      int err = errno;
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) return Status::ok();
      if (isConnectionLost(err)) return peerClosed(err);
      return errnoStatus(err, "socket transport: receiving from rank %d on host %s (%s), channel %d", peerRank_,
                         peerHost_.c_str(), socket_.peerAddress().toString().c_str(), channel_);
    }
    if (got == 0) return peerClosed(0);
    size_t direct = std::min(static_cast<size_t>(got), iov[0].iov_len);
    if (headerBytes_ < kFrameHeaderBytes) {
      headerBytes_ += direct;
      if (headerBytes_ == kFrameHeaderBytes) WEFT_RETURN_IF_ERROR(startFrame());
    } else {
      payloadBytes_ += direct;
      if (payloadBytes_ == frameBytes_) finishFrame();
    }
    stagedBegin_ = 0;
    stagedEnd_ = static_cast<size_t>(got) - direct;
    // A short read means the socket is drained for now.
    if (static_cast<size_t>(got) < wanted) return consumeStaged();
  }
}

Status SocketRecvConnection::consumeStaged() {
  while (stagedBegin_ < stagedEnd_ && !ringFull()) {
    const uint8_t* from = staging_.get() + stagedBegin_;
    size_t available = stagedEnd_ - stagedBegin_;
    if (headerBytes_ < kFrameHeaderBytes) {
      size_t take = std::min(available, kFrameHeaderBytes - headerBytes_);
      memcpy(reinterpret_cast<uint8_t*>(&header_) + headerBytes_, from, take);
      headerBytes_ += take;
      stagedBegin_ += take;
      if (headerBytes_ == kFrameHeaderBytes) WEFT_RETURN_IF_ERROR(startFrame());
    } else {
      size_t take = std::min(available, frameBytes_ - payloadBytes_);
      memcpy(slotAt(complete_) + payloadBytes_, from, take);
      payloadBytes_ += take;
      stagedBegin_ += take;
      if (payloadBytes_ == frameBytes_) finishFrame();
    }
  }
  return Status::ok();
}

Status SocketRecvConnection::startFrame() {
  uint64_t size = decodeFrameHeader(header_);
  if (size > slotBytes_) {
    return remoteError("corrupted stream from rank %d on host %s (%s), channel %d: a frame announces %llu bytes, "
                       "more than the %zu-byte slot; the ranks may run different builds of Weft, or something "
                       "else wrote to the connection",
                       peerRank_, peerHost_.c_str(), socket_.peerAddress().toString().c_str(), channel_,
                       static_cast<unsigned long long>(size), slotBytes_);
  }
  frameBytes_ = static_cast<size_t>(size);
  payloadBytes_ = 0;
  if (frameBytes_ == 0) finishFrame();
  return Status::ok();
}

void SocketRecvConnection::finishFrame() {
  sizes_[complete_ % slotCount_] = frameBytes_;
  ++complete_;
  headerBytes_ = 0;
  frameBytes_ = 0;
  payloadBytes_ = 0;
}

}  // namespace weft::transport::socket
