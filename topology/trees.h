#pragma once
// Trees over the nodes of a job, as NCCL's double binary tree builds them: two binary trees over
// the same ranks, the second the first mirrored or shifted, so that a rank that is an inner node of
// one tree is a leaf of the other almost always, and each tree carries half the data.

#include <array>

namespace weft::topology {

/// One rank's links in a tree: its parent (-1 at the root) and up to two children (-1: none).
struct TreeLinks {
  int parent = -1;
  std::array<int, 2> children = {-1, -1};
};

/// Rank `rank`'s links in the binary tree over ranks 0..count-1: rank 0 is the root and has one
/// child, the root of an in-order tree over ranks 1..count-1 (the largest power of two below
/// `count`). In that tree a rank whose lowest set bit is b has children rank - b/2 and rank + b/2
/// (the latter, if past the end, replaced by the nearest rank + b/4, + b/8, ... that exists), so
/// the depth is about log2(count) and neighbours in rank order are near each other in the tree.
TreeLinks binaryTreeLinks(int count, int rank);

/// Rank `rank`'s links in both trees of the double binary tree over `count` ranks: tree 0 is
/// binaryTreeLinks; tree 1 is tree 0 mirrored (rank r takes r' = count - 1 - r's place) when
/// `count` is even, and shifted by one (r takes (r + count - 1) % count's place) when it is odd.
std::array<TreeLinks, 2> doubleBinaryTreeLinks(int count, int rank);

}  // namespace weft::topology
