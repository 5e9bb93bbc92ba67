// Tests of the -J JSON file (nccl-tests' format: its keys, their order and value types) and of the
// -I per-iteration statistics.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/common/iteration_stats.h"
#include "perf/common/json_output.h"
#include "perf/common/options.h"

namespace weft::perf {
namespace {

using Json = nlohmann::ordered_json;

class JsonOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/weft-json-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    directory_ = pattern;
  }
  void TearDown() override {
    for (const char* name : {"/run.json", "/run.json.0", "/run.json.1"}) {
      std::remove((directory_ + name).c_str());
    }
    rmdir(directory_.c_str());
  }
  static Json read(const std::string& path) {
    std::ifstream in(path);
    return Json::parse(in);
  }
  std::string directory_;
};

std::vector<std::string> keysOf(const Json& object) {
  std::vector<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.push_back(it.key());
  return keys;
}

TEST_F(JsonOutputTest, WritesNcclTestsKeysInOrder) {
  const std::string path = directory_ + "/run.json";
  std::unique_ptr<JsonOutput> json = JsonOutput::create(path);
  ASSERT_NE(json, nullptr);

  char program[] = "all_reduce_perf", flag[] = "-b", value[] = "8";
  char* argv[] = {program, flag, value, nullptr};
  char variable[] = "NCCL_DEBUG=INFO";
  char* environment[] = {variable, nullptr};
  json->begin(3, argv, environment, 22809);

  Options options;
  options.nThreads = 2;
  options.stepFactor = 2;
  options.blocking = 1;
  json->config(options,
               "#  Rank  0 Group  0 Pid   4242 on       node device  0 [host] Some CPU model\n"
               "#  Rank  1 Group  3 Pid   4243 on       node device  1 [host] Some CPU model\n");

  json->rowStart(1024, 256, "float", "sum", -1);
  json->rowResult({false, 12.5, 0.08, 0.12, true, 0}, false);
  json->rowIterations(false, iterationStats({1e-5, 2e-5}), {1e-5, 2e-5}, {{1e-5, 2e-5}, {0.5e-5, 1e-5}});
  json->rowResult({true, std::numeric_limits<double>::quiet_NaN(), 0.08, 0.12, false, 0}, false);
  json->rowEnd(20);
  json->summary(3, 0.12, -1);
  json->errors("");
  json->finish();

  const Json root = read(path);
  EXPECT_EQ(keysOf(root), (std::vector<std::string>{"version", "start_time", "args", "env", "nccl_version",
                                                     "config", "results", "out_of_bounds",
                                                     "average_bus_bandwidth", "errors", "end_time"}));
  EXPECT_EQ(root["version"], 2);
  EXPECT_EQ(root["args"], Json({"all_reduce_perf", "-b", "8"}));
  EXPECT_EQ(root["env"], Json({"NCCL_DEBUG=INFO"}));
  EXPECT_EQ(root["nccl_version"], 22809);
  EXPECT_EQ(root["start_time"].get<std::string>().size(), 19u);  // YYYY-MM-DD HH:MM:SS

  const Json& config = root["config"];
  EXPECT_EQ(keysOf(config),
            (std::vector<std::string>{"nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "step_factor",
                                      "warmup_iters", "iterations", "aggregated_iterations", "validation",
                                      "graph", "blocking_collectives", "per_iter_timing", "parallel_init",
                                      "devices"}));
  EXPECT_EQ(config["nthreads"], 2);
  EXPECT_EQ(config["step_factor"], 2);
  EXPECT_EQ(config["blocking_collectives"], "true");  // nccl-tests writes booleans as strings
  EXPECT_EQ(config["parallel_init"], "false");
  ASSERT_EQ(config["devices"].size(), 2u);
  EXPECT_EQ(config["devices"][1], Json({{"rank", 1}, {"group", 3}, {"pid", 4243}, {"hostname", "node"},
                                        {"device", 1}, {"device_hex", "host"},
                                        {"device_info", "Some CPU model"}}));

  ASSERT_EQ(root["results"].size(), 1u);
  const Json& row = root["results"][0];
  EXPECT_EQ(keysOf(row), (std::vector<std::string>{"size", "count", "type", "redop", "root", "out_of_place",
                                                    "out_of_place_per_iter", "in_place",
                                                    "actual_iterations", "experiment_name"}));
  EXPECT_EQ(row["size"], 1024);
  EXPECT_EQ(row["count"], 256);
  EXPECT_EQ(row["root"], "    -1");  // the table's %6i text
  EXPECT_EQ(keysOf(row["out_of_place"]), (std::vector<std::string>{"time", "alg_bw", "bus_bw", "nwrong"}));
  EXPECT_DOUBLE_EQ(row["out_of_place"]["time"].get<double>(), 12.5);
  EXPECT_EQ(row["out_of_place"]["nwrong"], 0.0);
  EXPECT_EQ(row["in_place"]["time"], "nan");
  EXPECT_TRUE(row["in_place"]["nwrong"].is_null());  // N/A in the table
  EXPECT_EQ(row["actual_iterations"], 20);
  EXPECT_EQ(row["experiment_name"], "");
  const Json& perIteration = row["out_of_place_per_iter"];
  EXPECT_DOUBLE_EQ(perIteration["min_us"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(perIteration["max_us"].get<double>(), 20.0);
  EXPECT_EQ(perIteration["times_us"].size(), 2u);
  EXPECT_EQ(perIteration["per_process_max_times_us"].size(), 2u);

  EXPECT_EQ(root["out_of_bounds"], Json({{"count", 3}, {"okay", "false"}}));
  EXPECT_EQ(root["average_bus_bandwidth"]["okay"], "unchecked");
  EXPECT_EQ(root["errors"], Json({""}));
}

TEST_F(JsonOutputTest, StepBytesCpuTimeAndBandwidthCheck) {
  std::unique_ptr<JsonOutput> json = JsonOutput::create(directory_ + "/run.json");
  ASSERT_NE(json, nullptr);
  Options options;  // -i 1M: step_bytes
  json->config(options, "");
  json->rowStart(8, 2, "int32", "none", 0);
  json->rowResult({false, 3.0, 0.0, 0.0, true, 1}, true);
  json->rowEnd(5);
  json->summary(0, 10.0, 12.0);
  json->finish();
  const Json root = read(directory_ + "/run.json");
  EXPECT_TRUE(root["config"].contains("step_bytes"));
  EXPECT_FALSE(root["config"].contains("step_factor"));
  EXPECT_EQ(root["results"][0]["out_of_place"]["cpu_time"], 3.0);
  EXPECT_EQ(root["results"][0]["root"], "     0");
  EXPECT_EQ(root["average_bus_bandwidth"]["okay"], "false");  // 10 < 0.9 * 12
}

TEST_F(JsonOutputTest, NeverOverwritesAFile) {
  const std::string path = directory_ + "/run.json";
  std::unique_ptr<JsonOutput> first = JsonOutput::create(path);
  std::unique_ptr<JsonOutput> second = JsonOutput::create(path);
  std::unique_ptr<JsonOutput> third = JsonOutput::create(path);
  ASSERT_NE(third, nullptr);
  first->finish();
  second->finish();
  third->finish();
  EXPECT_EQ(access((path + ".0").c_str(), F_OK), 0);
  EXPECT_EQ(access((path + ".1").c_str(), F_OK), 0);
  EXPECT_FALSE(read(path + ".1").contains("results"));  // a run that ended before its table
}

TEST_F(JsonOutputTest, UnwritablePlaceGivesNothing) {
  EXPECT_EQ(JsonOutput::create(directory_ + "/missing/run.json"), nullptr);
}

TEST(IterationStats, NearestRankPercentilesAndSpread) {
  std::vector<double> times;
  for (int i = 100; i >= 1; --i) times.push_back(i);  // unsorted on purpose
  IterationStats stats = iterationStats(times);
  EXPECT_EQ(stats.min, 1);
  EXPECT_EQ(stats.max, 100);
  EXPECT_EQ(stats.p50, 51);  // the upper median
  EXPECT_EQ(stats.p95, 95);
  EXPECT_EQ(stats.p99, 99);
  EXPECT_DOUBLE_EQ(stats.average, 50.5);
  EXPECT_NEAR(stats.stdev, std::sqrt((100.0 * 100.0 - 1.0) / 12.0), 1e-9);

  IterationStats few = iterationStats({2.0, 4.0, 6.0});
  EXPECT_EQ(few.p99, 6.0);  // fewer than 100 samples: p99 is the largest
  EXPECT_EQ(few.p50, 4.0);
  EXPECT_NEAR(few.cvPercent(), std::sqrt(8.0 / 3.0) / 4.0 * 100.0, 1e-9);
  EXPECT_EQ(iterationStats({0.0}).cvPercent(), 0.0);
}

TEST(IterationStats, LargestOverProcesses) {
  EXPECT_EQ(maxOverRows({{1, 5, 3}, {4, 2, 3}, {0, 0, 7}}), (std::vector<double>{4, 5, 7}));
}

}  // namespace
}  // namespace weft::perf
