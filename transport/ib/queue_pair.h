#pragma once
// One reliable-connected queue pair of the ib transport, with its completion queue and the memory
// it registered, on a device that this process opens once (DeviceContext).

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "transport/ib/ports.h"
#include "transport/ib/verbs.h"
#include "transport/ib/wire.h"

namespace weft::transport::ib {

/// A verbs device opened by this process: its context and protection domain, shared by every
/// connection on it while any is alive.
class DeviceContext {
 public:
  /// The open device `port` belongs to, opening it if no connection holds it.
  static Status acquire(const IbPort& port, std::shared_ptr<DeviceContext>* device);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  const Verbs& verbs() const { return *verbs_; }
  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }

 private:
  DeviceContext() = default;
  const Verbs* verbs_ = nullptr;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
};

class QueuePair {
 public:
  /// Creates the queue pair on `port` (moved to INIT, ready for receives) with room for
  /// `sendDepth` outstanding sends and `recvDepth` receives. `peerDescription` ("rank 3 on host
  /// h, channel 0") names the other end in every error.
  static Status create(const IbPort& port, int sendDepth, int recvDepth, std::string peerDescription,
                       std::unique_ptr<QueuePair>* queuePair);
  ~QueuePair();
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;

  /// What the peer needs to connect to this queue pair.
  QueuePairAddress address() const;
  /// Moves the queue pair to RTR and RTS towards `remote`, with the smaller of the two ports'
  /// MTUs and NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT, NCCL_IB_SL, NCCL_IB_TC; RNR retry 7.
  Status connect(const QueuePairAddress& remote);

  /// Registers `bytes` at `memory` (released with the queue pair) with `access` flags.
  Status registerMemory(void* memory, size_t bytes, int access, ibv_mr** mr);
  /// Posts one signaled RDMA write of `bytes` from `local` (lkey) to `remote` (rkey); with
  /// `immediate`, a write-with-immediate carrying it (network byte order on the wire).
  Status postWrite(const void* local, uint32_t lkey, size_t bytes, uint64_t remote, uint32_t rkey,
                   const uint32_t* immediate);
  /// Posts a receive with no buffer: a write-with-immediate consumes it.
  Status postReceive();
  /// Polls the completion queue for up to `capacity` completions. An error completion fails with
  /// its status string, the device and the peer: kRemoteError when the peer or the path to it is
  /// gone (retries exhausted, remote access or operation errors), kSystemError otherwise.
  Status poll(ibv_wc* completions, int capacity, int* count);

  const std::string& peerDescription() const { return peerDescription_; }
  const IbPort& port() const { return port_; }
  /// The open device: memory registered in its protection domain serves every queue pair on it.
  const std::shared_ptr<DeviceContext>& device() const { return device_; }

 private:
  QueuePair() = default;
  Status modify(ibv_qp_attr* attr, int mask, const char* state);

  std::shared_ptr<DeviceContext> device_;
  IbPort port_;
  std::string peerDescription_;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  uint32_t psn_ = 0;
  std::vector<ibv_mr*> registrations_;
};

}  // namespace weft::transport::ib
