#pragma once
// The reduction operators a communicator's users create (ncclRedOpCreatePreMulSum).

#include <mutex>
#include <vector>

#include "algorithms/datatype.h"
#include "src/base/status.h"

namespace weft::core {

class RedOpTable {
 public:
  /// Registers a PreMulSum over `type` whose scalar is read from `scalar` now (immediate) or at
  /// each use (a pointer the caller keeps valid). Returns the new op's id (>= ncclNumOps).
  Status createPreMulSum(algorithms::DataType type, const void* scalar, bool immediate, int* op);
  /// Removes a created op. Built-in ops and unknown ids are kInvalidArgument.
  Status destroy(int op);
  /// Resolves `op` for `type` over `nranks` ranks: built-in ops (0..4) or a created one, which must
  /// have been created for `type`. A scalar given by pointer is not read: Reduction::scalarAt says
  /// where it is, for the call to read when it runs.
  Status resolve(int op, algorithms::DataType type, int nranks, algorithms::Reduction* reduction) const;

 private:
  struct Entry {
    bool live = false;
    algorithms::DataType type = algorithms::DataType::kFloat32;
    bool immediate = true;
    alignas(8) unsigned char value[8] = {};
    const void* pointer = nullptr;
  };
  mutable std::mutex mutex_;  // create/destroy may race with calls from other threads of the rank
  std::vector<Entry> entries_;
};

}  // namespace weft::core
