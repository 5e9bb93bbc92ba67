#include "perf/common/json_output.h"

#include <errno.h>

#include <cmath>
#include <ctime>
#include <sstream>

#include <nlohmann/json.hpp>

namespace weft::perf {
namespace {

using Json = nlohmann::ordered_json;  // keys in nccl-tests' order

constexpr int kFormatVersion = 2;

std::string now() {
  char text[64];
  std::time_t seconds = std::time(nullptr);
  std::tm local{};
  localtime_r(&seconds, &local);
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

Json flag(bool value) { return value ? "true" : "false"; }

Json number(double value) { return std::isnan(value) ? Json("nan") : Json(value); }

// One "#  Rank ..." line, read as nccl-tests reads it; false for anything else.
bool parseDevice(const std::string& line, Json* device) {
  int rank = 0, group = 0, pid = 0, index = 0;
  char host[1025] = {0}, hex[129] = {0}, info[1025] = {0};
  if (std::sscanf(line.c_str(), "#  Rank %d Group %d Pid %d on %1024s device %d [%128[^]]] %1024[^\n]",
                  &rank, &group, &pid, host, &index, hex, info) != 7) {
    return false;
  }
  *device = Json{{"rank", rank},   {"group", group},      {"pid", pid},
                 {"hostname", host}, {"device", index}, {"device_hex", hex},
                 {"device_info", info}};
  return true;
}

}  // namespace

struct JsonOutput::Document {
  Json root = Json::object();
  Json row;  // the row being written, null between rows
  bool finished = false;
};

std::unique_ptr<JsonOutput> JsonOutput::create(const std::string& path) {
  std::string tried = path;
  std::FILE* file = std::fopen(tried.c_str(), "wx");
  for (int suffix = 0; file == nullptr && errno == EEXIST; ++suffix) {
    tried = path + "." + std::to_string(suffix);
    file = std::fopen(tried.c_str(), "wx");
  }
  if (file == nullptr) {
    std::printf("# skipping json output; %s not accessible\n", tried.c_str());
    return nullptr;
  }
  std::printf("# Writing JSON output to %s\n", tried.c_str());
  return std::unique_ptr<JsonOutput>(new JsonOutput(file, std::make_unique<Document>()));
}

JsonOutput::JsonOutput(std::FILE* file, std::unique_ptr<Document> document)
    : file_(file), document_(std::move(document)) {}

JsonOutput::~JsonOutput() { finish(); }

void JsonOutput::begin(int argc, char** argv, char** environment, int ncclVersion) {
  std::lock_guard<std::mutex> lock(mutex_);
  Json& root = document_->root;
  root["version"] = kFormatVersion;
  root["start_time"] = now();
  root["args"] = Json::array();
  for (int i = 0; i < argc; ++i) root["args"].push_back(argv[i]);
  root["env"] = Json::array();
  for (char** variable = environment; variable != nullptr && *variable != nullptr; ++variable) {
    root["env"].push_back(*variable);
  }
  root["nccl_version"] = ncclVersion;
}

void JsonOutput::config(const Options& o, const std::string& deviceLines) {
  std::lock_guard<std::mutex> lock(mutex_);
  Json config = Json::object();
  config["nthreads"] = o.nThreads;
  config["ngpus"] = o.nGpus;
  config["minimum_bytes"] = o.minBytes;
  config["maximum_bytes"] = o.maxBytes;
  if (o.stepFactor > 1) {
    config["step_factor"] = o.stepFactor;
  } else {
    config["step_bytes"] = o.stepBytes;
  }
  config["warmup_iters"] = o.warmupIters;
  config["iterations"] = o.iters;
  config["aggregated_iterations"] = o.aggIters;
  config["validation"] = o.check;
  config["graph"] = 0;
  config["blocking_collectives"] = flag(o.blocking != 0);
  config["per_iter_timing"] = flag(o.perIterationTiming != 0);
  config["parallel_init"] = flag(o.parallelInit != 0);
  config["devices"] = Json::array();
  std::istringstream lines(deviceLines);
  std::string line;
  Json device;
  while (std::getline(lines, line)) {
    if (parseDevice(line, &device)) config["devices"].push_back(device);
  }
  document_->root["config"] = config;
  document_->root["results"] = Json::array();
}

void JsonOutput::rowStart(size_t bytes, size_t count, const char* typeName, const char* opName,
                          int root) {
  std::lock_guard<std::mutex> lock(mutex_);
  char rootText[32];
  std::snprintf(rootText, sizeof(rootText), "%6i", root);
  document_->row = Json{{"size", bytes}, {"count", count}, {"type", typeName}, {"redop", opName},
                        {"root", rootText}};
}

void JsonOutput::rowResult(const Measurement& m, bool cpuTime) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (document_->row.is_null()) return;
  Json result = Json::object();
  result[cpuTime ? "cpu_time" : "time"] = number(m.microseconds);
  result["alg_bw"] = number(m.algBw);
  result["bus_bw"] = number(m.busBw);
  result["nwrong"] = m.checked ? number(static_cast<double>(m.wrong)) : Json(nullptr);
  document_->row[m.inPlace ? "in_place" : "out_of_place"] = result;
}

void JsonOutput::rowIterations(bool inPlace, const IterationStats& seconds,
                               const std::vector<double>& times,
                               const std::vector<std::vector<double>>& processRows) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (document_->row.is_null()) return;
  auto microseconds = [](const std::vector<double>& values) {
    Json list = Json::array();
    for (double v : values) list.push_back(number(v * 1e6));
    return list;
  };
  Json stats = Json::object();
  stats["min_us"] = number(seconds.min * 1e6);
  stats["max_us"] = number(seconds.max * 1e6);
  stats["avg_us"] = number(seconds.average * 1e6);
  stats["p50_us"] = number(seconds.p50 * 1e6);
  stats["p95_us"] = number(seconds.p95 * 1e6);
  stats["p99_us"] = number(seconds.p99 * 1e6);
  stats["stdev_us"] = number(seconds.stdev * 1e6);
  stats["cv_pct"] = number(seconds.cvPercent());
  stats["times_us"] = microseconds(times);
  if (processRows.size() > 1) {
    stats["per_process_max_times_us"] = Json::array();
    for (const std::vector<double>& row : processRows) {
      stats["per_process_max_times_us"].push_back(microseconds(row));
    }
  }
  document_->row[inPlace ? "in_place_per_iter" : "out_of_place_per_iter"] = stats;
}

