#pragma once
// Whether a stream is being captured into a CUDA graph, and leave for a thread to make the calls
// that capture's default modes forbid.

#include <cuda_runtime_api.h>

#include "src/base/status.h"

namespace weft::device {

/// Whether what is enqueued on a stream now is captured into a CUDA graph, and into which.
struct StreamCapture {
  bool active = false;
  unsigned long long id = 0;  // unique to the capture sequence, for the process's lifetime
  cudaGraph_t graph = nullptr;
};

/// The capture `stream` is in. An error for the legacy default stream while another stream
/// captures, and for a capture that an earlier call invalidated.
Status streamCapture(cudaStream_t stream, StreamCapture* out);

/// While it lives, this thread may make calls that CUDA's default capture modes forbid while a
/// stream captures (allocations, setup's waits for peers): they are not part of any graph.
class RelaxedCapture {
 public:
  RelaxedCapture() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCapture() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;  // the thread's own while this lives
};

}  // namespace weft::device
