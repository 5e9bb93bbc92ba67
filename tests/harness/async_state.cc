#include "tests/harness/async_state.h"

#include <thread>

namespace weft::harness {

ncclResult_t settledState(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
    if (state == ncclInProgress) std::this_thread::yield();
  }
  return state;
}

}  // namespace weft::harness
