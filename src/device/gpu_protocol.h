#pragma once
// Which protocol a collective on GPU buffers moves its pieces with (every build has this; the GPU
// executor uses it). Simple fills a slot and then publishes a counter; LL writes 16-byte lines
// that carry their own flags, so a receiver needs no fence and no counter, at half the bytes per
// line (src/device/kernel_work.h).

#include <cstddef>

#include "src/base/status.h"

namespace weft::device {

struct GpuProtocolInputs {
  bool simpleAllowed = true;  // by NCCL_PROTO, for the collective
  bool lowLatencyAllowed = true;
  /// Every rank on one host: the network proxy between hosts carries Simple pieces only.
  bool oneHost = true;
  bool hasLowLatencySlots = true;  // NCCL_LL_BUFFSIZE makes LL slots (at least 512 bytes)
  size_t bytes = 0;                // the call's count times its element size
  size_t lowLatencyMaxBytes = 0;   // WEFT_GPU_LL_MAX_BYTES
};

/// Sets *lowLatency: LL where it can run and either NCCL_PROTO leaves no Simple or the call is at
/// most lowLatencyMaxBytes; Simple otherwise. An ncclInvalidUsage error, saying why, where
/// NCCL_PROTO allows only LL and LL cannot run. The same on every rank for the same call.
Status chooseGpuProtocol(const GpuProtocolInputs& inputs, const char* collective, bool* lowLatency);

}  // namespace weft::device
