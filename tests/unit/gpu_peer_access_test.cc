// Which ranks may exchange GPU buffers (src/core/gpu_peer_access.h): NCCL_P2P_DISABLE and
// NCCL_P2P_LEVEL against the paths of a real two-socket PCIe server (NCCL_TOPO_FILE), ranks on
// different hosts (the network proxy, which the settings do not govern), and what each refusal says.

#include "src/core/gpu_peer_access.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tests/harness/scoped_env.h"
#include "topology/load.h"

namespace weft::core {
namespace {

class GpuPeerAccess : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = (std::filesystem::path(__FILE__).parent_path() / "../../../shared/topologies" /
             "hwloc-aws-g4dn-metal-t4x8.xml")
                .string();
    if (!std::filesystem::exists(file_)) {
      GTEST_SKIP() << file_ << " is absent: the real topology files live beside the project's clone "
                   << "(../shared/topologies), as in CI";
    }
    ASSERT_TRUE(topology::loadSystem(file_, &system_).isOk());
  }

  // A rank on host `host` using GPU `gpu` of the file (GPUs 0-3 hang under socket 0, 4-7 under 1).
  PeerInfo rankOn(int rank, const std::string& host, int gpu) const {
    PeerInfo peer;
    peer.rank = rank;
    std::snprintf(peer.hostId, sizeof(peer.hostId), "%s", host.c_str());
    std::snprintf(peer.hostname, sizeof(peer.hostname), "%s", host.c_str());
    peer.hostHash = std::hash<std::string>{}(host);
    peer.cudaDevice = gpu;
    const int node = system_.nodesOfType(topology::NodeType::kGpu)[gpu];
    std::snprintf(peer.gpuBusId, sizeof(peer.gpuBusId), "%s", system_.node(node).pci->busId.c_str());
    return peer;
  }

  // checkGpuPeerAccess with NCCL_TOPO_FILE set to the server and the given settings (null: unset).
  Status check(const std::vector<PeerInfo>& peers, const char* disable, const char* level) const {
    auto value = [](const char* text) { return text ? std::optional<std::string>(text) : std::nullopt; };
    harness::ScopedEnv env({{"NCCL_TOPO_FILE", file_}, {"NCCL_P2P_DISABLE", value(disable)},
                            {"NCCL_P2P_LEVEL", value(level)}});
    return checkGpuPeerAccess(peers);
  }

  std::string file_;
  topology::System system_;
};

#if WEFT_CUDA

TEST_F(GpuPeerAccess, WithoutSettingsAnyTwoGpusOfAHostMay) {
  EXPECT_TRUE(check({rankOn(0, "a", 0), rankOn(1, "a", 5)}, nullptr, nullptr).isOk());
  EXPECT_TRUE(check({rankOn(0, "a", 2)}, "1", "LOC").isOk());  // one rank: no pair to refuse
}

TEST_F(GpuPeerAccess, TheLevelIsTheWorstPathAllowed) {
  const std::vector<PeerInfo> sameSocket = {rankOn(0, "a", 0), rankOn(1, "a", 3)};     // PHB
  const std::vector<PeerInfo> acrossSockets = {rankOn(0, "a", 1), rankOn(1, "a", 6)};  // SYS
  EXPECT_TRUE(check(sameSocket, nullptr, "PHB").isOk());
  EXPECT_TRUE(check(acrossSockets, nullptr, "sys").isOk());
  EXPECT_TRUE(check(acrossSockets, nullptr, "4").isOk());  // NCCL's legacy number for SYS
  EXPECT_FALSE(check(sameSocket, nullptr, "PIX").isOk());
  EXPECT_FALSE(check(sameSocket, nullptr, "LOC").isOk());  // never
  const Status refused = check(acrossSockets, nullptr, "3");  // PHB
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.code(), StatusCode::kInvalidUsage);
  for (const char* word : {"NCCL_P2P_LEVEL=3", "rank 0", "rank 1", "path is SYS", "NCCL_P2P_LEVEL=SYS",
                           "host buffers"}) {
    EXPECT_NE(refused.message().find(word), std::string::npos) << word << " not in: " << refused.message();
  }
  EXPECT_NE(refused.message().find(rankOn(1, "a", 6).gpuBusId), std::string::npos) << refused.message();
}

TEST_F(GpuPeerAccess, OneForbiddenPairRefusesTheWholeCommunicator) {
  // Three ranks on socket 0 and one on socket 1, PHB allowed: the SYS pairs refuse.
  const Status status =
      check({rankOn(0, "a", 0), rankOn(1, "a", 1), rankOn(2, "a", 2), rankOn(3, "a", 7)}, nullptr, "PHB");
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("rank 3"), std::string::npos) << status.message();
}

TEST_F(GpuPeerAccess, P2pDisableRefusesEveryPair) {
  const Status status = check({rankOn(0, "a", 0), rankOn(1, "a", 1)}, "1", nullptr);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("NCCL_P2P_DISABLE=1"), std::string::npos) << status.message();
  EXPECT_TRUE(check({rankOn(0, "a", 0), rankOn(1, "a", 1)}, "0", nullptr).isOk());
}

TEST_F(GpuPeerAccess, ABadLevelIsAnInvalidArgumentListingTheLevels) {
  const Status status = check({rankOn(0, "a", 0), rankOn(1, "a", 1)}, nullptr, "NVLINK");
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("LOC, NVL, PIX, PXB, PHB or SYS"), std::string::npos) << status.message();
}

TEST_F(GpuPeerAccess, RanksOnDifferentHostsTakeTheNetworkProxyWhateverTheP2pSettings) {
  EXPECT_TRUE(check({rankOn(0, "a", 0), rankOn(1, "b", 0)}, nullptr, nullptr).isOk());
  EXPECT_TRUE(check({rankOn(0, "a", 0), rankOn(1, "b", 7)}, "1", "LOC").isOk());
  // Two hosts of two ranks: the settings still govern each host's pair.
  const Status status = check({rankOn(0, "a", 0), rankOn(1, "b", 0), rankOn(2, "a", 1), rankOn(3, "b", 1)}, "1",
                              nullptr);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("rank 0"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("rank 2"), std::string::npos) << status.message();
}

TEST_F(GpuPeerAccess, RanksWithoutAGpuAreRefused) {
  PeerInfo noGpu = rankOn(1, "a", 1);
  noGpu.cudaDevice = -1;
  noGpu.gpuBusId[0] = '\0';
  EXPECT_FALSE(check({rankOn(0, "a", 0), noGpu}, nullptr, nullptr).isOk());
}

TEST_F(GpuPeerAccess, AGpuTheFileDoesNotListIsNamed) {
  PeerInfo stranger = rankOn(1, "a", 1);
  std::snprintf(stranger.gpuBusId, sizeof(stranger.gpuBusId), "0000:ee:00.0");
  const Status status = check({rankOn(0, "a", 0), stranger}, nullptr, "SYS");
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("0000:ee:00.0"), std::string::npos) << status.message();
}

#else

TEST_F(GpuPeerAccess, ABuildWithoutCudaRefusesGpuBuffersSayingWhy) {
  const Status status = check({rankOn(0, "a", 0), rankOn(1, "a", 1)}, nullptr, nullptr);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("without CUDA"), std::string::npos) << status.message();
}

#endif

}  // namespace
}  // namespace weft::core
