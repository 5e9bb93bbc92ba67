#pragma once
// Reads typed values from a fuzz input, front to back. Past the end it yields zeros, so a target
// can take what it needs from any input, however short.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace weft::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t u8() { return static_cast<uint8_t>(integer(1)); }
  uint16_t u16() { return static_cast<uint16_t>(integer(2)); }
  uint32_t u32() { return static_cast<uint32_t>(integer(4)); }
  uint64_t u64() { return integer(8); }
  /// Fills [out, out+size): input bytes first, zeros once the input is used up.
  void bytes(void* out, size_t size) {
    size_t taken = std::min(size, remaining());
    if (taken > 0) memcpy(out, data_ + at_, taken);
    memset(static_cast<uint8_t*>(out) + taken, 0, size - taken);
    at_ += taken;
  }
  /// Up to `size` of the bytes not read yet (fewer near the end), without copying.
  std::span<const uint8_t> take(size_t size) {
    size_t taken = std::min(size, remaining());
    std::span<const uint8_t> part(data_ + at_, taken);
    at_ += taken;
    return part;
  }
  size_t remaining() const { return size_ - at_; }

 private:
  /// Little-endian, as Weft's wire formats.
  uint64_t integer(int size) {
    uint8_t raw[8] = {};
    bytes(raw, static_cast<size_t>(size));
    uint64_t value = 0;
    for (int i = 0; i < size; ++i) value |= uint64_t{raw[i]} << (8 * i);
    return value;
  }

  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace weft::fuzz
