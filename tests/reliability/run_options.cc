#include "tests/reliability/run_options.h"

namespace weft::reliability {

const char* transportName(Transport transport) { return transport == Transport::kShm ? "shm" : "socket"; }

std::vector<harness::EnvVar> transportEnv(Transport transport) {
  return {
      {"NCCL_SOCKET_IFNAME", "lo"},
      {"NCCL_SHM_DISABLE", transport == Transport::kSocket ? "1" : "0"},
  };
}

const char* modeName(harness::RankMode mode) { return mode == harness::RankMode::kThreads ? "threads" : "processes"; }

}  // namespace weft::reliability
