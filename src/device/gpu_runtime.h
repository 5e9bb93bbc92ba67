#pragma once
// What the GPU path needs to know about the machine and about a buffer, in every build: a build
// without CUDA, or a machine without a GPU or driver, answers "no GPU" and "host memory".

#include <string>

#include "src/base/status.h"

namespace weft::device {

/// True where this build has the GPU path and the machine has a usable CUDA device. Asked of the
/// CUDA runtime once per process; cheap afterwards.
bool gpuAvailable();

/// The number of CUDA devices (0 where gpuAvailable() is false).
int deviceCount();

/// The CUDA device of the calling thread's current context (0, CUDA's default, on a thread with
/// none), or -1 without a GPU.
int currentDevice();

/// The PCI bus id of CUDA device `device` as CUDA writes it ("0000:3B:00.0"), or "" where there is
/// no such device (or no CUDA).
std::string pciBusId(int device);

/// What a buffer is, as the GPU path sees it.
enum class MemoryKind {
  kHost,        // ordinary host memory: the host path
  kDevice,      // device memory (cudaMalloc), which the host cannot read
  kManaged,     // managed memory (cudaMallocManaged)
  kPageLocked,  // page-locked host memory (cudaHostAlloc, cudaHostRegister), which the GPU reaches
};

/// Whether a buffer of `kind` takes the stream path: every kind but ordinary host memory.
inline bool takesStreamPath(MemoryKind kind) { return kind != MemoryKind::kHost; }

/// What `ptr` is, and where `device` is given, the CUDA device of kDevice memory (-1 for any other
/// kind). kHost for null, and wherever the process uses no CUDA (anyDeviceInUse): then it asks
/// CUDA nothing, so it creates no context. An error naming `what` (e.g. "sendbuff") where CUDA
/// cannot say, as after a kernel fault that left the context unusable: the buffer must not be
/// taken for host memory.
Status memoryKind(const void* ptr, const char* what, MemoryKind* out, int* device = nullptr);

/// True if this process already uses CUDA device `device`: its primary context is active (the
/// program has allocated, launched or set the device). Creates no context. False without CUDA.
bool inUse(int device);

/// Makes this process use CUDA device `device` (its primary context active, as selecting it does),
/// leaving the calling thread's current device as it was. For ncclCommInitAll given a device list:
/// the caller named its GPUs, and NCCL's selects each. Nothing where there is no such device (or
/// no CUDA); a failure is the first GPU call's to report.
void useDevice(int device);

/// True if CUDA device `device` reports multicast objects (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED),
/// which NVLS needs. Creates no context. False without CUDA.
bool multicastSupported(int device);

/// The number of multiprocessors of CUDA device `device`, or 0 where there is no such device (or
/// no CUDA). Creates no context.
int multiprocessorCount(int device);

/// True if this process uses CUDA: a device's primary context is active (inUse), or the calling
/// thread has a context current (one the application made with cuCtxCreate; not remembered for
/// other threads). Creates no context.
bool anyDeviceInUse();

/// The calling thread's current CUDA context, for adoptContext on another thread; null where it
/// has none (or there is no CUDA). Creates no context.
void* threadContext();

/// Makes `context` (threadContext's; null: nothing) current on the calling thread. A thread of
/// Weft's that works for a caller (a nonblocking launch, a group's inits) runs in the caller's
/// context, as a blocking call would: on a thread with none, the runtime's first call would make
/// device 0's primary context, on a GPU the process may never use.
void adoptContext(void* context);

/// True if `stream` is cudaStreamPerThread, which names the calling thread's own stream. False
/// without CUDA.
bool isPerThreadStream(const void* stream);

/// True if the process uses CUDA (anyDeviceInUse) and `stream` (a cudaStream_t) is being captured
/// into a CUDA graph. Creates no context; false without CUDA, or where CUDA cannot say.
bool isCapturing(const void* stream);

/// `bytes` of device memory on the device current on the calling thread (device 0 on a thread
/// with no context), which it writes to *device (cudaMalloc, which CUDA IPC can export). An error
/// where the build has no CUDA or the allocation fails.
Status allocateOnDevice(size_t bytes, void** out, int* device);

/// Frees what allocateOnDevice gave on `device`: in the calling thread's current context, or in
/// `device`'s where it has none (so that a thread that never used CUDA starts no other GPU's).
Status freeOnDevice(void* ptr, int device);

/// During the init of a communicator whose rank has CUDA device `device`: if the process already
/// uses that device, loads the step kernels onto it (once per process and device), so that no
/// first launch has to load code while a peer's kernel waits (CUDA's lazy loading). A process
/// that has not touched the device gets no context from Weft here; its kernels load at its first
/// call on GPU buffers. Without CUDA: does nothing.
Status preloadKernelsIfInUse(int device);

/// Loads the step kernels onto `device` (once per process and device) whether or not the process
/// used it before: where a communicator's GPU resources are made at its first call on GPU
/// buffers, before its first kernel. Without CUDA: does nothing.
Status preloadKernels(int device);

}  // namespace weft::device
