// NCCL_PROTO: NCCL's protocol names in the syntax NCCL_ALGO shares (algorithms/collective_filter.h).
#include "algorithms/protocol_filter.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::algorithms {
namespace {

ProtocolFilter parsed(const char* text) {
  ProtocolFilter filter;
  Status status = parseProtocolFilter(text, &filter);
  EXPECT_TRUE(status.isOk()) << text << ": " << status.message();
  return filter;
}

TEST(ProtocolFilter, UnsetAllowsEveryProtocol) {
  ProtocolFilter filter = parsed("");
  for (Protocol protocol : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
    EXPECT_TRUE(filter.allows(Collective::kAllReduce, protocol)) << protocolName(protocol);
  }
}

TEST(ProtocolFilter, ListsExclusionsAndClausesAsNcclWritesThem) {
  ProtocolFilter simple = parsed("Simple");
  EXPECT_TRUE(simple.allows(Collective::kBroadcast, Protocol::kSimple));
  EXPECT_FALSE(simple.allows(Collective::kBroadcast, Protocol::kLL));
  ProtocolFilter noLl128 = parsed("^LL128");
  EXPECT_TRUE(noLl128.allows(Collective::kAllReduce, Protocol::kSimple));
  EXPECT_TRUE(noLl128.allows(Collective::kAllReduce, Protocol::kLL));
  EXPECT_FALSE(noLl128.allows(Collective::kAllReduce, Protocol::kLL128));
  ProtocolFilter perCollective = parsed("allreduce:ll;broadcast:simple,ll128");
  EXPECT_FALSE(perCollective.allows(Collective::kAllReduce, Protocol::kSimple));
  EXPECT_TRUE(perCollective.allows(Collective::kBroadcast, Protocol::kSimple));
  EXPECT_TRUE(perCollective.allows(Collective::kAllGather, Protocol::kLL)) << "a collective not named keeps all";
}

TEST(ProtocolFilter, BadValuesNameTheKnobAndTheProtocols) {
  for (const char* bad : {"fast", "^ll,ll128,simple", "allreduce", "bcast:simple"}) {
    ProtocolFilter filter;
    Status status = parseProtocolFilter(bad, &filter);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find(std::string("NCCL_PROTO=") + bad), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("LL, LL128, Simple"), std::string::npos) << status.message();
  }
}

}  // namespace
}  // namespace weft::algorithms
