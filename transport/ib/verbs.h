#pragma once
// libibverbs, loaded at run time (dlopen of libibverbs.so.1), so that libnccl.so.2 needs no
// rdma-core to load: where it is missing the ib transport is simply off. Only the types come from
// <infiniband/verbs.h>; every call goes through this table. ibv_post_send, ibv_post_recv and
// ibv_poll_cq are the header's inline calls through the context's ops and need no entry.

#include <infiniband/verbs.h>

#include <string>

#include "src/base/status.h"

namespace weft::transport::ib {

struct Verbs {
  ibv_device** (*getDeviceList)(int* count);
  void (*freeDeviceList)(ibv_device** list);
  const char* (*getDeviceName)(ibv_device* device);
  ibv_context* (*openDevice)(ibv_device* device);
  int (*closeDevice)(ibv_context* context);
  int (*queryDevice)(ibv_context* context, ibv_device_attr* attr);
  // The exported ibv_query_port takes the attribute struct's compatible prefix, as NCCL calls it.
  int (*queryPort)(ibv_context* context, uint8_t port, ibv_port_attr* attr);
  int (*queryGid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid);
  ibv_pd* (*allocPd)(ibv_context* context);
  int (*deallocPd)(ibv_pd* pd);
  ibv_mr* (*regMr)(ibv_pd* pd, void* address, size_t length, int access);
  int (*deregMr)(ibv_mr* mr);
  ibv_cq* (*createCq)(ibv_context* context, int entries, void* cqContext, ibv_comp_channel* channel, int vector);
  int (*destroyCq)(ibv_cq* cq);
  ibv_qp* (*createQp)(ibv_pd* pd, ibv_qp_init_attr* attr);
  int (*modifyQp)(ibv_qp* qp, ibv_qp_attr* attr, int mask);
  int (*destroyQp)(ibv_qp* qp);
  const char* (*wcStatusString)(ibv_wc_status status);
};

/// The table, loaded once per process. Fails (the same way every time) when libibverbs.so.1 or
/// one of its symbols is missing, saying which and what to install.
Status loadVerbs(const Verbs** verbs);

}  // namespace weft::transport::ib
