// WEFT_TUNE_FILE: the tuner's constants read back as written, and every malformed file refused with
// the file and the member named.
#include "algorithms/tune_file.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::algorithms {
namespace {

TEST(TuneFile, WhatIsWrittenReadsBack) {
  CostModel model;
  model.sharedMemory = {2.5, 3.25};
  model.sharedMemoryLL = {1.5, 1.25};
  model.network = {41, 0.75, 3.5, 2.25};
  const std::string text = tuneFileText(model, R"({"measured_on": "host1", "ranks": 4})");
  EXPECT_NE(text.find("\"measured_on\": \"host1\""), std::string::npos) << text;
  CostModel read;
  ASSERT_TRUE(parseTuneFile(text, "t.json", &read).isOk());
  EXPECT_EQ(read.sharedMemory.latencyUs, 2.5);
  EXPECT_EQ(read.sharedMemory.bandwidthGBps, 3.25);
  EXPECT_EQ(read.network.latencyUs, 41);
  EXPECT_EQ(read.network.bandwidthGBps, 0.75);
  EXPECT_EQ(read.network.channelLatencyUs, 3.5);
  EXPECT_EQ(read.network.peakBandwidthGBps, 2.25);
  EXPECT_EQ(read.sharedMemoryLL.latencyUs, 1.5);
  EXPECT_EQ(read.sharedMemoryLL.bandwidthGBps, 1.25);
}

void expectRefused(const std::string& text, const std::string& saying) {
  CostModel model;
  model.network.latencyUs = 123;
  Status status = parseTuneFile(text, "bad.json", &model);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << text;
  EXPECT_NE(status.message().find("bad.json"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find(saying), std::string::npos) << status.message();
  EXPECT_EQ(model.network.latencyUs, 123) << "a refused file leaves the model as it was";
}

TEST(TuneFile, MalformedFilesAreRefusedNamingWhat) {
  const std::string hops = R"("shared_memory": {"latency_us": 4, "bandwidth_gbps": 5})";
  expectRefused("{\"weft_tune_file\": 1, " + hops + ",}", "byte ");
  expectRefused("[1, 2]", "not a JSON object");
  expectRefused("{\"weft_tune_file\": 1, \"network\": {\"latency_us\": 1e999}}", "not valid JSON");
  expectRefused("{" + hops + "}", "not a version 1 Weft tune file");
  expectRefused("{\"weft_tune_file\": 2, " + hops + "}", "not a version 1 Weft tune file");
  expectRefused("{\"weft_tune_file\": 1, " + hops + "}", "no \"network\" object");
  const std::string head = "{\"weft_tune_file\": 1, " + hops + ", \"network\": ";
  expectRefused(head + R"({"latency_us": 4}})", "\"network\".\"bandwidth_gbps\" must be a positive number");
  expectRefused(head + R"({"latency_us": -1, "bandwidth_gbps": 1}})",
                "\"network\".\"latency_us\" must be a positive number");
  expectRefused(head + R"({"latency_us": "9", "bandwidth_gbps": 1}})", "\"network\".\"latency_us\"");
  expectRefused(head + R"({"latency_us": 9, "bandwidth_gbps": 1, "channel_latency_us": -2}})",
                "\"network\".\"channel_latency_us\" must be a number, 0 or more");
  expectRefused(head + R"({"latency_us": 9, "bandwidth_gbps": 1, "peak_bandwidth_gbps": "4"}})",
                "\"network\".\"peak_bandwidth_gbps\"");
}

TEST(TuneFile, WithoutLowLatencyConstantsLowLatencyCostsAsSimple) {
  const std::string text = R"({"weft_tune_file": 1, "shared_memory": {"latency_us": 4, "bandwidth_gbps": 5},
                               "network": {"latency_us": 40, "bandwidth_gbps": 1}})";
  CostModel read;
  ASSERT_TRUE(parseTuneFile(text, "old.json", &read).isOk());
  EXPECT_EQ(read.sharedMemoryLL.latencyUs, 4);
  EXPECT_EQ(read.sharedMemoryLL.bandwidthGBps, 5);
  // Nor do they measure channels: a channel then adds nothing, and one reaches the peak.
  EXPECT_EQ(read.network.channelLatencyUs, 0);
  EXPECT_EQ(read.network.peakBandwidthGBps, 0);
  EXPECT_EQ(channelsToPeak(read), 1);
  const std::string badLl = R"({"weft_tune_file": 1, "shared_memory": {"latency_us": 4, "bandwidth_gbps": 5},
                                "shared_memory_ll": {"latency_us": 0, "bandwidth_gbps": 5},
                                "network": {"latency_us": 40, "bandwidth_gbps": 1}})";
  expectRefused(badLl, "\"shared_memory_ll\".\"latency_us\" must be a positive number");
}

TEST(TuneFile, AMissingFileIsNamed) {
  CostModel model;
  Status status = loadTuneFile("/nonexistent/weft-tune.json", &model);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("cannot read tune file /nonexistent/weft-tune.json"), std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace weft::algorithms
