#include "src/device/stream_capture.h"

#include "transport/cuda_ipc/cuda_call.h"

namespace weft::device {

Status streamCapture(cudaStream_t stream, StreamCapture* out) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  cudaGraph_t graph = nullptr;
  const cudaError_t error = cudaStreamGetCaptureInfo(stream, &status, &id, &graph);
  if (error == cudaErrorStreamCaptureImplicit) {
    (void)cudaGetLastError();
    return invalidUsage("a call on GPU buffers was given the legacy default stream while another stream captures a "
                        "CUDA graph, which CUDA forbids; give the call a stream of its own");
  }
  WEFT_RETURN_IF_ERROR(cudaStatus(error, "cudaStreamGetCaptureInfo"));
  if (status == cudaStreamCaptureStatusInvalidated) {
    return invalidUsage("the CUDA graph capture on this call's stream was invalidated by an earlier call: end it "
                        "(cudaStreamEndCapture fails) and capture again");
  }
  out->active = status == cudaStreamCaptureStatusActive;
  out->id = out->active ? id : 0;  // CUDA sets them only for an active capture
  out->graph = out->active ? graph : nullptr;
  return Status::ok();
}

}  // namespace weft::device
