#pragma once
// A host buffer with guard bytes on both sides, to catch a collective writing outside its buffer.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace weft::multirank {

class GuardedBuffer {
 public:
  /// `bytes` may be 0 (data() is still a valid, 64-byte aligned pointer). The guards hold a
  /// pattern derived from `seed`; the contents start unspecified.
  GuardedBuffer(size_t bytes, uint64_t seed);
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  void* data() { return base_ + kGuardBytes; }
  const void* data() const { return base_ + kGuardBytes; }
  size_t bytes() const { return bytes_; }

  /// "byte 1 after the end changed from 0x5a to 0x00", or nullopt when both guards are intact.
  std::optional<std::string> damagedGuard() const;

 private:
  static constexpr size_t kGuardBytes = 64;

  uint8_t guardByte(size_t index) const;

  size_t bytes_;
  uint64_t seed_;
  uint8_t* base_;
};

}  // namespace weft::multirank
