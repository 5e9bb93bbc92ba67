#pragma once
// Setting up the connections that step programs need, for the host and the GPU executors alike.

#include <functional>
#include <span>

#include "algorithms/step.h"
#include "src/base/status.h"
#include "src/core/connection_table.h"
#include "src/core/op.h"

namespace weft::exec {

/// Connects what programs[i] (the program of ops[i]) needs and tableOf(ops[i]) lacks. Runs in two
/// phases across all the tables involved, so that a single thread driving several ranks
/// (ncclCommInitAll) never waits on a rank it has not served yet. Blocks until the peers' halves
/// have run. `lacking`, where set, is called first for each op whose program lacks a connection.
Status connectPrograms(std::span<const core::Op> ops, std::span<const algorithms::Program> programs,
                       const std::function<core::ConnectionTable&(const core::Op&)>& tableOf,
                       const std::function<void(const core::Op&)>& lacking = {});

}  // namespace weft::exec
