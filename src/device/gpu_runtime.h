#pragma once
// What the GPU path needs to know about the machine and about a buffer, in every build: a build
// without CUDA, or a machine without a GPU or driver, answers "no GPU" and "host memory".

namespace weft::device {

/// True where this build has the GPU path and the machine has a usable CUDA device. Asked of the
/// CUDA runtime once per process; cheap afterwards.
bool gpuAvailable();

/// The number of CUDA devices (0 where gpuAvailable() is false).
int deviceCount();

/// The CUDA device current on the calling thread, or -1 where there is none.
int currentDevice();

/// True if `ptr` takes the stream path: device, managed, or page-locked (cudaHostAlloc,
/// cudaHostRegister) host memory. False for ordinary host memory, for null, and always where
/// gpuAvailable() is false.
bool onDevice(const void* ptr);

}  // namespace weft::device
