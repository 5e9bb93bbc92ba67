#pragma once
// Environment overrides for ranks: NCCL reads its knobs from the environment, so a test picks a
// transport or an interface by setting variables where its ranks run.

#include <optional>
#include <string>
#include <vector>

namespace weft::harness {

/// One variable to set (value) or remove (nullopt).
struct EnvVar {
  std::string name;
  std::optional<std::string> value;
};

/// Applies `vars` to this process's environment, without restoring them (forked ranks).
void applyEnv(const std::vector<EnvVar>& vars);

/// Applies `vars` for its lifetime and restores the previous values when destroyed. setenv is not
/// safe against concurrent getenv, so construct and destroy it while no rank thread runs.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<EnvVar>& vars);
  /// One variable; a null `value` removes it.
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<EnvVar> saved_;
};

}  // namespace weft::harness
