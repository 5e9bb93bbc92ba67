#include "tests/multirank/guarded_buffer.h"

#include <cstdio>
#include <cstdlib>
#include <new>

namespace weft::multirank {

GuardedBuffer::GuardedBuffer(size_t bytes, uint64_t seed) : bytes_(bytes), seed_(seed) {
  const size_t total = (2 * kGuardBytes + bytes + kGuardBytes - 1) / kGuardBytes * kGuardBytes;
  base_ = static_cast<uint8_t*>(std::aligned_alloc(kGuardBytes, total));
  if (base_ == nullptr) throw std::bad_alloc();
  for (size_t i = 0; i < kGuardBytes; ++i) {
    base_[i] = guardByte(i);
    base_[kGuardBytes + bytes_ + i] = guardByte(kGuardBytes + i);
  }
}

GuardedBuffer::~GuardedBuffer() { std::free(base_); }

uint8_t GuardedBuffer::guardByte(size_t index) const {
  return static_cast<uint8_t>((seed_ >> (8 * (index % 8))) ^ (index * 0x9d));
}

std::optional<std::string> GuardedBuffer::damagedGuard() const {
  char text[96];
  for (size_t i = 0; i < kGuardBytes; ++i) {
    // Nearest to the buffer first: an overrun usually starts there.
    const size_t before = kGuardBytes - 1 - i;
    if (base_[before] != guardByte(before)) {
      std::snprintf(text, sizeof(text), "byte %zu before the start changed from 0x%02x to 0x%02x",
                    i + 1, guardByte(before), base_[before]);
      return text;
    }
    const uint8_t after = base_[kGuardBytes + bytes_ + i];
    if (after != guardByte(kGuardBytes + i)) {
      std::snprintf(text, sizeof(text), "byte %zu after the end changed from 0x%02x to 0x%02x",
                    i + 1, guardByte(kGuardBytes + i), after);
      return text;
    }
  }
  return std::nullopt;
}

}  // namespace weft::multirank
