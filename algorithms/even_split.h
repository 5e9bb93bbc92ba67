#pragma once
// Cutting a range of elements into parts as even as possible.

#include <cassert>
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

/// Part `index` of `total` elements cut as evenPart cuts them, but in whole units of `granule`
/// (positive) elements: every part that holds data starts on a multiple of `granule`, and the
/// `total % granule` elements that make no whole unit go to the last part or, where some parts
/// get no whole unit, to the first of those, so that the parts holding data come first. With
/// `granule` 1 it is evenPart.
constexpr ElementRange evenPartInUnits(size_t total, size_t parts, size_t index, size_t granule) {
  assert(granule > 0);
  const size_t units = total / granule;
  const size_t rest = total % granule;
  const size_t restPart = units < parts ? units : parts - 1;
  const ElementRange whole = evenPart(units, parts, index);
  ElementRange range{whole.offset * granule, whole.count * granule};
  if (index == restPart) range.count += rest;
  if (index > restPart) range.offset += rest;
  return range;
}

}  // namespace weft::algorithms
