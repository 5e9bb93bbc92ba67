#pragma once
// Which transport the ranks of a test use, chosen through NCCL's environment knobs.

#include <string>
#include <vector>

#include "tests/harness/scoped_env.h"

namespace weft::multirank {

enum class Transport {
  kShm,     // the default between processes of one host
  kSocket,  // NCCL_SHM_DISABLE=1: TCP over loopback
};

const char* transportName(Transport transport);

/// The variables that select `transport`; every test also pins NCCL_SOCKET_IFNAME=lo.
std::vector<harness::EnvVar> transportEnv(Transport transport);

}  // namespace weft::multirank
