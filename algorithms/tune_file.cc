#include "algorithms/tune_file.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace weft::algorithms {
namespace {

using Json = nlohmann::json;

Status readHop(const Json& root, const char* name, const std::string& path, HopCost* hop) {
  if (!root.contains(name) || !root[name].is_object()) {
    return invalidArgument("tune file %s has no \"%s\" object; write it with weft tune --calibrate", path.c_str(),
                           name);
  }
  const Json& object = root[name];
  for (auto [member, value] : {std::pair{"latency_us", &hop->latencyUs}, std::pair{"bandwidth_gbps", &hop->bandwidthGBps}}) {
    if (!object.contains(member) || !object[member].is_number() || !(object[member].get<double>() > 0)) {
      return invalidArgument("tune file %s: \"%s\".\"%s\" must be a positive number; write the file with weft tune "
                             "--calibrate",
                             path.c_str(), name, member);
    }
    *value = object[member].get<double>();
  }
  // Optional (files written before channels were measured have neither): 0 when absent.
  for (auto [member, value] :
       {std::pair{"channel_latency_us", &hop->channelLatencyUs}, std::pair{"peak_bandwidth_gbps", &hop->peakBandwidthGBps}}) {
    *value = 0;
    if (!object.contains(member)) continue;
    if (!object[member].is_number() || !(object[member].get<double>() >= 0)) {
      return invalidArgument("tune file %s: \"%s\".\"%s\" must be a number, 0 or more; write the file with weft tune "
                             "--calibrate",
                             path.c_str(), name, member);
    }
    *value = object[member].get<double>();
  }
  return Status::ok();
}

Json hopJson(const HopCost& hop) {
  return {{"latency_us", hop.latencyUs},
          {"bandwidth_gbps", hop.bandwidthGBps},
          {"channel_latency_us", hop.channelLatencyUs},
          {"peak_bandwidth_gbps", hop.peakBandwidthGBps}};
}

}  // namespace

Status parseTuneFile(const std::string& text, const std::string& path, CostModel* model) {
  Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    // Parsed again for the position of the first error (nlohmann reports it by exception only).
    std::string where = "it is not a JSON object";
    try {
      const Json reparsed = Json::parse(text);
      (void)reparsed;
    } catch (const Json::parse_error& error) {
      where = "byte " + std::to_string(error.byte) + " is not valid JSON";
    } catch (const Json::exception& error) {  // e.g. a number too large for a double
      where = std::string("it is not valid JSON (") + error.what() + ")";
    }
    return invalidArgument("tune file %s: %s; write it with weft tune --calibrate", path.c_str(), where.c_str());
  }
  if (!root.contains("weft_tune_file") || root["weft_tune_file"] != kTuneFileVersion) {
    return invalidArgument("tune file %s is not a version %d Weft tune file (\"weft_tune_file\": %d); write it with "
                           "weft tune --calibrate",
                           path.c_str(), kTuneFileVersion, kTuneFileVersion);
  }
  CostModel loaded;
  WEFT_RETURN_IF_ERROR(readHop(root, "shared_memory", path, &loaded.sharedMemory));
  WEFT_RETURN_IF_ERROR(readHop(root, "network", path, &loaded.network));
  // A file without LL measurements costs LL as Simple, so that the tuner (Simple on a tie) keeps Simple.
  loaded.sharedMemoryLL = loaded.sharedMemory;
  if (root.contains("shared_memory_ll")) {
    WEFT_RETURN_IF_ERROR(readHop(root, "shared_memory_ll", path, &loaded.sharedMemoryLL));
  }
  *model = loaded;
  return Status::ok();
}

Status loadTuneFile(const std::string& path, CostModel* model) {
  std::ifstream file(path);
  if (!file) return invalidArgument("cannot read tune file %s (WEFT_TUNE_FILE)", path.c_str());
  std::stringstream text;
  text << file.rdbuf();
  return parseTuneFile(text.str(), path, model);
}

std::string tuneFileText(const CostModel& model, const std::string& details) {
  Json root = details.empty() ? Json::object() : Json::parse(details, nullptr, false);
  if (!root.is_object()) root = Json::object();
  root["weft_tune_file"] = kTuneFileVersion;
  root["shared_memory"] = hopJson(model.sharedMemory);
  root["shared_memory_ll"] = hopJson(model.sharedMemoryLL);
  root["network"] = hopJson(model.network);
  return root.dump(2) + "\n";
}

}  // namespace weft::algorithms
