#include "src/device/gpu_protocol.h"

namespace weft::device {

Status chooseGpuProtocol(const GpuProtocolInputs& inputs, const char* collective, bool* lowLatency) {
  const bool lowLatencyRuns = inputs.lowLatencyAllowed && inputs.oneHost && inputs.hasLowLatencySlots;
  if (!inputs.simpleAllowed && !lowLatencyRuns) {
    const char* why = !inputs.lowLatencyAllowed ? "NCCL_PROTO allows neither Simple nor LL for it"
                      : !inputs.oneHost         ? "LL does not cross hosts on GPU buffers yet (the network proxy "
                                                  "carries Simple pieces)"
                                                : "NCCL_LL_BUFFSIZE is below 512 bytes (8 LL slots of 64)";
    return invalidUsage("NCCL_PROTO excludes Simple for %s on GPU buffers, and LL cannot run: %s; allow simple",
                        collective, why);
  }
  *lowLatency = lowLatencyRuns && (!inputs.simpleAllowed || inputs.bytes <= inputs.lowLatencyMaxBytes);
  return Status::ok();
}

}  // namespace weft::device
