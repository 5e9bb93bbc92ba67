#pragma once
// The tuner's constants in a file: `weft tune --calibrate` measures them on a machine and writes
// the file; WEFT_TUNE_FILE loads it in place of the built-in defaults (algorithms/tuner.h).
//
// The file is JSON:
//   {"weft_tune_file": 1,
//    "shared_memory":    {"latency_us": 3.2, "bandwidth_gbps": 4.8,
//                         "channel_latency_us": 0.5, "peak_bandwidth_gbps": 4.8},  (the last two
//                                                  optional, 0 when absent: HopCost's meanings)
//    "shared_memory_ll": {"latency_us": 3.0, "bandwidth_gbps": 1.9},  (optional: without it LL costs
//                                                                        as Simple, and Simple wins)
//    "network":          {"latency_us": 41.0, "bandwidth_gbps": 0.61},
//    ...}  (other members, such as how it was measured, are kept for people and ignored)

#include <string>

#include "algorithms/tuner.h"
#include "src/base/status.h"

namespace weft::algorithms {

inline constexpr int kTuneFileVersion = 1;

/// Parses a tune file's text; `path` names it in errors. Fails, saying which member and why, on
/// malformed JSON, another version, or a missing, non-numeric or non-positive constant.
Status parseTuneFile(const std::string& text, const std::string& path, CostModel* model);

/// Reads and parses the file at `path` (its errors name the file).
Status loadTuneFile(const std::string& path, CostModel* model);

/// The model as a tune file's JSON text, with `details` (a JSON object's text, or empty) merged
/// in for people to read.
std::string tuneFileText(const CostModel& model, const std::string& details);

}  // namespace weft::algorithms
