#include "transport/ib/queue_pair.h"

#include <arpa/inet.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "src/base/knobs.h"
#include "src/base/log.h"

namespace weft::transport::ib {
namespace {

// Open devices by name, for the process that opened them (a forked child opens its own).
struct OpenDevices {
  std::mutex mutex;
  pid_t pid = 0;
  std::map<std::string, std::weak_ptr<DeviceContext>> byName;
};

OpenDevices& openDevices() {
  static OpenDevices* devices = new OpenDevices;  // never destroyed: connections may outlive statics
  return *devices;
}

int knob(knobs::KnobId id, int low, int high) {
  return std::clamp(static_cast<int>(knobs::getInt(id)), low, high);
}

bool isRemoteFailure(ibv_wc_status status) {
  return status == IBV_WC_RETRY_EXC_ERR || status == IBV_WC_RNR_RETRY_EXC_ERR || status == IBV_WC_REM_ACCESS_ERR ||
         status == IBV_WC_REM_OP_ERR || status == IBV_WC_REM_INV_REQ_ERR || status == IBV_WC_REM_ABORT_ERR ||
         status == IBV_WC_WR_FLUSH_ERR;
}

}  // namespace

// ---- DeviceContext ----

Status DeviceContext::acquire(const IbPort& port, std::shared_ptr<DeviceContext>* device) {
  OpenDevices& open = openDevices();
  std::lock_guard lock(open.mutex);
  if (open.pid != getpid()) {
    open.byName.clear();  // inherited across fork: the parent's contexts are not ours
    open.pid = getpid();
  }
  if ((*device = open.byName[port.device].lock())) return Status::ok();
  const Verbs* verbs = nullptr;
  WEFT_RETURN_IF_ERROR(loadVerbs(&verbs));
  int count = 0;
  ibv_device** list = verbs->getDeviceList(&count);
  std::shared_ptr<DeviceContext> created(new DeviceContext);
  created->verbs_ = verbs;
  bool listed = false;
  int err = 0;
  for (int d = 0; list != nullptr && d < count && !listed; ++d) {
    if (port.device != verbs->getDeviceName(list[d])) continue;
    listed = true;
    created->context_ = verbs->openDevice(list[d]);
    err = errno;
  }
  if (list != nullptr) verbs->freeDeviceList(list);
  if (!listed) {
    return systemError("ib transport: device %s is no longer listed by libibverbs (removed, or its driver "
                       "unloaded)",
                       port.device.c_str());
  }
  if (created->context_ == nullptr) {
    return systemError("ib transport: cannot open device %s (%s)", port.device.c_str(), strerror(err));
  }
  created->pd_ = verbs->allocPd(created->context_);
  if (created->pd_ == nullptr) {
    return systemError("ib transport: cannot allocate a protection domain on %s (%s)", port.device.c_str(),
                       strerror(errno));
  }
  open.byName[port.device] = created;
  *device = std::move(created);
  return Status::ok();
}

DeviceContext::~DeviceContext() {
  if (pd_ != nullptr) verbs_->deallocPd(pd_);
  if (context_ != nullptr) verbs_->closeDevice(context_);
}

// ---- QueuePair ----

Status QueuePair::create(const IbPort& port, int sendDepth, int recvDepth, std::string peerDescription,
                         std::unique_ptr<QueuePair>* queuePair) {
  std::unique_ptr<QueuePair> created(new QueuePair);
  created->port_ = port;
  created->peerDescription_ = std::move(peerDescription);
  WEFT_RETURN_IF_ERROR(DeviceContext::acquire(port, &created->device_));
  const Verbs& verbs = created->device_->verbs();
  const char* where = created->peerDescription_.c_str();
  created->cq_ = verbs.createCq(created->device_->context(), sendDepth + recvDepth, nullptr, nullptr, 0);
  if (created->cq_ == nullptr) {
    return systemError("ib transport: cannot create a completion queue of %d entries on %s for %s (%s)",
                       sendDepth + recvDepth, port.name().c_str(), where, strerror(errno));
  }
  ibv_qp_init_attr init{};
  init.send_cq = created->cq_;
  init.recv_cq = created->cq_;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = static_cast<uint32_t>(sendDepth);
  init.cap.max_recv_wr = static_cast<uint32_t>(recvDepth);
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  created->qp_ = verbs.createQp(created->device_->pd(), &init);
  if (created->qp_ == nullptr) {
    return systemError("ib transport: cannot create a queue pair on %s for %s (%s)", port.name().c_str(), where,
                       strerror(errno));
  }
  uint32_t random = 0;
  if (getrandom(&random, sizeof(random), 0) != sizeof(random)) random = static_cast<uint32_t>(getpid());
  created->psn_ = random & 0xffffff;

  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<uint8_t>(port.port);
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  WEFT_RETURN_IF_ERROR(created->modify(&attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                                       "INIT"));
  *queuePair = std::move(created);
  return Status::ok();
}

QueuePair::~QueuePair() {
  if (!device_) return;
  const Verbs& verbs = device_->verbs();
  if (qp_ != nullptr) verbs.destroyQp(qp_);
  for (ibv_mr* mr : registrations_) verbs.deregMr(mr);
  if (cq_ != nullptr) verbs.destroyCq(cq_);
}

Status QueuePair::modify(ibv_qp_attr* attr, int mask, const char* state) {
  int err = device_->verbs().modifyQp(qp_, attr, mask);
  if (err != 0) {
    return systemError("ib transport: cannot move the queue pair on %s for %s to %s (%s)", port_.name().c_str(),
                       peerDescription_.c_str(), state, strerror(err));
  }
  return Status::ok();
}

QueuePairAddress QueuePair::address() const {
  QueuePairAddress address;
  address.qpNumber = qp_->qp_num;
  address.psn = psn_;
  address.lid = port_.lid;
  address.linkLayer = static_cast<uint8_t>(port_.linkLayer);
  address.mtu = static_cast<uint8_t>(port_.mtu);
  memcpy(address.gid, port_.gid.raw, sizeof(address.gid));
  return address;
}

Status QueuePair::connect(const QueuePairAddress& remote) {
  if (remote.linkLayer != port_.linkLayer) {
    return invalidUsage("ib transport: %s is %s but %s uses %s: both ends of a connection need the same link layer; "
                        "choose ports with NCCL_IB_HCA",
                        port_.name().c_str(), port_.isRoce() ? "RoCE (Ethernet)" : "InfiniBand",
                        peerDescription_.c_str(),
                        remote.linkLayer == IBV_LINK_LAYER_ETHERNET ? "RoCE (Ethernet)" : "InfiniBand");
  }
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  const ibv_mtu pathMtu = static_cast<ibv_mtu>(std::min<int>(port_.mtu, remote.mtu));
  attr.path_mtu = pathMtu;
  attr.dest_qp_num = remote.qpNumber;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.port_num = static_cast<uint8_t>(port_.port);
  attr.ah_attr.sl = static_cast<uint8_t>(knob(knobs::KnobId::kIbSl, 0, 15));
  attr.ah_attr.dlid = remote.lid;
  if (port_.isRoce()) {
    attr.ah_attr.is_global = 1;
    memcpy(attr.ah_attr.grh.dgid.raw, remote.gid, sizeof(remote.gid));
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(port_.gidIndex);
    attr.ah_attr.grh.hop_limit = 255;
    attr.ah_attr.grh.traffic_class = static_cast<uint8_t>(knob(knobs::KnobId::kIbTc, 0, 255));
  }
  WEFT_RETURN_IF_ERROR(modify(&attr,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                              "RTR"));
  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = static_cast<uint8_t>(knob(knobs::KnobId::kIbTimeout, 1, 31));
  attr.retry_cnt = static_cast<uint8_t>(knob(knobs::KnobId::kIbRetryCnt, 0, 7));
  attr.rnr_retry = 7;
  attr.sq_psn = psn_;
  attr.max_rd_atomic = 1;
  WEFT_RETURN_IF_ERROR(modify(&attr,
                              IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                  IBV_QP_MAX_QP_RD_ATOMIC,
                              "RTS"));
  WEFT_INFO(log::kNet, "ib transport: %s connected to %s (queue pair %u -> %u, MTU %d)", port_.name().c_str(),
            peerDescription_.c_str(), qp_->qp_num, remote.qpNumber, 128 << pathMtu);
  return Status::ok();
}

Status QueuePair::registerMemory(void* memory, size_t bytes, int access, ibv_mr** mr) {
  *mr = device_->verbs().regMr(device_->pd(), memory, bytes, access);
  if (*mr == nullptr) {
    return systemError("ib transport: cannot register %zu bytes on %s for %s (%s): raise the locked-memory limit "
                       "(ulimit -l) or lower NCCL_BUFFSIZE",
                       bytes, port_.name().c_str(), peerDescription_.c_str(), strerror(errno));
  }
  registrations_.push_back(*mr);
  return Status::ok();
}

Status QueuePair::postWrite(const void* local, uint32_t lkey, size_t bytes, uint64_t remote, uint32_t rkey,
                            const uint32_t* immediate) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(local);
  sge.length = static_cast<uint32_t>(bytes);
  sge.lkey = lkey;
  ibv_send_wr request{};
  request.sg_list = bytes > 0 ? &sge : nullptr;
  request.num_sge = bytes > 0 ? 1 : 0;
  request.opcode = immediate != nullptr ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  request.send_flags = IBV_SEND_SIGNALED;
  if (immediate != nullptr) request.imm_data = htonl(*immediate);
  request.wr.rdma.remote_addr = remote;
  request.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  int err = ibv_post_send(qp_, &request, &bad);
  if (err != 0) {
    return systemError("ib transport: posting an RDMA write of %zu bytes on %s to %s failed (%s)", bytes,
                       port_.name().c_str(), peerDescription_.c_str(), strerror(err));
  }
  return Status::ok();
}

