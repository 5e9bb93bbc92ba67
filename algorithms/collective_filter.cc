#include "algorithms/collective_filter.h"

#include <strings.h>

#include <algorithm>
#include <iterator>
#include <sstream>
#include <vector>

namespace weft::algorithms {
namespace {

constexpr const char* kCollectiveNames = "allreduce, allgather, reducescatter, broadcast, reduce";

constexpr NamedCollective kGoverned[] = {{"allreduce", Collective::kAllReduce},
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

std::string joined(std::span<const char* const> names) {
  std::string text;
  for (const char* name : names) text += (text.empty() ? "" : ", ") + std::string(name);
  return text;
}

uint32_t everyName(const FilterVocabulary& vocabulary) { return (1u << vocabulary.names.size()) - 1; }

// "a,b" or "^b": the names it allows.
Status parseList(const std::string& whole, const std::string& list, const FilterVocabulary& vocabulary,
                 uint32_t* mask) {
  std::string names = list;
  const bool excluding = !names.empty() && names[0] == '^';
  if (excluding) names.erase(0, 1);
  uint32_t named = 0;
  for (const std::string& name : split(names, ',')) {
    bool known = false;
    for (size_t i = 0; i < vocabulary.names.size(); ++i) {
      if (strcasecmp(name.c_str(), vocabulary.names[i]) == 0) {
        named |= 1u << i;
        known = true;
      }
    }
    if (!known) {
      return invalidArgument("%s=%s: \"%s\" is not a known %s; use %s (a list, ^ to exclude, or collective:list;... "
                             "with %s)",
                             vocabulary.knob, whole.c_str(), name.c_str(), vocabulary.nameKind,
                             joined(vocabulary.names).c_str(), kCollectiveNames);
    }
  }
  *mask = excluding ? everyName(vocabulary) & ~named : named;
  if (*mask == 0) {
    return invalidArgument("%s=%s allows no %s in \"%s\"; use %s", vocabulary.knob, whole.c_str(),
                           vocabulary.nameKind, list.c_str(), joined(vocabulary.names).c_str());
  }
  return Status::ok();
}

}  // namespace

std::span<const NamedCollective> governedCollectives() { return kGoverned; }

bool governedByAlgo(Collective collective) {
  return std::any_of(std::begin(kGoverned), std::end(kGoverned),
                     [&](const auto& entry) { return entry.collective == collective; });
}

Status parseCollectiveFilter(const std::string& text, const FilterVocabulary& vocabulary,
                             uint32_t (&allowed)[kNumCollectives]) {
  std::fill(std::begin(allowed), std::end(allowed), everyName(vocabulary));
  const std::string value = trimmed(text);
  if (value.empty()) return Status::ok();
  if (value.find(':') == std::string::npos) {
    uint32_t mask = 0;
    WEFT_RETURN_IF_ERROR(parseList(value, value, vocabulary, &mask));
    for (const auto& governed : kGoverned) allowed[static_cast<int>(governed.collective)] = mask;
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
      return invalidArgument("%s=%s: \"%s\" is not collective:%ss with a collective among %s and %ss among %s",
                             vocabulary.knob, value.c_str(), clause.c_str(), vocabulary.nameKind, kCollectiveNames,
                             vocabulary.nameKind, joined(vocabulary.names).c_str());
    }
    WEFT_RETURN_IF_ERROR(parseList(value, trimmed(clause.substr(colon + 1)), vocabulary,
                                   &allowed[static_cast<int>(governed->collective)]));
  }
  return Status::ok();
}

}  // namespace weft::algorithms
