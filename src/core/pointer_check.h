#pragma once
// NCCL_CHECK_POINTERS=1 (read when a communicator is made), as NCCL has it: a call's device memory
// must be memory of its communicator's GPU. A kernel that reads another GPU's memory faults unless
// the program enabled peer access between the two, and a fault ends the whole context. Off by
// default, as NCCL's: a program with peer access enabled may pass another GPU's memory on purpose.

#include "src/base/status.h"

namespace weft::core {

/// kInvalidArgument, naming `what` (e.g. "sendbuff") at `ptr` and both GPUs, where `bufferDevice`
/// (the CUDA device of device memory; -1 for any other memory) is a GPU other than `commDevice`,
/// the one rank `rank` of the communicator uses (-1: none, and nothing to check against).
Status checkBufferDevice(const char* what, const void* ptr, int bufferDevice, int rank, int commDevice);

}  // namespace weft::core