void JsonOutput::rowEnd(int iterations) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (document_->row.is_null()) return;
  document_->row["actual_iterations"] = iterations;
  document_->row["experiment_name"] = "";
  document_->root["results"].push_back(document_->row);
  document_->row = nullptr;
}

void JsonOutput::summary(int64_t wrongValues, double busBw, double minBw) {
  std::lock_guard<std::mutex> lock(mutex_);
  Json& root = document_->root;
  root["out_of_bounds"] = Json{{"count", wrongValues}, {"okay", flag(wrongValues == 0)}};
  const Json bandwidthOkay = minBw < 0 ? Json("unchecked") : flag(busBw >= minBw * 0.9);
  root["average_bus_bandwidth"] = Json{{"bandwidth", number(busBw)}, {"okay", bandwidthOkay}};
}

void JsonOutput::errors(const char* lastError) {
  std::lock_guard<std::mutex> lock(mutex_);
  Json list = Json::array();
  if (lastError != nullptr) list.push_back(lastError);
  document_->root["errors"] = list;
}

void JsonOutput::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (document_->finished) return;
  document_->finished = true;
  Json& root = document_->root;
  if (!document_->row.is_null()) {
    if (!root.contains("results")) root["results"] = Json::array();
    root["results"].push_back(document_->row);
  }
  root["end_time"] = now();
  // Text that is not UTF-8 (an odd environment variable) is replaced rather than refused.
  const std::string text = root.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fclose(file_);
  file_ = nullptr;
}

}  // namespace weft::perf
