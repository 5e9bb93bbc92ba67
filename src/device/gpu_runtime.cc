#include "src/device/gpu_runtime.h"

#if WEFT_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "src/base/log.h"
#include "src/device/cuda_driver.h"
#include "src/device/stream_capture.h"
#include "transport/cuda_ipc/cuda_call.h"
#endif

#include <atomic>

namespace weft::device {

#if WEFT_CUDA

int deviceCount() {
  // The runtime loads the driver on first use; without one it answers an error, once.
  static const int count = [] {
    int devices = 0;
    const cudaError_t error = cudaGetDeviceCount(&devices);
    if (error == cudaSuccess) return devices;
    (void)cudaGetLastError();
    int driver = 0;  // 0 where no driver is installed
    if (cudaDriverGetVersion(&driver) != cudaSuccess) {
      (void)cudaGetLastError();
      driver = 0;
    }
    // No driver or no GPU: a host-memory machine. Otherwise the application may use GPUs through a
    // runtime of its own that Weft's cannot: Weft would take their buffers for host memory.
    if (driver == 0 || error == cudaErrorNoDevice) return 0;
    WEFT_WARN("Weft's CUDA runtime (%d.%d) could not start under driver %d.%d (%s): Weft sees no GPU, and a call "
              "on GPU buffers would take them for host memory and crash.%s",
              CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, driver / 1000, driver % 1000 / 10,
              cudaGetErrorString(error),
              error == cudaErrorInsufficientDriver     ? " Update the driver, or build Weft with a CUDA toolkit this "
                                                         "driver supports"
              : error == cudaErrorInitializationError ? " (A process forked from one that had started CUDA cannot "
                                                         "use it.)"
                                                       : "");
    return 0;
  }();
  return count;
}

bool gpuAvailable() { return deviceCount() > 0; }

int currentDevice() {
  if (!gpuAvailable()) return -1;
  // The driver's answer is the application's: its runtime and Weft's (a copy of its own) share the
  // thread's current context, not what each last selected. None current: CUDA's default, 0.
  void* context = nullptr;
  if (currentContext(&context)) {
    if (context == nullptr) return 0;
    const int device = currentContextDevice();
    if (device >= 0) return device;
  }
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return device;
}

std::string pciBusId(int device) {
  if (device < 0 || device >= deviceCount()) return "";
  char busId[32] = "";
  if (cudaDeviceGetPCIBusId(busId, sizeof(busId), device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  return busId;
}

Status memoryKind(const void* ptr, const char* what, MemoryKind* out, int* device) {
  *out = MemoryKind::kHost;
  if (device != nullptr) *device = -1;
  // Without a context no buffer can be GPU, managed or page-locked memory; asking CUDA would
  // create one, and a host-memory program would then get device memory from ncclMemAlloc.
  if (ptr == nullptr || !anyDeviceInUse()) return Status::ok();
  cudaPointerAttributes attributes{};
  const cudaError_t error = cudaPointerGetAttributes(&attributes, ptr);
  // Ordinary host memory is cudaSuccess and unregistered; a process forked from one that started
  // CUDA cannot use CUDA, so its buffers are host memory.
  if (error == cudaErrorInvalidValue || error == cudaErrorInitializationError) {
    (void)cudaGetLastError();
    return Status::ok();
  }
  if (error != cudaSuccess) {
    const Status failed = cudaStatus(error, "cudaPointerGetAttributes");
    return makeStatus(failed.code(), "whether %s %p is GPU memory is unknown: %s", what, ptr, failed.message().c_str());
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      *out = MemoryKind::kDevice;
      if (device != nullptr) *device = attributes.device;
      break;
    case cudaMemoryTypeManaged: *out = MemoryKind::kManaged; break;
    case cudaMemoryTypeHost: *out = MemoryKind::kPageLocked; break;
    default: break;
  }
  return Status::ok();
}

bool inUse(int device) {
  if (device < 0 || device >= deviceCount()) return false;
  // Through the driver: the runtime has no call that leaves contexts alone.
  const CudaDriver& driver = cudaDriver();
  if (driver.deviceGet == nullptr || driver.devicePrimaryCtxGetState == nullptr) return false;
  CUdevice handle = 0;
  unsigned int flags = 0;
  int active = 0;
  return driver.deviceGet(&handle, device) == CUDA_SUCCESS &&
         driver.devicePrimaryCtxGetState(handle, &flags, &active) == CUDA_SUCCESS && active != 0;
}

namespace {

// CUDA device `device`'s `attribute`, asked of the driver (which creates no context); 0 where there
// is no such device or the driver cannot say.
int driverAttribute(int device, CUdevice_attribute attribute) {
  if (device < 0 || device >= deviceCount()) return 0;
  const CudaDriver& driver = cudaDriver();
  if (driver.deviceGet == nullptr || driver.deviceGetAttribute == nullptr) return 0;
  CUdevice handle = 0;
  int value = 0;
  if (driver.deviceGet(&handle, device) != CUDA_SUCCESS) return 0;
  return driver.deviceGetAttribute(&value, attribute, handle) == CUDA_SUCCESS ? value : 0;
}

}  // namespace

bool multicastSupported(int device) {
  // A driver older than 12.1 has no multicast entry points.
  return cudaDriver().hasMulticast() && driverAttribute(device, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED) != 0;
}

int multiprocessorCount(int device) { return driverAttribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT); }

namespace {

// Runs `call` in the thread's current context (the application's, primary or not), or where it
// has none in `device`'s primary one, as the application's runtime would (Weft's may remember
// another device that it selected on this thread), and leaves the thread without one again.
template <class Call>
Status inApplicationContext(int device, const Call& call) {
  void* context = nullptr;
  if (!currentContext(&context) || context != nullptr) return call();
  ScopedDevice selected(device);
  WEFT_RETURN_IF_ERROR(selected.status());
  return call();
}

}  // namespace

Status allocateOnDevice(size_t bytes, void** out, int* device) {
  return inApplicationContext(0, [&] {
    *device = currentDevice();
    return cudaStatus(cudaMalloc(out, bytes), "cudaMalloc of ncclMemAlloc's memory");
  });
}

Status freeOnDevice(void* ptr, int device) {
  return inApplicationContext(device,
                              [&] { return cudaStatus(cudaFree(ptr), "cudaFree of ncclMemAlloc's memory"); });
}

void useDevice(int device) {
  if (device < 0 || device >= deviceCount() || inUse(device)) return;
  RelaxedCapture relaxed;  // another thread may be capturing a graph: this is not part of it
  ScopedDevice selected(device);
  if (!selected.status().isOk() || cudaFree(nullptr) != cudaSuccess) (void)cudaGetLastError();
}

void* threadContext() {
  void* context = nullptr;
  return gpuAvailable() && currentContext(&context) ? context : nullptr;
}

void adoptContext(void* context) {
  if (context != nullptr) restoreContext(context);
}

bool isPerThreadStream(const void* stream) { return stream == static_cast<const void*>(cudaStreamPerThread); }

bool isCapturing(const void* stream) {
  // The legacy stream cannot be captured, and asking about it while another stream captures is an
  // error that could end that capture.
  if (stream == nullptr || stream == static_cast<const void*>(cudaStreamLegacy) || !anyDeviceInUse()) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(static_cast<cudaStream_t>(const_cast<void*>(stream)), &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return status != cudaStreamCaptureStatusNone;
}

bool anyDeviceInUse() {
  // Once a primary context is active it stays so (short of cudaDeviceReset): ask the driver until
  // then. A context of the application's own counts only on the thread where it is current: asked
  // on another thread, the runtime would make device 0's primary context.
  static std::atomic<bool> primarySeen{false};
  if (primarySeen.load(std::memory_order_relaxed)) return true;
  for (int device = 0; device < deviceCount(); ++device) {
    if (inUse(device)) {
      primarySeen.store(true, std::memory_order_relaxed);
      return true;
    }
  }
  void* context = nullptr;
  return gpuAvailable() && currentContext(&context) && context != nullptr;
}

#else

int deviceCount() { return 0; }
bool gpuAvailable() { return false; }
int currentDevice() { return -1; }
std::string pciBusId(int) { return ""; }
Status memoryKind(const void*, const char*, MemoryKind* out, int* device) {
  *out = MemoryKind::kHost;
  if (device != nullptr) *device = -1;
  return Status::ok();
}
bool inUse(int) { return false; }
void useDevice(int) {}
bool multicastSupported(int) { return false; }
int multiprocessorCount(int) { return 0; }
bool anyDeviceInUse() { return false; }
void* threadContext() { return nullptr; }
void adoptContext(void*) {}
bool isPerThreadStream(const void*) { return false; }
bool isCapturing(const void*) { return false; }
Status preloadKernelsIfInUse(int) { return Status::ok(); }
Status preloadKernels(int) { return Status::ok(); }
Status allocateOnDevice(size_t, void**, int*) { return internalError("this build of Weft has no CUDA"); }
Status freeOnDevice(void*, int) { return internalError("this build of Weft has no CUDA"); }

#endif

}  // namespace weft::device
