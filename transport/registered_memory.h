#pragma once
// Buffers the user registered with ncclCommRegister, as the executor and the transports see them.
//
// A registration is found by the address range an operation uses, but what a transport derives
// from it (ib: a memory region with its keys) is cached in the registration itself, and released
// when the registration ends (ncclCommDeregister, or the communicator's destruction). So a buffer
// freed and allocated again at the same address, registered anew, never meets a stale key.

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "src/base/status.h"

namespace weft::transport {

/// One ncclCommRegister'ed buffer. Used by one thread at a time (its communicator's).
class RegisteredMemory {
 public:
  RegisteredMemory(char* base, size_t bytes) : base_(base), bytes_(bytes) {}
  /// Runs the releases of everything cached, newest first.
  ~RegisteredMemory();
  RegisteredMemory(const RegisteredMemory&) = delete;
  RegisteredMemory& operator=(const RegisteredMemory&) = delete;

  char* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  /// True if [address, address + bytes) lies inside the buffer.
  bool contains(const void* address, size_t bytes) const;

  /// True if a transport cached something under `key` (e.g. an ib protection domain): then sets
  /// *value to it (which may be nullptr: "tried, and it cannot be used").
  bool cached(const void* key, void** value) const;
  /// Caches `value` under `key`; `release` runs when the registration ends.
  void cache(const void* key, void* value, std::function<void()> release);

 private:
  struct Entry {
    const void* key;
    void* value;
    std::function<void()> release;
  };
  char* base_;
  size_t bytes_;
  std::vector<Entry> entries_;
};

/// A communicator's registrations, by handle.
class RegistrationTable {
 public:
  /// Records [base, base + bytes); the returned pointer is the handle ncclCommRegister hands out.
  RegisteredMemory* add(void* base, size_t bytes);
  /// Ends the registration `handle` (from add). Fails with kInvalidArgument, changing nothing, if
  /// it is not a live handle of this table.
  Status remove(const void* handle);
  /// A registration that holds all of [address, address + bytes), or nullptr.
  RegisteredMemory* find(const void* address, size_t bytes) const;
  bool empty() const { return byHandle_.empty(); }

 private:
  std::map<const void*, std::unique_ptr<RegisteredMemory>> byHandle_;
};

}  // namespace weft::transport
