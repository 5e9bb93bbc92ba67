// Peer to peer between GPUs of one host (topology/p2p.h): NCCL_P2P_LEVEL and NCCL_P2P_DISABLE, on
// the project's flattened A100 fixture (a PCIe switch per pair of GPUs, two sockets).

#include "topology/p2p.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/harness/scoped_env.h"
#include "tests/unit/topology_fixture.h"

namespace weft::topology {
namespace {

class P2pLevels : public ::testing::Test {
 protected:
  void SetUp() override {
    system_ = tests::loadTopologyFixture("flattened-a100x8.xml");
    ASSERT_FALSE(HasFailure());
    paths_.emplace(system_);
    gpus_ = system_.nodesOfType(NodeType::kGpu);
    ASSERT_EQ(gpus_.size(), 8u);
  }
  // How many ordered pairs of distinct GPUs `policy` allows.
  int allowedPairs(const P2pPolicy& policy) const {
    int allowed = 0;
    for (int a : gpus_) {
      for (int b : gpus_) allowed += a != b && p2pAllowed(*paths_, a, b, policy) ? 1 : 0;
    }
    return allowed;
  }

  System system_;
  std::optional<Paths> paths_;
  std::vector<int> gpus_;
};

TEST_F(P2pLevels, TheLevelIsTheWorstPathAllowed) {
  EXPECT_EQ(allowedPairs(P2pPolicy{}), 8 * 7);                    // unset: any path on the host
  EXPECT_EQ(allowedPairs(P2pPolicy{PathType::kSys, ""}), 8 * 7);
  EXPECT_EQ(allowedPairs(P2pPolicy{PathType::kPhb, ""}), 2 * 4 * 3);  // within a socket
  EXPECT_EQ(allowedPairs(P2pPolicy{PathType::kPix, ""}), 8);          // the GPU beside on its switch
  EXPECT_EQ(allowedPairs(P2pPolicy{PathType::kLoc, ""}), 0);          // never
}

TEST(P2pKnobs, DisableWinsAndALevelTakesNcclsNames) {
  P2pPolicy policy;
  {
    harness::ScopedEnv env({{"NCCL_P2P_DISABLE", std::nullopt}, {"NCCL_P2P_LEVEL", std::nullopt}});
    ASSERT_TRUE(p2pPolicyFromKnobs(&policy).isOk());
    EXPECT_FALSE(policy.level.has_value());
    EXPECT_EQ(policy.setting, "");
  }
  {
    harness::ScopedEnv env({{"NCCL_P2P_DISABLE", "1"}, {"NCCL_P2P_LEVEL", "SYS"}});
    ASSERT_TRUE(p2pPolicyFromKnobs(&policy).isOk());
    EXPECT_EQ(policy.level, PathType::kLoc);
    EXPECT_EQ(policy.setting, "NCCL_P2P_DISABLE=1");
  }
  {
    harness::ScopedEnv env({{"NCCL_P2P_DISABLE", "0"}, {"NCCL_P2P_LEVEL", "pxb"}});
    ASSERT_TRUE(p2pPolicyFromKnobs(&policy).isOk());
    EXPECT_EQ(policy.level, PathType::kPxb);
    EXPECT_EQ(policy.setting, "NCCL_P2P_LEVEL=pxb");
  }
  {
    harness::ScopedEnv env({{"NCCL_P2P_DISABLE", std::nullopt}, {"NCCL_P2P_LEVEL", "near"}});
    const Status status = p2pPolicyFromKnobs(&policy);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("NCCL_P2P_LEVEL=near is not a level"), std::string::npos) << status.message();
  }
}

}  // namespace
}  // namespace weft::topology
