// NCCL_CHECK_POINTERS' check: device memory of another GPU than the communicator's is refused,
// naming the buffer and both GPUs; memory of its GPU, other memory, or a rank without a GPU pass.

#include "src/core/pointer_check.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::core {
namespace {

TEST(PointerCheck, AnotherGpusMemoryIsRefusedNamingBoth) {
  int buffer = 0;
  const Status refused = checkBufferDevice("recvbuff", &buffer, 1, 3, 0);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("recvbuff"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("device 1"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("rank 3 of this communicator uses device 0"), std::string::npos)
      << refused.message();
}

TEST(PointerCheck, TheCommunicatorsGpuOtherMemoryAndNoGpuPass) {
  int buffer = 0;
  EXPECT_TRUE(checkBufferDevice("sendbuff", &buffer, 2, 0, 2).isOk());
  EXPECT_TRUE(checkBufferDevice("sendbuff", &buffer, -1, 0, 2).isOk()) << "managed, page-locked or host memory";
  EXPECT_TRUE(checkBufferDevice("sendbuff", &buffer, 1, 0, -1).isOk()) << "a rank without a GPU";
}

}  // namespace
}  // namespace weft::core
