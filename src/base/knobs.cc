#include "src/base/knobs.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

#include "src/base/log.h"

namespace weft::knobs {
namespace {

constexpr KnobSpec kSpecs[] = {
#define WEFT_KNOB_SPEC(id, name, kind, def, meaning) {KnobId::k##id, name, KnobKind::k##kind, def, meaning},
    WEFT_KNOB_LIST(WEFT_KNOB_SPEC)
#undef WEFT_KNOB_SPEC
};
static_assert(std::size(kSpecs) == static_cast<size_t>(KnobId::kCount));

struct FileValue {
  std::string value;
  std::string file;
};

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// Reads NAME=VALUE lines; '#' starts a comment. Earlier files win, as the environment wins over all.
void readConfFile(const std::string& path, std::map<std::string, FileValue>* values) {
  std::ifstream in(path);
  if (!in) return;
  std::string line;
  while (std::getline(in, line)) {
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string name = trim(line.substr(0, eq));
    std::string value = trim(line.substr(eq + 1));
    if (name.empty()) continue;
    values->emplace(name, FileValue{value, path});
  }
}

const std::map<std::string, FileValue>& fileValues() {
  static std::map<std::string, FileValue> values;
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* conf = getenv("NCCL_CONF_FILE"); conf && *conf) readConfFile(conf, &values);
    if (const char* home = getenv("HOME"); home && *home) readConfFile(std::string(home) + "/.nccl.conf", &values);
    readConfFile("/etc/nccl.conf", &values);
  });
  return values;
}

}  // namespace

std::span<const KnobSpec> allKnobs() { return kSpecs; }

const KnobSpec& spec(KnobId id) { return kSpecs[static_cast<int>(id)]; }

std::optional<std::string> rawValue(KnobId id) {
  const KnobSpec& knob = spec(id);
  if (const char* env = getenv(knob.name)) return std::string(env);
  const auto& files = fileValues();
  if (auto it = files.find(knob.name); it != files.end()) return it->second.value;
  return std::nullopt;
}

std::string source(KnobId id) {
  const KnobSpec& knob = spec(id);
  if (getenv(knob.name)) return "env";
  const auto& files = fileValues();
  if (auto it = files.find(knob.name); it != files.end()) return it->second.file;
  return "default";
}

std::optional<int64_t> parseSize(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long value = strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str()) return std::nullopt;
  std::string suffix = trim(end);
  int64_t scale = 1;
  if (suffix.empty()) scale = 1;
  else if (suffix == "K" || suffix == "k") scale = int64_t{1} << 10;
  else if (suffix == "M" || suffix == "m") scale = int64_t{1} << 20;
  else if (suffix == "G" || suffix == "g") scale = int64_t{1} << 30;
  else return std::nullopt;
  return static_cast<int64_t>(value) * scale;
}

int64_t getInt(KnobId id) {
  const KnobSpec& knob = spec(id);
  int64_t fallback = *parseSize(knob.defaultValue);
  std::optional<std::string> raw = rawValue(id);
  if (!raw || trim(*raw).empty()) return fallback;
  std::optional<int64_t> parsed = parseSize(trim(*raw));
  if (!parsed) {
    WEFT_WARN("%s=\"%s\" is not a number; using the default %s", knob.name, raw->c_str(), knob.defaultValue);
    return fallback;
  }
  return *parsed;
}

bool getBool(KnobId id) { return getInt(id) != 0; }

bool valueParses(KnobId id) {
  if (spec(id).kind == KnobKind::kString) return true;
  const std::optional<std::string> raw = rawValue(id);
  return !raw || trim(*raw).empty() || parseSize(trim(*raw)).has_value();
}

std::string getString(KnobId id) {
  std::optional<std::string> raw = rawValue(id);
  return raw ? *raw : std::string(spec(id).defaultValue);
}

}  // namespace weft::knobs
