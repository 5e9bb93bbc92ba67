#include "src/core/redop_table.h"

#include <cstring>

namespace weft::core {
namespace {

constexpr int kNumBuiltinOps = 5;  // ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg

}  // namespace

Status RedOpTable::createPreMulSum(algorithms::DataType type, const void* scalar, bool immediate, int* op) {
  if (scalar == nullptr) return invalidArgument("ncclRedOpCreatePreMulSum: scalar is NULL");
  Entry entry;
  entry.live = true;
  entry.type = type;
  entry.immediate = immediate;
  if (immediate) memcpy(entry.value, scalar, algorithms::dataTypeSize(type));
  else entry.pointer = scalar;
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (!entries_[i].live) {
      entries_[i] = entry;
      *op = kNumBuiltinOps + static_cast<int>(i);
      return Status::ok();
    }
  }
  entries_.push_back(entry);
  *op = kNumBuiltinOps + static_cast<int>(entries_.size() - 1);
  return Status::ok();
}

Status RedOpTable::destroy(int op) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t index = static_cast<size_t>(op - kNumBuiltinOps);
  if (op < kNumBuiltinOps || index >= entries_.size() || !entries_[index].live) {
    return invalidArgument("ncclRedOpDestroy: op %d was not created by ncclRedOpCreatePreMulSum on this "
                           "communicator (or was already destroyed)",
                           op);
  }
  entries_[index].live = false;
  return Status::ok();
}

Status RedOpTable::resolve(int op, algorithms::DataType type, int nranks, algorithms::Reduction* reduction) const {
  if (op >= 0 && op < kNumBuiltinOps) {
    *reduction = algorithms::makeBuiltinReduction(type, op, nranks);
    return Status::ok();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  size_t index = static_cast<size_t>(op - kNumBuiltinOps);
  if (op < kNumBuiltinOps || index >= entries_.size() || !entries_[index].live) {
    return invalidArgument("reduction op %d is neither built in (0-4) nor created on this communicator", op);
  }
  const Entry& entry = entries_[index];
  if (entry.type != type) {
    return invalidArgument("reduction op %d was created for %s but the call uses %s", op,
                           algorithms::dataTypeName(entry.type), algorithms::dataTypeName(type));
  }
  const unsigned char unread[8] = {};
  *reduction = algorithms::makePreMulSum(type, entry.immediate ? entry.value : unread);
  if (!entry.immediate) reduction->scalarAt = entry.pointer;
  return Status::ok();
}

}  // namespace weft::core
