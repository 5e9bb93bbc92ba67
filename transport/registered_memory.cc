#include "transport/registered_memory.h"

#include <cstdint>

namespace weft::transport {

RegisteredMemory::~RegisteredMemory() {
  for (auto entry = entries_.rbegin(); entry != entries_.rend(); ++entry) entry->release();
}

bool RegisteredMemory::contains(const void* address, size_t bytes) const {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(base_);
  const uintptr_t at = reinterpret_cast<uintptr_t>(address);
  return at >= begin && at - begin <= bytes_ && bytes <= bytes_ - (at - begin);
}

bool RegisteredMemory::cached(const void* key, void** value) const {
  for (const Entry& entry : entries_) {
    if (entry.key != key) continue;
    *value = entry.value;
    return true;
  }
  return false;
}

void RegisteredMemory::cache(const void* key, void* value, std::function<void()> release) {
  entries_.push_back(Entry{key, value, std::move(release)});
}

RegisteredMemory* RegistrationTable::add(void* base, size_t bytes) {
  auto memory = std::make_unique<RegisteredMemory>(static_cast<char*>(base), bytes);
  RegisteredMemory* handle = memory.get();
  byHandle_.emplace(handle, std::move(memory));
  return handle;
}

Status RegistrationTable::remove(const void* handle) {
  if (byHandle_.erase(handle) == 0) {
    return invalidArgument("handle %p is not a registration of this communicator (already deregistered, or from "
                           "another communicator's ncclCommRegister)",
                           handle);
  }
  return Status::ok();
}

RegisteredMemory* RegistrationTable::find(const void* address, size_t bytes) const {
  for (const auto& [handle, memory] : byHandle_) {
    if (memory->contains(address, bytes)) return memory.get();
  }
  return nullptr;
}

}  // namespace weft::transport
