#include "src/core/group.h"

#include <algorithm>
#include <map>
#include <thread>
#include <utility>

#include "src/core/communicator.h"
#include "src/core/op_tuning.h"
#include "src/core/stream_turns.h"
#include "src/device/gpu_runtime.h"
#include "src/exec/launch.h"

namespace weft::core {
namespace {

/// Runs the inits (on threads of their own when there are several: they wait on each other's
/// ranks; jobs that share a serial key run in order on one thread), then the operations on this
/// thread, in `turns` on their streams (passed by the time it returns). Returns the first failure.
Status runLaunch(std::vector<Group::InitJob>& inits, std::span<const Op> ops, LaunchTurns turns) {
  if (!inits.empty()) turns.settingUp();  // inits wait for their peers
  std::vector<Status> results(inits.size());
  // Each lane is a list of jobs run in order on one thread.
  std::vector<std::vector<size_t>> lanes;
  for (size_t i = 0; i < inits.size(); ++i) {
    auto same = std::find_if(lanes.begin(), lanes.end(), [&](const std::vector<size_t>& lane) {
      return inits[i].serialKey != nullptr && inits[lane.front()].serialKey == inits[i].serialKey;
    });
    if (same != lanes.end()) same->push_back(i);
    else lanes.push_back({i});
  }
  auto runLane = [&inits, &results](const std::vector<size_t>& lane) {
    for (size_t i : lane) results[i] = inits[i].run();
  };
  if (lanes.size() == 1) {
    runLane(lanes[0]);
  } else if (lanes.size() > 1) {
    void* const context = device::threadContext();  // each lane's thread runs in it (gpu_runtime.h)
    std::vector<std::thread> threads;
    threads.reserve(lanes.size());
    for (const std::vector<size_t>& lane : lanes) {
      threads.emplace_back([&runLane, &lane, context] {
        device::adoptContext(context);
        runLane(lane);
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  for (const Status& result : results) WEFT_RETURN_IF_ERROR(result);
  if (ops.empty()) return Status::ok();
  return exec::launchOps(ops, std::move(turns));
}

/// Starts the launch on a background thread. Its communicators are marked busy until it ends; the
/// inits publish their own results in their handles, and a failed launch becomes the async error
/// of its operations' communicators (also a refusal, which a blocking launch would return).
Status launchInBackground(std::vector<Group::InitJob> inits, std::vector<Op> ops) {
  for (const Op& op : ops) {
    if (op.onDevice && device::isPerThreadStream(op.stream)) {
      const Status refused = invalidUsage(
          "rank %d's call is part of a nonblocking launch, which enqueues it from a thread of Weft's own, where "
          "cudaStreamPerThread names that thread's stream, not the caller's; give the call a stream you created",
          op.comm->rank());
      for (Group::InitJob& init : inits) init.cancel(refused);
      return refused;
    }
  }
  std::vector<Communicator*> comms;
  for (const Op& op : ops) {
    if (std::find(comms.begin(), comms.end(), op.comm) == comms.end()) comms.push_back(op.comm);
  }
  const size_t opComms = comms.size();
  for (const Group::InitJob& init : inits) {
    if (init.uses != nullptr && std::find(comms.begin(), comms.end(), init.uses) == comms.end()) {
      comms.push_back(init.uses);
    }
  }
  for (Communicator* comm : comms) {
    comm->waitForBackground();
    comm->beginBackground();
  }
  // Taken here, on the calling thread: its later launches on these streams, in the background or
  // not, enqueue after this one (unless it is still setting up: stream_turns.h).
  LaunchTurns turns = LaunchTurns::take(ops);
  void* const context = device::threadContext();  // the launch runs in it, as on this thread (gpu_runtime.h)
  std::thread([inits = std::move(inits), ops = std::move(ops), comms, opComms, turns = std::move(turns),
               context]() mutable {
    device::adoptContext(context);
    const Status status = runLaunch(inits, ops, std::move(turns));
    if (!status.isOk()) {
      for (size_t c = 0; c < opComms; ++c) comms[c]->setAsyncError(status);
    }
    for (Communicator* comm : comms) comm->endBackground();
  }).detach();
  return makeStatus(StatusCode::kInProgress,
                    "the launch runs in the background: poll ncclCommGetAsyncError until it is not ncclInProgress");
}

bool anyNonblocking(std::span<const Op> ops) {
  return std::any_of(ops.begin(), ops.end(), [](const Op& op) { return !op.comm->options().blocking; });
}

}  // namespace

Group& Group::current() {
  thread_local Group group;
  return group;
}

Status Group::submit(const Op& op) {
  if (active()) {
    ops_.push_back(op);
    return Status::ok();
  }
  std::span<const Op> one(&op, 1);
  if (anyNonblocking(one)) return launchInBackground({}, {op});
  // A blocking call on a communicator with nonblocking work still running waits for it first.
  op.comm->waitForBackground();
  return exec::launchOps(one, LaunchTurns::take(one));
}

Status Group::submitInit(InitJob job, bool blocking) {
  if (!active()) {
    if (blocking) return job.run();
    return launchInBackground({std::move(job)}, {});
  }
  inits_.push_back(std::move(job));
  nonblocking_ |= !blocking;
  return Status::ok();
}

void Group::recordError(const Status& status) {
  if (active() && error_.isOk()) error_ = status;
}

Status Group::end() {
  if (depth_ == 0) return invalidUsage("ncclGroupEnd called without a matching ncclGroupStart");
  if (--depth_ > 0) return Status::ok();
  Status status = launch();
  ops_.clear();
  inits_.clear();
  nonblocking_ = false;
  error_ = Status::ok();
  return status;
}

Status Group::simulateEnd(double* estimatedMicroseconds) {
  *estimatedMicroseconds = 0;
  if (depth_ == 0) return invalidUsage("ncclGroupSimulateEnd called without a matching ncclGroupStart");
  if (--depth_ > 0) return Status::ok();
  std::vector<Op> simulated = std::move(ops_);
  ops_.clear();
  Status status = launch();  // the inits, if any, and a recorded error
  inits_.clear();
  nonblocking_ = false;
  error_ = Status::ok();
  if (!status.isOk()) return status;
  std::map<const Communicator*, double> perCommunicator;
  for (const Op& op : simulated) perCommunicator[op.comm] += predictedMicroseconds(op);
  for (const auto& [comm, microseconds] : perCommunicator) {
    *estimatedMicroseconds = std::max(*estimatedMicroseconds, microseconds);
  }
  return Status::ok();
}

Status Group::launch() {
  if (!error_.isOk()) {
    // Nothing runs; the handles of the inits say why.
    for (InitJob& init : inits_) init.cancel(error_);
    return error_;
  }
  if (nonblocking_ || anyNonblocking(ops_)) return launchInBackground(std::move(inits_), std::move(ops_));
  for (const Op& op : ops_) op.comm->waitForBackground();
  for (const InitJob& init : inits_) {
    if (init.uses != nullptr) init.uses->waitForBackground();
  }
  return runLaunch(inits_, ops_, LaunchTurns::take(ops_));
}

}  // namespace weft::core
