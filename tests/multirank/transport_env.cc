#include "tests/multirank/transport_env.h"

namespace weft::multirank {

const char* transportName(Transport transport) {
  return transport == Transport::kShm ? "shm" : "socket";
}

std::vector<harness::EnvVar> transportEnv(Transport transport) {
  return {
      {"NCCL_SOCKET_IFNAME", "lo"},
      {"NCCL_SHM_DISABLE", transport == Transport::kSocket ? "1" : "0"},
  };
}

}  // namespace weft::multirank
