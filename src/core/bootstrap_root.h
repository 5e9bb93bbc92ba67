#pragma once
// The bootstrap root: the rendezvous where the ranks of one communicator learn each other's
// addresses. It runs in a detached thread of the process that made the unique id (or of rank 0
// with NCCL_COMM_ID) and ends once every rank has joined, or when it gives up waiting.

#include "src/base/socket.h"
#include "src/base/status.h"
#include "src/core/bootstrap_wire.h"

namespace weft::core {

/// Starts the root on `listener` in a detached thread and returns once the thread runs.
///
/// The root accepts connections; each must send a root hello with `secret` within
/// WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT seconds. Connections that send anything else (bad magic or
/// secret, an nranks different from the first rank's, a rank that joined already), too little, or
/// nothing are closed with a WARN while the others proceed: pending connections are served
/// together, each with its own deadline. Each rank admitted is welcomed at once (wire::kWelcome),
/// so that it knows it reached the root. Once every rank has joined, the root sends each the
/// table of listen addresses, closes everything and the thread ends.
///
/// The root never outlives its use: when no rank has joined for WEFT_TIMEOUT seconds (one hour
/// when WEFT_TIMEOUT is 0) it gives up, closes its port and the connections of the ranks that
/// joined (their init fails, naming the root) and its thread ends; a WARN names the ranks that
/// never came. At process exit (exit(), or returning from main) running roots stop before the
/// library's statics are destroyed, and a child forked while a root runs closes its copy of the
/// root's listening socket, so that the port closes when the root is done.
Status startBootstrapRoot(net::Socket listener, const wire::Secret& secret);

}  // namespace weft::core
