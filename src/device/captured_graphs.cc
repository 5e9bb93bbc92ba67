#include "src/device/captured_graphs.h"

#include <algorithm>

#include "src/device/kernel_work.h"
#include "src/device/stream_capture.h"
#include "transport/cuda_ipc/cuda_call.h"

namespace weft::device {
namespace {

// A slab holds the tables of many launches of one capture: one allocation for most graphs, and
// room for a launch's tables as large as a buffer of the communicator's WorkPool holds.
constexpr size_t kSlabBytes = 128 << 10;

using ReleasedFlag = std::shared_ptr<std::atomic<bool>>;

// The user object's destructor (see the header).
void CUDART_CB releaseCapture(void* hold) {
  auto* released = static_cast<ReleasedFlag*>(hold);
  (*released)->store(true, std::memory_order_release);
  delete released;
}

}  // namespace

CapturedGraphs::~CapturedGraphs() {
  RelaxedCapture relaxed;  // another thread may be capturing a graph: these frees are not part of it
  for (const std::unique_ptr<Record>& record : records_) {
    for (const Slab& slab : record->slabs) freeSlabs_.push_back(slab);
    if (record->capture.afterLastKernel != nullptr) freeEvents_.push_back(record->capture.afterLastKernel);
  }
  for (const Slab& slab : freeSlabs_) (void)cudaFreeHost(slab.host);
  for (cudaEvent_t event : freeEvents_) (void)cudaEventDestroy(event);
}

Status CapturedGraphs::reserve() {
  cudaEvent_t event = nullptr;
  WEFT_RETURN_IF_ERROR(cudaStatus(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate"));
  freeEvents_.push_back(event);
  Slab slab;
  WEFT_RETURN_IF_ERROR(allocateSlab(kSlabBytes, &slab));
  freeSlabs_.push_back(slab);
  return Status::ok();
}

CapturedGraphs::Capture* CapturedGraphs::find(const StreamCapture& capture) {
  for (const std::unique_ptr<Record>& record : records_) {
    if (record->capture.id == capture.id) return &record->capture;
  }
  return nullptr;
}

Status CapturedGraphs::findOrMake(const StreamCapture& capture, Capture** out) {
  *out = find(capture);
  if (*out != nullptr) return Status::ok();
  reclaim();
  auto record = std::make_unique<Record>();
  record->capture.id = capture.id;
  if (!freeEvents_.empty()) {
    record->capture.afterLastKernel = freeEvents_.back();
    freeEvents_.pop_back();
  } else {
    WEFT_RETURN_IF_ERROR(cudaStatus(cudaEventCreateWithFlags(&record->capture.afterLastKernel, cudaEventDisableTiming),
                                    "cudaEventCreate"));
  }
  record->released = std::make_shared<std::atomic<bool>>(false);
  auto* hold = new ReleasedFlag(record->released);
  cudaUserObject_t object = nullptr;
  const cudaError_t created = cudaUserObjectCreate(&object, hold, releaseCapture, 1, cudaUserObjectNoDestructorSync);
  // On failure the object's one reference is still ours: releasing it runs the destructor.
  const cudaError_t retained =
      created == cudaSuccess ? cudaGraphRetainUserObject(capture.graph, object, 1, cudaGraphUserObjectMove) : created;
  if (created != cudaSuccess) delete hold;
  if (created == cudaSuccess && retained != cudaSuccess) (void)cudaUserObjectRelease(object, 1);
  if (retained != cudaSuccess) {
    freeEvents_.push_back(record->capture.afterLastKernel);
    return cudaStatus(retained, created != cudaSuccess ? "cudaUserObjectCreate for a captured launch"
                                                       : "cudaGraphRetainUserObject for a captured launch");
  }
  records_.push_back(std::move(record));
  *out = &records_.back()->capture;
  return Status::ok();
}

Status CapturedGraphs::recordOf(const Capture* capture, Record** out) {
  const auto owner = std::find_if(records_.begin(), records_.end(), [capture](const std::unique_ptr<Record>& record) {
    return &record->capture == capture;
  });
  if (owner == records_.end()) return internalError("a capture that has no record");
  *out = owner->get();
  return Status::ok();
}

Status CapturedGraphs::keep(Capture* capture, std::shared_ptr<const void> object) {
  Record* record = nullptr;
  WEFT_RETURN_IF_ERROR(recordOf(capture, &record));
  record->kept.push_back(std::move(object));
  return Status::ok();
}

Status CapturedGraphs::tables(Capture* capture, size_t bytes, char** host, char** device) {
  Record* owner = nullptr;
  WEFT_RETURN_IF_ERROR(recordOf(capture, &owner));
  Record& record = *owner;
  size_t at = alignTables(record.used);
  if (record.slabs.empty() || at + bytes > record.slabs.back().capacity) {
    WEFT_RETURN_IF_ERROR(addSlab(&record, bytes));
    at = 0;
  }
  *host = record.slabs.back().host + at;
  *device = record.slabs.back().device + at;
  record.used = at + bytes;
  return Status::ok();
}

Status CapturedGraphs::addSlab(Record* record, size_t bytes) {
  const auto free = std::find_if(freeSlabs_.begin(), freeSlabs_.end(),
                                 [bytes](const Slab& slab) { return slab.capacity >= bytes; });
  if (free != freeSlabs_.end()) {
    record->slabs.push_back(*free);
    freeSlabs_.erase(free);
    return Status::ok();
  }
  Slab slab;
  WEFT_RETURN_IF_ERROR(allocateSlab(std::max(bytes, kSlabBytes), &slab));
  record->slabs.push_back(slab);
  return Status::ok();
}

Status CapturedGraphs::allocateSlab(size_t bytes, Slab* out) {
  RelaxedCapture relaxed;  // an allocation: not part of the graph
  void* host = nullptr;
  WEFT_RETURN_IF_ERROR(cudaStatus(cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable),
                                  "cudaHostAlloc of a captured launch's tables"));
  void* device = nullptr;
  const cudaError_t mapped = cudaHostGetDevicePointer(&device, host, 0);
  if (mapped != cudaSuccess) {
    (void)cudaFreeHost(host);
    return cudaStatus(mapped, "cudaHostGetDevicePointer");
  }
  out->host = static_cast<char*>(host);
  out->device = static_cast<char*>(device);
  out->capacity = bytes;
  return Status::ok();
}

void CapturedGraphs::reclaim() {
  std::erase_if(records_, [this](const std::unique_ptr<Record>& record) {
    if (!record->released->load(std::memory_order_acquire)) return false;
    for (const Slab& slab : record->slabs) freeSlabs_.push_back(slab);
    freeEvents_.push_back(record->capture.afterLastKernel);
    return true;  // and what it kept goes with it
  });
}

}  // namespace weft::device
