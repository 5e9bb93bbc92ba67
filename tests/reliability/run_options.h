#pragma once
// The choices a reliability test runs its ranks under, and their names in test names and messages.

#include <vector>

#include "tests/harness/rank_runner.h"
#include "tests/harness/scoped_env.h"

namespace weft::reliability {

enum class Transport {
  kShm,     // the default between processes of one host
  kSocket,  // NCCL_SHM_DISABLE=1: TCP over loopback
};

const char* transportName(Transport transport);

/// The variables that select `transport`, with NCCL_SOCKET_IFNAME=lo so that every socket (and
/// every stranger) is on the loopback interface.
std::vector<harness::EnvVar> transportEnv(Transport transport);

/// "threads" or "processes".
const char* modeName(harness::RankMode mode);

}  // namespace weft::reliability
