#pragma once
// The two ends of a socket connection: one TCP stream of frames (transport/socket/wire.h).
//
// The sender owns slotCount staging slots; a posted slot is written to the socket as one frame,
// header and payload in one sendmsg, and the slot is free again once the kernel has all of it.
// The receiver reads frames into its own ring of slotCount slots, reading ahead as far as its
// free slots allow. Neither end ever blocks: partial writes and reads are resumed by the next call.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/base/socket.h"
#include "src/base/status.h"
#include "transport/acceptor.h"
#include "transport/slot_memory.h"
#include "transport/transport.h"

namespace weft::transport::socket {

class SocketSendConnection final : public SendConnection {
 public:
  /// Takes `socket`, connected to the receiver (params.peer), its handshake already sent.
  static Status create(const ConnectionParams& params, net::Socket socket,
                       std::unique_ptr<SocketSendConnection>* connection);

  /// Also pushes pending frames to the kernel; a slot is free once its frame was fully handed over.
  Status tryAcquireSlot(void** slot, SlotKind kind) override;
  /// Queues the slot's frame and writes as much of it as the kernel takes now.
  Status postSlot(size_t bytes) override;
  Status tryFlush(bool* done) override;
  size_t slotBytes() const override { return slotBytes_; }

 private:
  SocketSendConnection(const ConnectionParams& params, net::Socket socket);
  uint8_t* slotAt(uint64_t frame) const { return slots_.get() + (frame % slotCount_) * slotBytes_; }
  // Writes pending frames until done or the kernel's buffer is full.
  Status pushFrames();
  // Advances the send position over `bytes` bytes the kernel took.
  void advance(size_t bytes);
  // Remembers the first failure: every later call returns it.
  Status fail(Status status);
  Status peerClosed(int err) const;

  net::Socket socket_;
  size_t slotBytes_;
  uint64_t slotCount_;
  int peerRank_;
  std::string peerHost_;
  int channel_;
  SlotMemory slots_;
  std::vector<uint64_t> headers_;  // per slot, the frame header in wire byte order
  uint64_t posted_ = 0;            // frames posted
  uint64_t sent_ = 0;              // frames fully handed to the kernel
  size_t sentOfFrame_ = 0;         // bytes (header included) of frame sent_ handed to the kernel
  Status error_;
};

class SocketRecvConnection final : public RecvConnection {
 public:
  /// The sender is accepted lazily, through `acceptor`, by tryPeekSlot.
  static Status create(const ConnectionParams& params, std::unique_ptr<Acceptor> acceptor,
                       std::unique_ptr<SocketRecvConnection>* connection);

  /// Until the sender is accepted, also listens for it (see Acceptor::tryAccept). When no
  /// complete frame is buffered, reads as much as the free slots allow.
  /// Fails with kRemoteError when the sender closed the connection or sent a corrupted stream,
  /// after every frame that arrived complete was returned.
  Status tryPeekSlot(const void** data, size_t* bytes, SlotKind kind) override;
  Status releaseSlot() override;
  size_t slotBytes() const override { return slotBytes_; }

 private:
  SocketRecvConnection(const ConnectionParams& params, std::unique_ptr<Acceptor> acceptor);
  uint8_t* slotAt(uint64_t frame) const { return slots_.get() + (frame % slotCount_) * slotBytes_; }
  bool ringFull() const { return complete_ - released_ >= slotCount_; }
  Status tryAcceptSender();
  // Reads frames from the socket until it has nothing more or the ring is full.
  Status receive();
  // Moves staged bytes into the ring while it has free slots.
  Status consumeStaged();
  // Header complete: checks it and starts the frame's payload.
  Status startFrame();
  void finishFrame();
  // err 0: an orderly end of stream.
  Status peerClosed(int err) const;

  std::unique_ptr<Acceptor> acceptor_;
  net::Socket socket_;
  size_t slotBytes_;
  uint64_t slotCount_;
  int peerRank_;
  std::string peerHost_;
  int channel_;
  SlotMemory slots_;
  std::vector<uint64_t> sizes_;  // per slot, the payload size of its frame
  uint64_t complete_ = 0;        // frames fully received
  uint64_t released_ = 0;        // frames released by the consumer
  uint64_t header_ = 0;          // the frame being received: its header (wire byte order),
  size_t headerBytes_ = 0;       // how much of the header arrived,
  size_t frameBytes_ = 0;        // its payload size once the header is complete,
  size_t payloadBytes_ = 0;      // and how much of the payload arrived
  SlotMemory staging_;           // bytes read past the current frame, not yet in a slot
  size_t stagedBegin_ = 0;
  size_t stagedEnd_ = 0;
  Status error_;
};

}  // namespace weft::transport::socket
