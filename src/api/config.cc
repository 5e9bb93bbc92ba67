#include "src/api/config.h"

#include <cstddef>

#include "src/base/knobs.h"

namespace weft::api {
namespace {

constexpr unsigned int kConfigMagic = 0xcafebeef;
// The first NCCL config layout that had `blocking` ends after it.
constexpr size_t kSmallestConfig = offsetof(ncclConfig_t, blocking) + sizeof(int);

// True if the caller's struct (of `size` bytes) contains `field`.
template <class Field>
bool has(const ncclConfig_t* config, const Field& field) {
  size_t end = reinterpret_cast<const char*>(&field) - reinterpret_cast<const char*>(config) + sizeof(Field);
  return end <= config->size;
}

}  // namespace

Status readConfig(const ncclConfig_t* config, const core::CommOptions* inherited, core::CommOptions* out) {
  *out = inherited ? *inherited : core::CommOptions{};
  if (!inherited) out->blocking = knobs::getInt(knobs::KnobId::kCommBlocking) != 0;
  if (config == nullptr) return Status::ok();
  if (config->magic != kConfigMagic || config->size < kSmallestConfig || config->size > 4096) {
    return invalidArgument("the ncclConfig_t was not initialized with NCCL_CONFIG_INITIALIZER (size %zu, magic 0x%x)",
                           config->size, config->magic);
  }
  if (has(config, config->blocking) && config->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (config->blocking != 0 && config->blocking != 1) {
      return invalidArgument("ncclConfig_t.blocking is %d; it must be 0 or 1", config->blocking);
    }
    out->blocking = config->blocking == 1;
  }
  if (has(config, config->commName) && config->commName != nullptr) out->name = config->commName;
  auto readCtas = [](int value, const char* name, int* field) {
    if (value == NCCL_CONFIG_UNDEF_INT) return Status::ok();
    if (value < 1) return invalidArgument("ncclConfig_t.%s is %d; it must be at least 1", name, value);
    *field = value;
    return Status::ok();
  };
  if (has(config, config->minCTAs)) WEFT_RETURN_IF_ERROR(readCtas(config->minCTAs, "minCTAs", &out->minCtas));
  if (has(config, config->maxCTAs)) WEFT_RETURN_IF_ERROR(readCtas(config->maxCTAs, "maxCTAs", &out->maxCtas));
  if (has(config, config->nvlsCTAs)) WEFT_RETURN_IF_ERROR(readCtas(config->nvlsCTAs, "nvlsCTAs", &out->nvlsCtas));
  if (out->minCtas > 0 && out->maxCtas > 0 && out->minCtas > out->maxCtas) {
    return invalidArgument("ncclConfig_t.minCTAs (%d) is more than maxCTAs (%d)", out->minCtas, out->maxCtas);
  }
  return Status::ok();
}

}  // namespace weft::api
