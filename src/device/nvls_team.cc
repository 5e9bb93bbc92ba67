#include "src/device/nvls_team.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>

#include "src/base/fd_mailbox.h"
#include "src/base/log.h"
#include "src/core/bootstrap.h"
#include "src/device/nvls_plan.h"

#if WEFT_CUDA
#include "src/device/cuda_driver.h"
#include "src/device/stream_capture.h"
#include "transport/cuda_ipc/cuda_call.h"
#endif

namespace weft::device {

#if WEFT_CUDA

// What the driver gave, each with whether it is there to give back (in the reverse order).
struct NvlsResources {
  int ordinal = -1;  // the CUDA device, as the runtime numbers it
  CUdevice device = 0;
  size_t bytes = 0;  // per rank: the multicast object's size, and the memory bound to it
  CUmemGenericAllocationHandle multicast = 0;
  CUmemGenericAllocationHandle memory = 0;
  CUdeviceptr unicastRange = 0;
  CUdeviceptr multicastRange = 0;
  bool hasMulticast = false;
  bool hasMemory = false;
  bool unicastReserved = false;
  bool unicastMapped = false;
  bool bound = false;
  bool multicastReserved = false;
  bool multicastMapped = false;

  ~NvlsResources() {
    RelaxedCapture relaxed;  // another thread may be capturing a graph: these frees are not part of it
    ScopedDevice current(ordinal);
    const CudaDriver& driver = cudaDriver();
    if (bound) (void)driver.multicastUnbind(multicast, device, 0, bytes);
    if (multicastMapped) (void)driver.memUnmap(multicastRange, bytes);
    if (multicastReserved) (void)driver.memAddressFree(multicastRange, bytes);
    if (unicastMapped) (void)driver.memUnmap(unicastRange, bytes);
    if (unicastReserved) (void)driver.memAddressFree(unicastRange, bytes);
    if (hasMemory) (void)driver.memRelease(memory);
    if (hasMulticast) (void)driver.memRelease(multicast);
  }
};

namespace {

// One rank's outcome of a stage, allgathered.
struct StageReport {
  int32_t ok = 1;
  char why[252] = {};
};

// What stage 1 tells everyone: rank 0 the object's size and the alignment of its mappings, every
// other rank its mailbox's name.
struct Opening {
  StageReport report;
  uint64_t bytes = 0;
  uint64_t alignment = 0;
  char mailbox[FdMailbox::kMaxNameBytes] = {};
};

void record(const Status& status, StageReport* report) {
  report->ok = status.isOk() ? 1 : 0;
  if (!status.isOk()) std::snprintf(report->why, sizeof(report->why), "%s", status.message().c_str());
}

// Whether every rank's report of `stage` (the `report` of each entry) says it succeeded; if not,
// logs the first failure.
template <class Entry>
bool everyRankDid(const std::vector<Entry>& entries, int rank, const char* stage) {
  for (size_t r = 0; r < entries.size(); ++r) {
    const StageReport& report = entries[r].report;
    if (report.ok != 0) continue;
    WEFT_WARN("rank %d: NVLS is not used (allreduces on GPU buffers take the ring): rank %zu could not %s: %s", rank, r,
              stage, report.why);
    return false;
  }
  return true;
}

// Allgathers this rank's outcome of `stage` into *all (whether every rank succeeded).
Status agree(core::Bootstrap& bootstrap, int rank, int nranks, const Status& mine, const char* stage, bool* all) {
  struct Entry {
    StageReport report;
  };
  std::vector<Entry> entries(nranks);
  record(mine, &entries[rank].report);
  WEFT_RETURN_IF_ERROR(bootstrap.allGather(entries.data(), sizeof(Entry)));
  *all = everyRankDid(entries, rank, stage);
  return Status::ok();
}

CUmemAllocationProp memoryProperties(CUdevice device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  // An exported multicast object binds only memory that could be exported too.
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

// Rank 0: creates the multicast object for `nranks` GPUs of at least `wanted` bytes each and
// exports it as a descriptor (*exported, which the caller closes).
Status createMulticast(int nranks, size_t wanted, NvlsResources* res, uint64_t* alignment, int* exported) {
  const CudaDriver& driver = cudaDriver();
  CUmulticastObjectProp prop{};
  prop.numDevices = static_cast<unsigned int>(nranks);
  prop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.size = wanted;
  size_t multicastGranularity = 0;
  WEFT_RETURN_IF_ERROR(
      driverStatus(driver.multicastGetGranularity(&multicastGranularity, &prop, CU_MULTICAST_GRANULARITY_MINIMUM),
                   "cuMulticastGetGranularity"));
  const CUmemAllocationProp memory = memoryProperties(res->device);
  size_t memoryGranularity = 0;
  WEFT_RETURN_IF_ERROR(
      driverStatus(driver.memGetAllocationGranularity(&memoryGranularity, &memory, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                   "cuMemGetAllocationGranularity"));
  const size_t granularity =
      std::lcm(std::max<size_t>(multicastGranularity, 1), std::max<size_t>(memoryGranularity, 1));
  prop.size = (wanted + granularity - 1) / granularity * granularity;
  WEFT_RETURN_IF_ERROR(driverStatus(driver.multicastCreate(&res->multicast, &prop), "cuMulticastCreate"));
  res->hasMulticast = true;
  res->bytes = prop.size;
  *alignment = granularity;
  return driverStatus(
      driver.memExportToShareableHandle(exported, res->multicast, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
      "cuMemExportToShareableHandle of the multicast object");
}

// Every other rank: takes rank 0's descriptor from `mailbox` and imports the object.
Status importMulticast(FdMailbox& mailbox, uint64_t tag, NvlsResources* res) {
  int fd = -1;
  WEFT_RETURN_IF_ERROR(mailbox.receive(tag, &fd));
  const Status imported = driverStatus(
      cudaDriver().memImportFromShareableHandle(&res->multicast, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
      "cuMemImportFromShareableHandle of rank 0's multicast object");
  ::close(fd);
  res->hasMulticast = imported.isOk();
  return imported;
}

// Reserves `bytes` of addresses aligned to `alignment`, maps `handle` there and lets `device`
// read and write it.
Status mapRange(CUmemGenericAllocationHandle handle, size_t bytes, size_t alignment, CUdevice device,
                CUdeviceptr* range, bool* reserved, bool* mapped, const char* what) {
  const CudaDriver& driver = cudaDriver();
  WEFT_RETURN_IF_ERROR(driverStatus(driver.memAddressReserve(range, bytes, alignment, 0, 0), what));
  *reserved = true;
  WEFT_RETURN_IF_ERROR(driverStatus(driver.memMap(*range, bytes, 0, handle, 0), what));
  *mapped = true;
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return driverStatus(driver.memSetAccess(*range, bytes, &access, 1), what);
}

// Zeroes the first `bytes` of device memory at `address` and waits for it.
Status zero(CUdeviceptr address, size_t bytes) {
  cudaStream_t stream = nullptr;
  WEFT_RETURN_IF_ERROR(cudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"));
  Status status = cudaStatus(cudaMemsetAsync(reinterpret_cast<void*>(address), 0, bytes, stream),
                             "cudaMemsetAsync of the NVLS barrier counters");
  if (status.isOk()) status = cudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  (void)cudaStreamDestroy(stream);
  return status;
}

// Every rank, once every GPU is in the object: creates this rank's memory, maps it, zeroes its
// barrier counters, binds it and maps the object.
Status bindMemory(uint64_t alignment, NvlsResources* res) {
  const CudaDriver& driver = cudaDriver();
  const CUmemAllocationProp prop = memoryProperties(res->device);
  WEFT_RETURN_IF_ERROR(driverStatus(driver.memCreate(&res->memory, res->bytes, &prop, 0), "cuMemCreate"));
  res->hasMemory = true;
  WEFT_RETURN_IF_ERROR(mapRange(res->memory, res->bytes, alignment, res->device, &res->unicastRange,
                                &res->unicastReserved, &res->unicastMapped, "mapping the NVLS memory"));
  WEFT_RETURN_IF_ERROR(zero(res->unicastRange, kNvlsControlBytes));
  WEFT_RETURN_IF_ERROR(
      driverStatus(driver.multicastBindMem(res->multicast, 0, res->memory, 0, res->bytes, 0), "cuMulticastBindMem"));
  res->bound = true;
  return mapRange(res->multicast, res->bytes, alignment, res->device, &res->multicastRange, &res->multicastReserved,
                  &res->multicastMapped, "mapping the multicast object");
}

}  // namespace

Status NvlsTeam::create(core::Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank, uint64_t tag,
                        int blocks, std::unique_ptr<NvlsTeam>* out) {
  out->reset();
  const int nranks = static_cast<int>(peers.size());
  std::unique_ptr<NvlsTeam> team(new NvlsTeam);
  team->resources_ = std::make_unique<NvlsResources>();
  team->blocks_ = std::clamp(blocks, 1, kMaxNvlsBlocks);
  team->nranks_ = nranks;
  NvlsResources& res = *team->resources_;
  res.ordinal = peers[rank].cudaDevice;
  RelaxedCapture relaxed;  // another thread may be capturing a graph: this setup is not part of it
  ScopedDevice current(res.ordinal);
  const CudaDriver& driver = cudaDriver();

  // 1: the object (rank 0) and the mailboxes (the others).
  std::vector<Opening> openings(nranks);
  Opening& mine = openings[rank];
  FdMailbox mailbox;
  int exported = -1;
  Status status = current.status();
  if (status.isOk() && !driver.hasMulticast()) {
    status = internalError("the CUDA driver has no multicast calls (NVLS needs a 12.1 driver or later)");
  }
  if (status.isOk()) status = driverStatus(driver.deviceGet(&res.device, peers[rank].cudaDevice), "cuDeviceGet");
  if (status.isOk() && rank == 0) {
    status = createMulticast(nranks, nvlsTeamBytes(team->blocks_), &res, &mine.alignment, &exported);
    mine.bytes = res.bytes;
  }
  if (status.isOk() && rank != 0) {
    status = FdMailbox::open(&mailbox);
    if (status.isOk()) std::snprintf(mine.mailbox, sizeof(mine.mailbox), "%s", mailbox.name().c_str());
  }
  record(status, &mine.report);
  Status gathered = bootstrap.allGather(openings.data(), sizeof(Opening));
  auto closeExported = [&exported] {
    if (exported >= 0) ::close(exported);
    exported = -1;
  };
  if (!gathered.isOk() || !everyRankDid(openings, rank, "open its part of the multicast team")) {
    closeExported();
    return gathered;
  }
  res.bytes = openings[0].bytes;
  const uint64_t alignment = openings[0].alignment;

  // 2: rank 0's descriptor to every mailbox.
  status = Status::ok();
  for (int r = 1; r < nranks && rank == 0 && status.isOk(); ++r) {
    status = FdMailbox::send(openings[r].mailbox, tag, exported);
  }
  closeExported();
  bool all = false;
  WEFT_RETURN_IF_ERROR(agree(bootstrap, rank, nranks, status, "hand out the multicast object", &all));
  if (!all) return Status::ok();

  // 3: every GPU into the object.
  status = rank == 0 ? Status::ok() : importMulticast(mailbox, tag, &res);
  if (status.isOk()) {
    status = driverStatus(driver.multicastAddDevice(res.multicast, res.device), "cuMulticastAddDevice");
  }
  WEFT_RETURN_IF_ERROR(agree(bootstrap, rank, nranks, status, "add its GPU to the multicast object", &all));
  if (!all) return Status::ok();

  // 4: every rank's memory bound and mapped.
  status = bindMemory(alignment, &res);
  WEFT_RETURN_IF_ERROR(agree(bootstrap, rank, nranks, status, "bind its memory to the multicast object", &all));
  if (!all) return Status::ok();

  team->unicast_ = reinterpret_cast<char*>(res.unicastRange);
  team->multicast_ = reinterpret_cast<char*>(res.multicastRange);
  WEFT_INFO(log::kInit, "rank %d: NVLS multicast team of %d GPUs, %zu bytes each, %d blocks", rank, nranks, res.bytes,
            team->blocks_);
  *out = std::move(team);
  return Status::ok();
}

NvlsTeam::~NvlsTeam() = default;

#else

struct NvlsResources {};

Status NvlsTeam::create(core::Bootstrap&, const std::vector<PeerInfo>&, int, uint64_t, int,
                        std::unique_ptr<NvlsTeam>* out) {
  out->reset();
  return internalError("this build of Weft has no CUDA, so no NVLS");
}

NvlsTeam::~NvlsTeam() = default;

#endif

}  // namespace weft::device
