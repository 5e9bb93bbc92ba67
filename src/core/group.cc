#include "src/core/group.h"

#include <thread>

#include "src/exec/host_executor.h"

namespace weft::core {

Group& Group::current() {
  thread_local Group group;
  return group;
}

Status Group::submit(const Op& op) {
  if (!active()) return exec::threadHostExecutor().run(std::span<const Op>(&op, 1));
  ops_.push_back(op);
  return Status::ok();
}

Status Group::submitInit(std::function<Status()> job) {
  if (!active()) return job();
  inits_.push_back(std::move(job));
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
  error_ = Status::ok();
  return status;
}

Status Group::launch() {
  if (!error_.isOk()) return error_;
  if (!inits_.empty()) {
    std::vector<Status> results(inits_.size());
    if (inits_.size() == 1) {
      results[0] = inits_[0]();
    } else {
      std::vector<std::thread> threads;
      threads.reserve(inits_.size());
      for (size_t i = 0; i < inits_.size(); ++i) {
        threads.emplace_back([this, i, &results] { results[i] = inits_[i](); });
      }
      for (std::thread& thread : threads) thread.join();
    }
    for (const Status& result : results) WEFT_RETURN_IF_ERROR(result);
  }
  if (ops_.empty()) return Status::ok();
  return exec::threadHostExecutor().run(ops_);
}

}  // namespace weft::core
