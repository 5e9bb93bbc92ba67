#include "src/exec/launch.h"

#include <algorithm>
#include <vector>

#include "src/core/communicator.h"
#include "src/exec/call_check.h"
#include "src/exec/host_executor.h"
#if WEFT_CUDA
#include "src/device/device_executor.h"
#endif

namespace weft::exec {

Status launchOps(std::span<const core::Op> ops, core::LaunchTurns turns) {
  HostExecutor& host = threadHostExecutor();
  LaunchCheck check(ops);
  if (!check.exchangeOps().empty()) {
    turns.settingUp();  // the comparison waits for the peers
    WEFT_RETURN_IF_ERROR(host.run(check.exchangeOps()));
    WEFT_RETURN_IF_ERROR(check.compare());
  }
  const bool anyOnDevice = std::any_of(ops.begin(), ops.end(), [](const core::Op& op) { return op.onDevice; });
  if (!anyOnDevice) return host.run(ops);
#if WEFT_CUDA
  std::vector<core::Op> deviceOps;
  std::vector<core::Op> hostOps;
  for (const core::Op& op : ops) (op.onDevice ? deviceOps : hostOps).push_back(op);
  // GPU work first: it is only enqueued, and host work of the same group may depend on peers
  // whose GPU work this thread enqueues. Enqueueing may wait (for peers to connect, or for a
  // tables buffer): inside the call, so that ncclCommAbort from another thread waits for it to
  // leave before the communicator is freed.
  for (const core::Op& op : deviceOps) op.comm->enterCall();
  Status status = device::enqueueOnStreams(deviceOps, turns);
  for (const core::Op& op : deviceOps) op.comm->exitCall();
  // Before the host work, which may wait for peers that this thread's later launches drive.
  turns.pass();
  if (!status.isOk() && status.code() != StatusCode::kInvalidArgument && status.code() != StatusCode::kInvalidUsage) {
    for (const core::Op& op : deviceOps) op.comm->setAsyncError(status);
  }
  WEFT_RETURN_IF_ERROR(status);
  return hostOps.empty() ? Status::ok() : host.run(hostOps);
#else
  (void)turns;
  return internalError("an operation on GPU buffers reached a build without the GPU path");
#endif
}

}  // namespace weft::exec
