#include "transport/ib/verbs.h"

#include <dlfcn.h>


namespace weft::transport::ib {
namespace {

struct Loaded {
  Verbs verbs{};
  Status status;
};

template <typename Function>
bool bind(void* library, const char* symbol, Function* function, Status* status) {
  *function = reinterpret_cast<Function>(dlsym(library, symbol));
  if (*function == nullptr && status->isOk()) {
    *status = systemError("libibverbs.so.1 has no symbol %s: rdma-core is too old or broken; install a current "
                          "rdma-core (Debian: libibverbs1)",
                          symbol);
  }
  return *function != nullptr;
}

Loaded load() {
  Loaded loaded;
  // Never closed: verbs objects may outlive any one communicator, up to process exit.
  void* library = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    loaded.status = systemError("could not load libibverbs.so.1 (%s): install rdma-core's libibverbs1 for "
                                "InfiniBand/RoCE",
                                why ? why : "unknown reason");
    return loaded;
  }
  Verbs& v = loaded.verbs;
  Status& s = loaded.status;
  bind(library, "ibv_get_device_list", &v.getDeviceList, &s);
  bind(library, "ibv_free_device_list", &v.freeDeviceList, &s);
  bind(library, "ibv_get_device_name", &v.getDeviceName, &s);
  bind(library, "ibv_open_device", &v.openDevice, &s);
  bind(library, "ibv_close_device", &v.closeDevice, &s);
  bind(library, "ibv_query_device", &v.queryDevice, &s);
  bind(library, "ibv_query_port", &v.queryPort, &s);
  bind(library, "ibv_query_gid", &v.queryGid, &s);
  bind(library, "ibv_alloc_pd", &v.allocPd, &s);
  bind(library, "ibv_dealloc_pd", &v.deallocPd, &s);
  bind(library, "ibv_reg_mr", &v.regMr, &s);
  bind(library, "ibv_dereg_mr", &v.deregMr, &s);
  bind(library, "ibv_create_cq", &v.createCq, &s);
  bind(library, "ibv_destroy_cq", &v.destroyCq, &s);
  bind(library, "ibv_create_qp", &v.createQp, &s);
  bind(library, "ibv_modify_qp", &v.modifyQp, &s);
  bind(library, "ibv_destroy_qp", &v.destroyQp, &s);
  bind(library, "ibv_wc_status_str", &v.wcStatusString, &s);
  return loaded;
}

}  // namespace

Status loadVerbs(const Verbs** verbs) {
  static const Loaded loaded = load();
  *verbs = loaded.status.isOk() ? &loaded.verbs : nullptr;
  return loaded.status;
}

}  // namespace weft::transport::ib
