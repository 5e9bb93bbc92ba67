// Which protocol a collective on GPU buffers takes (src/device/gpu_protocol.h): LL for small calls
// on one host where NCCL_PROTO allows it, Simple otherwise, and a clear refusal where NCCL_PROTO
// leaves only LL and LL cannot run.

#include "src/device/gpu_protocol.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::device {
namespace {

GpuProtocolInputs smallCallOnOneHost() {
  GpuProtocolInputs inputs;
  inputs.bytes = 4096;
  inputs.lowLatencyMaxBytes = 65536;
  return inputs;
}

bool chosenLowLatency(const GpuProtocolInputs& inputs) {
  bool lowLatency = false;
  const Status status = chooseGpuProtocol(inputs, "AllReduce", &lowLatency);
  EXPECT_TRUE(status.isOk()) << status.message();
  return lowLatency;
}

TEST(GpuProtocol, SmallCallsMoveLowLatencyPiecesAndLargeOnesSimple) {
  GpuProtocolInputs inputs = smallCallOnOneHost();
  EXPECT_TRUE(chosenLowLatency(inputs));
  inputs.bytes = inputs.lowLatencyMaxBytes;
  EXPECT_TRUE(chosenLowLatency(inputs)) << "at the limit";
  inputs.bytes = inputs.lowLatencyMaxBytes + 1;
  EXPECT_FALSE(chosenLowLatency(inputs));
}

TEST(GpuProtocol, NcclProtoDecidesWhereItLeavesOneProtocol) {
  GpuProtocolInputs inputs = smallCallOnOneHost();
  inputs.lowLatencyAllowed = false;
  EXPECT_FALSE(chosenLowLatency(inputs));
  inputs = smallCallOnOneHost();
  inputs.simpleAllowed = false;
  inputs.bytes = size_t{1} << 30;
  EXPECT_TRUE(chosenLowLatency(inputs)) << "only LL allowed: LL at any size";
}

TEST(GpuProtocol, AcrossHostsOrWithoutLowLatencySlotsSimpleCarriesEverything) {
  GpuProtocolInputs inputs = smallCallOnOneHost();
  inputs.oneHost = false;
  EXPECT_FALSE(chosenLowLatency(inputs));
  inputs = smallCallOnOneHost();
  inputs.hasLowLatencySlots = false;
  EXPECT_FALSE(chosenLowLatency(inputs));
}

TEST(GpuProtocol, OnlyLowLatencyAllowedWhereItCannotRunIsRefusedSayingWhy) {
  GpuProtocolInputs inputs = smallCallOnOneHost();
  inputs.simpleAllowed = false;
  inputs.oneHost = false;
  bool lowLatency = false;
  Status status = chooseGpuProtocol(inputs, "AllGather", &lowLatency);
  EXPECT_EQ(status.code(), StatusCode::kInvalidUsage);
  EXPECT_NE(status.message().find("AllGather"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("cross hosts"), std::string::npos) << status.message();
  inputs.oneHost = true;
  inputs.lowLatencyAllowed = false;
  status = chooseGpuProtocol(inputs, "AllGather", &lowLatency);
  EXPECT_NE(status.message().find("neither Simple nor LL"), std::string::npos) << status.message();
  inputs.lowLatencyAllowed = true;
  inputs.hasLowLatencySlots = false;
  status = chooseGpuProtocol(inputs, "AllGather", &lowLatency);
  EXPECT_NE(status.message().find("NCCL_LL_BUFFSIZE is below 512 bytes"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace weft::device
