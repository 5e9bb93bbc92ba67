#include "src/base/version.h"

namespace weft {

const char* versionBanner() { return "Weft 0.1.0 (NCCL API 2.28.9, host memory)"; }

}  // namespace weft
