#include "topology/trees.h"

namespace weft::topology {
namespace {

int lowestBit(int value) { return value & -value; }

int largestPowerOfTwoAtMost(int value) {
  int power = 1;
  while (power * 2 <= value) power *= 2;
  return power;
}

}  // namespace

TreeLinks binaryTreeLinks(int count, int rank) {
  TreeLinks links;
  if (count <= 1 || rank < 0 || rank >= count) return links;
  if (rank == 0) {
    links.children[0] = largestPowerOfTwoAtMost(count - 1);
    return links;
  }
  const int bit = lowestBit(rank);
  // The parent is the rank with the next higher lowest bit that has this rank in its span: above
  // or below it, whichever keeps the bit pattern; past the end, the one below. The top (the
  // largest power of two) hangs under rank 0.
  int parent = (rank ^ bit) | (bit << 1);
  if (parent >= count) parent = rank ^ bit;
  links.parent = parent;
  if (bit > 1) {
    links.children[0] = rank - bit / 2;
    for (int step = bit / 2; step > 0; step /= 2) {
      if (rank + step < count) {
        links.children[1] = rank + step;
        break;
      }
    }
  }
  return links;
}

std::array<TreeLinks, 2> doubleBinaryTreeLinks(int count, int rank) {
  const bool mirrored = count % 2 == 0;
  // Rank r of tree 1 sits where `toTree0(r)` sits in tree 0; `fromTree0` maps back.
  auto toTree0 = [&](int r) { return mirrored ? count - 1 - r : (r + count - 1) % count; };
  auto fromTree0 = [&](int r) { return r < 0 ? -1 : mirrored ? count - 1 - r : (r + 1) % count; };
  std::array<TreeLinks, 2> trees;
  trees[0] = binaryTreeLinks(count, rank);
  if (count <= 1 || rank < 0 || rank >= count) return trees;
  const TreeLinks inTree0 = binaryTreeLinks(count, toTree0(rank));
  trees[1].parent = fromTree0(inTree0.parent);
  trees[1].children = {fromTree0(inTree0.children[0]), fromTree0(inTree0.children[1])};
  return trees;
}

}  // namespace weft::topology
