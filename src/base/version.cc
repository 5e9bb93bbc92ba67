#include "src/base/version.h"

namespace weft {

const char* versionBanner() {
#if WEFT_CUDA
  return "Weft 0.1.0 (NCCL API 2.28.9, host memory and CUDA GPUs)";
#else
  return "Weft 0.1.0 (NCCL API 2.28.9, host memory)";
#endif
}

}  // namespace weft
