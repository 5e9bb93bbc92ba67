#include "algorithms/algorithm_filter.h"

#include <strings.h>

#include <algorithm>
#include <iterator>
#include <sstream>
#include <vector>

namespace weft::algorithms {
namespace {

constexpr uint32_t kEvery = (1u << kNumAlgorithms) - 1;

constexpr const char* kAlgorithmNames = "ring, tree, collnetdirect, collnetchain, nvls, nvlstree, pat, rhd";
constexpr const char* kCollectiveNames = "allreduce, allgather, reducescatter, broadcast, reduce";

// The collectives NCCL_ALGO governs; the others (all-to-all, gather, scatter, send, recv) are
// point to point.
constexpr struct {
  const char* name;
  Collective collective;
} kGoverned[] = {{"allreduce", Collective::kAllReduce},
                 {"allgather", Collective::kAllGather},
                 {"reducescatter", Collective::kReduceScatter},
                 {"broadcast", Collective::kBroadcast},
                 {"reduce", Collective::kReduce}};

std::string trimmed(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator)) parts.push_back(trimmed(part));
  return parts;
}

// "ring,tree" or "^tree": the algorithms it allows.
Status parseList(const std::string& whole, const std::string& list, uint32_t* mask) {
  std::string names = list;
  const bool excluding = !names.empty() && names[0] == '^';
  if (excluding) names.erase(0, 1);
  uint32_t named = 0;
  for (const std::string& name : split(names, ',')) {
    bool known = false;
    for (int a = 0; a < kNumAlgorithms; ++a) {
      if (strcasecmp(name.c_str(), algorithmName(static_cast<Algorithm>(a))) == 0) {
        named |= 1u << a;
        known = true;
      }
    }
    if (!known) {
      return invalidArgument("NCCL_ALGO=%s: \"%s\" is not an algorithm; use %s (a list, ^ to exclude, or "
                             "collective:list;... with %s)",
                             whole.c_str(), name.c_str(), kAlgorithmNames, kCollectiveNames);
    }
  }
  *mask = excluding ? kEvery & ~named : named;
  if (*mask == 0) {
    return invalidArgument("NCCL_ALGO=%s allows no algorithm in \"%s\"; use %s", whole.c_str(), list.c_str(),
                           kAlgorithmNames);
  }
  return Status::ok();
}

}  // namespace

bool governedByAlgo(Collective collective) {
  return std::any_of(std::begin(kGoverned), std::end(kGoverned),
                     [&](const auto& entry) { return entry.collective == collective; });
}

const char* algorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kRing: return "ring";
    case Algorithm::kTree: return "tree";
    case Algorithm::kCollnetDirect: return "collnetdirect";
    case Algorithm::kCollnetChain: return "collnetchain";
    case Algorithm::kNvls: return "nvls";
    case Algorithm::kNvlsTree: return "nvlstree";
    case Algorithm::kPat: return "pat";
    case Algorithm::kRhd: return "rhd";
  }
  return "unknown";
}

AlgorithmFilter AlgorithmFilter::all() {
  AlgorithmFilter filter;
  for (uint32_t& mask : filter.allowed) mask = kEvery;
  return filter;
}

Status parseAlgorithmFilter(const std::string& text, AlgorithmFilter* filter) {
  *filter = AlgorithmFilter::all();
  const std::string value = trimmed(text);
  if (value.empty()) return Status::ok();
  if (value.find(':') == std::string::npos) {
    uint32_t mask = 0;
    WEFT_RETURN_IF_ERROR(parseList(value, value, &mask));
    for (const auto& governed : kGoverned) filter->allowed[static_cast<int>(governed.collective)] = mask;
    return Status::ok();
  }
  for (const std::string& clause : split(value, ';')) {
    if (clause.empty()) continue;
    const size_t colon = clause.find(':');
    const std::string name = trimmed(clause.substr(0, colon));
    const auto* governed = std::find_if(std::begin(kGoverned), std::end(kGoverned), [&](const auto& entry) {
      return strcasecmp(entry.name, name.c_str()) == 0;
    });
    if (colon == std::string::npos || governed == std::end(kGoverned)) {
      return invalidArgument("NCCL_ALGO=%s: \"%s\" is not collective:algorithms with a collective among %s and "
                             "algorithms among %s",
                             value.c_str(), clause.c_str(), kCollectiveNames, kAlgorithmNames);
    }
    WEFT_RETURN_IF_ERROR(
        parseList(value, trimmed(clause.substr(colon + 1)), &filter->allowed[static_cast<int>(governed->collective)]));
  }
  return Status::ok();
}

}  // namespace weft::algorithms
