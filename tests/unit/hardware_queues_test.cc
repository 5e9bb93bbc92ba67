#include "src/device/hardware_queues.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weft::device {
namespace {

// A rank of process `pid` on machine 1 with CUDA device `device` (-1: none).
PeerInfo rankOf(int pid, int device) {
  PeerInfo peer;
  peer.machineHash = 1;
  peer.pid = pid;
  peer.processNonce = 7;
  peer.cudaDevice = device;
  return peer;
}

TEST(HardwareQueues, RanksOfOneProcessOnOneGpuAskForEveryQueue) {
  const std::vector<PeerInfo> sharing = {rankOf(10, 1), rankOf(11, 0), rankOf(10, 1)};
  const std::string unset = hardwareQueueWarning(sharing, 2, nullptr);
  EXPECT_NE(unset.find("CUDA_DEVICE_MAX_CONNECTIONS=8 (unset)"), std::string::npos) << unset;
  EXPECT_NE(unset.find("set CUDA_DEVICE_MAX_CONNECTIONS=32 before the process first uses CUDA"), std::string::npos)
      << unset;
  EXPECT_NE(hardwareQueueWarning(sharing, 0, "16").find("CUDA_DEVICE_MAX_CONNECTIONS=16:"), std::string::npos);
  EXPECT_NE(hardwareQueueWarning(sharing, 0, "").find("(unset)"), std::string::npos);
  EXPECT_EQ(hardwareQueueWarning(sharing, 0, "32"), "");
  EXPECT_EQ(hardwareQueueWarning(sharing, 1, nullptr), "");  // process 11's rank has its GPU to itself
}

TEST(HardwareQueues, OthersNeedNothing) {
  EXPECT_EQ(hardwareQueueWarning({rankOf(10, 0)}, 0, nullptr), "");                  // one rank
  EXPECT_EQ(hardwareQueueWarning({rankOf(10, 0), rankOf(11, 0)}, 0, nullptr), "");   // processes of their own
  EXPECT_EQ(hardwareQueueWarning({rankOf(10, 0), rankOf(10, 1)}, 0, nullptr), "");   // a GPU each
  EXPECT_EQ(hardwareQueueWarning({rankOf(10, -1), rankOf(10, -1)}, 0, nullptr), "");  // no GPU
}

}  // namespace
}  // namespace weft::device
