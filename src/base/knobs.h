#pragma once
// Typed access to the knob registry (src/base/knob_list.h).
// A knob's value comes from the environment, else from the first configuration file that sets it
// (NCCL_CONF_FILE, ~/.nccl.conf, /etc/nccl.conf, as NCCL reads them), else from its default.
// The environment is read at every query so that a process may change it between communicators;
// the files are read once.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "src/base/knob_list.h"
#include "src/base/status.h"

namespace weft::knobs {

enum class KnobId : int {
#define WEFT_KNOB_ID(id, name, kind, def, meaning) k##id,
  WEFT_KNOB_LIST(WEFT_KNOB_ID)
#undef WEFT_KNOB_ID
      kCount
};

enum class KnobKind { kInt, kString, kBool };

struct KnobSpec {
  KnobId id;
  const char* name;
  KnobKind kind;
  const char* defaultValue;
  const char* meaning;
};

/// Every knob, in declaration order.
std::span<const KnobSpec> allKnobs();
const KnobSpec& spec(KnobId id);

/// The knob's text as set by the environment or a configuration file; nullopt if unset.
std::optional<std::string> rawValue(KnobId id);
/// Where the value came from: "env", a file's path, or "default".
std::string source(KnobId id);

/// The knob's value, or its default. A value that does not parse logs a WARN naming the knob and
/// falls back to the default.
int64_t getInt(KnobId id);
bool getBool(KnobId id);
std::string getString(KnobId id);
/// Whether the knob's value reads as its kind: false only for an Int or Bool knob set to text that
/// is not a number (getInt then warns and uses the default).
bool valueParses(KnobId id);

/// Parses "123", "4K", "2M", "1G" (powers of 1024). Returns nullopt on anything else.
std::optional<int64_t> parseSize(const std::string& text);

}  // namespace weft::knobs
