#include "tools/weft/env_command.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "src/base/knobs.h"

namespace weft::tools {
namespace {

struct EnvOptions {
  bool onlySet = false;
  bool describe = false;
  bool json = false;
};

const char* kindName(knobs::KnobKind kind) {
  switch (kind) {
    case knobs::KnobKind::kInt: return "int";
    case knobs::KnobKind::kBool: return "bool";
    case knobs::KnobKind::kString: return "string";
  }
  return "?";
}

// One knob as the library would read it.
struct KnobReading {
  const knobs::KnobSpec* spec;
  std::string value;   // as set, or the default
  std::string source;  // "env", a file's path, or "default"
  bool set;
  bool parses;  // numbers only: a value that does not parse is replaced by the default
  bool hidden;  // a secret: `value` does not show it
};

KnobReading read(const knobs::KnobSpec& spec) {
  const std::optional<std::string> raw = knobs::rawValue(spec.id);
  // A secret is not printed: the output ends up in bug reports.
  const bool hidden = spec.id == knobs::KnobId::kCommSecret && raw && !raw->empty();
  return {&spec, hidden ? "(hidden)" : raw.value_or(spec.defaultValue), knobs::source(spec.id), raw.has_value(),
          knobs::valueParses(spec.id), hidden};
}

std::string comment(const KnobReading& reading) {
  std::string text = reading.source;
  if (!reading.parses) {
    text += "; not a number: the library warns and uses the default " + std::string(reading.spec->defaultValue);
  } else if (reading.set) {
    text += "; default \"" + std::string(reading.spec->defaultValue) + "\"";
  }
  return text;
}

int runEnv(const EnvOptions& options) {
  std::vector<KnobReading> readings;
  for (const knobs::KnobSpec& spec : knobs::allKnobs()) {
    KnobReading reading = read(spec);
    if (!options.onlySet || reading.set) readings.push_back(std::move(reading));
  }
  const bool allParse =
      std::all_of(readings.begin(), readings.end(), [](const KnobReading& r) { return r.parses; });
  if (options.json) {
    nlohmann::json knobsJson = nlohmann::json::array();
    for (const KnobReading& reading : readings) {
      knobsJson.push_back({{"name", reading.spec->name},
                           {"value", reading.value},
                           {"source", reading.source},
                           {"default", reading.spec->defaultValue},
                           {"kind", kindName(reading.spec->kind)},
                           {"parses", reading.parses},
                           {"meaning", reading.spec->meaning}});
    }
    std::cout << nlohmann::json{{"knobs", knobsJson}}.dump(2) << "\n";
    return allParse ? 0 : 1;
  }
  // A hidden secret is commented out: the text saved as a configuration file must not set it.
  std::vector<std::string> settings;
  size_t width = 0;
  for (const KnobReading& reading : readings) {
    settings.push_back(std::string(reading.hidden ? "# " : "") + reading.spec->name + "=" + reading.value);
    width = std::max(width, settings.back().size());
  }
  for (size_t i = 0; i < readings.size(); ++i) {
    std::cout << settings[i] << std::string(width - settings[i].size() + 2, ' ') << "# " << comment(readings[i])
              << "\n";
    if (options.describe) std::cout << "#   " << readings[i].spec->meaning << "\n";
  }
  if (readings.empty()) std::cout << "# no knob is set (weft env lists them all)\n";
  return allParse ? 0 : 1;
}

}  // namespace

void addEnvCommand(CLI::App& app, int* exitCode) {
  auto options = std::make_shared<EnvOptions>();
  CLI::App* env = app.add_subcommand(
      "env", "Print every knob with the value the library would read from this environment and its "
             "configuration files (NCCL_CONF_FILE, ~/.nccl.conf, /etc/nccl.conf), where it comes from, and "
             "whether it parses; exits 1 where a number does not. The text is a configuration file itself");
  env->add_flag("--set", options->onlySet, "only the knobs the environment or a file sets");
  env->add_flag("--describe", options->describe, "add each knob's meaning");
  env->add_flag("--json", options->json, "print JSON instead of text");
  env->callback([options, exitCode]() { *exitCode = runEnv(*options); });
}

}  // namespace weft::tools
