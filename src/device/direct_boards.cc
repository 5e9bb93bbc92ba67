#include "src/device/direct_boards.h"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <utility>

#include "transport/cuda_ipc/cuda_call.h"

namespace weft::device {
namespace {

struct Shared {
  DirectBoard* boards = nullptr;
  int nranks = 0;
  int users = 0;
};

struct Registry {
  std::mutex mutex;
  std::map<std::pair<uint64_t, int>, Shared> boards;
};

// Never destroyed: a communicator may be destroyed by another static's destructor or an exit
// handler, after this file's statics would be gone.
Registry& registry() {
  static Registry* const instance = new Registry;
  return *instance;
}

// Device memory holding `nranks` zeroed boards. The zeros are written on the setup stream (the
// legacy stream would wait for kernels on every blocking stream, perhaps a peer's that waits for
// this rank) and waited for, so they are in place before any kernel sees them.
Status makeBoards(int nranks, cudaStream_t setupStream, DirectBoard** out) {
  void* memory = nullptr;
  const size_t bytes = sizeof(DirectBoard) * static_cast<size_t>(nranks);
  WEFT_RETURN_IF_ERROR(cudaStatus(cudaMalloc(&memory, bytes), "cudaMalloc of the direct allreduce's boards"));
  Status status = cudaStatus(cudaMemsetAsync(memory, 0, bytes, setupStream), "zeroing the direct boards");
  if (status.isOk()) status = cudaStatus(cudaStreamSynchronize(setupStream), "zeroing the direct boards");
  if (!status.isOk()) {
    (void)cudaFree(memory);
    return status;
  }
  *out = static_cast<DirectBoard*>(memory);
  return Status::ok();
}

}  // namespace

Status acquireDirectBoards(uint64_t cliqueId, int device, int nranks, cudaStream_t setupStream,
                           DirectBoard** boards) {
  Registry& registered = registry();
  std::lock_guard<std::mutex> lock(registered.mutex);
  Shared& shared = registered.boards[{cliqueId, device}];
  if (shared.users == 0) {
    const Status made = makeBoards(nranks, setupStream, &shared.boards);
    if (!made.isOk()) {
      registered.boards.erase({cliqueId, device});
      return made;
    }
    shared.nranks = nranks;
  } else if (shared.nranks != nranks) {
    return internalError("two communicators of %d and %d ranks share the clique id %016llx on device %d",
                         shared.nranks, nranks, static_cast<unsigned long long>(cliqueId), device);
  }
  ++shared.users;
  *boards = shared.boards;
  return Status::ok();
}

DirectBoard* releaseDirectBoards(uint64_t cliqueId, int device) {
  Registry& registered = registry();
  std::lock_guard<std::mutex> lock(registered.mutex);
  auto it = registered.boards.find({cliqueId, device});
  if (it == registered.boards.end() || --it->second.users > 0) return nullptr;
  DirectBoard* boards = it->second.boards;
  registered.boards.erase(it);
  return boards;
}

}  // namespace weft::device