Status QueuePair::postReceive() {
  ibv_recv_wr request{};
  ibv_recv_wr* bad = nullptr;
  int err = ibv_post_recv(qp_, &request, &bad);
  if (err != 0) {
    return systemError("ib transport: posting a receive on %s for %s failed (%s)", port_.name().c_str(),
                       peerDescription_.c_str(), strerror(err));
  }
  return Status::ok();
}

Status QueuePair::poll(ibv_wc* completions, int capacity, int* count) {
  *count = ibv_poll_cq(cq_, capacity, completions);
  if (*count < 0) {
    return systemError("ib transport: polling the completion queue on %s for %s failed", port_.name().c_str(),
                       peerDescription_.c_str());
  }
  for (int i = 0; i < *count; ++i) {
    const ibv_wc& completion = completions[i];
    if (completion.status == IBV_WC_SUCCESS) continue;
    const char* text = device_->verbs().wcStatusString(completion.status);
    if (isRemoteFailure(completion.status)) {
      return remoteError("ib transport: a work request on %s to %s failed: %s (status %d): the peer exited, "
                         "crashed or is unreachable; look for its own error first",
                         port_.name().c_str(), peerDescription_.c_str(), text, completion.status);
    }
    return systemError("ib transport: a work request on %s to %s failed: %s (status %d, vendor error %#x)",
                       port_.name().c_str(), peerDescription_.c_str(), text, completion.status,
                       completion.vendor_err);
  }
  return Status::ok();
}

}  // namespace weft::transport::ib
