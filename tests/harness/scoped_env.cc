#include "tests/harness/scoped_env.h"

#include <cstdlib>

namespace weft::harness {
namespace {

void setOne(const EnvVar& var) {
  if (var.value.has_value()) {
    setenv(var.name.c_str(), var.value->c_str(), 1);
  } else {
    unsetenv(var.name.c_str());
  }
}

}  // namespace

void applyEnv(const std::vector<EnvVar>& vars) {
  for (const EnvVar& var : vars) setOne(var);
}

ScopedEnv::ScopedEnv(const std::vector<EnvVar>& vars) {
  for (const EnvVar& var : vars) {
    const char* old = getenv(var.name.c_str());
    saved_.push_back({var.name, old == nullptr ? std::nullopt : std::optional<std::string>(old)});
    setOne(var);
  }
}

ScopedEnv::ScopedEnv(const char* name, const char* value)
    : ScopedEnv(std::vector<EnvVar>{{name, value ? std::optional<std::string>(value) : std::nullopt}}) {}

ScopedEnv::~ScopedEnv() {
  // In reverse, so that a variable named twice gets its original value back.
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) setOne(*it);
}

}  // namespace weft::harness
