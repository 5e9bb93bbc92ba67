#pragma once
// Cutting a range of elements into parts as even as possible.

#include <cstddef>

namespace weft::algorithms {

struct ElementRange {
  size_t offset = 0;
  size_t count = 0;
};

/// Part `index` of `total` elements cut into `parts` contiguous parts whose sizes differ by at
/// most one, the larger parts first. `parts` must be positive and `index` below it.
constexpr ElementRange evenPart(size_t total, size_t parts, size_t index) {
  size_t base = total / parts;
  size_t extra = total % parts;
  size_t offset = index * base + (index < extra ? index : extra);
  return {offset, base + (index < extra ? 1 : 0)};
}

}  // namespace weft::algorithms
