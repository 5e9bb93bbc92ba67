// The trees over a job's nodes (topology/trees.h), checked for every count up to 1024.

#include "topology/trees.h"

#include <gtest/gtest.h>

#include <vector>

namespace weft::topology {
namespace {

// Checks that `links` (one per rank) form one tree rooted at `root`: the parent and child links
// agree, every rank reaches the root, and no path is longer than `maxDepth`.
void expectOneTree(const std::vector<TreeLinks>& links, int root, int maxDepth, const std::string& what) {
  const int count = static_cast<int>(links.size());
  for (int rank = 0; rank < count; ++rank) {
    const TreeLinks& own = links[rank];
    if (rank == root) {
      ASSERT_EQ(own.parent, -1) << what << ": the root has a parent";
    } else {
      ASSERT_GE(own.parent, 0) << what << ": rank " << rank << " has no parent";
      ASSERT_LT(own.parent, count) << what << ": rank " << rank;
      const auto& siblings = links[own.parent].children;
      ASSERT_TRUE(siblings[0] == rank || siblings[1] == rank)
          << what << ": rank " << rank << "'s parent " << own.parent << " does not list it as a child";
    }
    for (int child : own.children) {
      if (child < 0) continue;
      ASSERT_LT(child, count) << what << ": rank " << rank;
      ASSERT_EQ(links[child].parent, rank) << what << ": child " << child << " of rank " << rank;
    }
    int depth = 0;
    for (int at = rank; at != root; at = links[at].parent) {
      ASSERT_LE(++depth, maxDepth) << what << ": rank " << rank << " is too deep (or on a cycle)";
    }
  }
}

int ceilLog2(int value) {
  int bits = 0;
  while ((1 << bits) < value) ++bits;
  return bits;
}

TEST(BinaryTree, IsOneShallowTreeForEveryCountUpTo1024) {
  for (int count = 1; count <= 1024; ++count) {
    std::vector<TreeLinks> links;
    for (int rank = 0; rank < count; ++rank) links.push_back(binaryTreeLinks(count, rank));
    expectOneTree(links, 0, ceilLog2(count) + 1, "count " + std::to_string(count));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(BinaryTree, SmallTreesAreTheInOrderShape) {
  // 8 ranks: 0 -> 4; 4 -> 2, 6; 2 -> 1, 3; 6 -> 5, 7.
  EXPECT_EQ(binaryTreeLinks(8, 0).children, (std::array<int, 2>{4, -1}));
  EXPECT_EQ(binaryTreeLinks(8, 4).children, (std::array<int, 2>{2, 6}));
  EXPECT_EQ(binaryTreeLinks(8, 6).children, (std::array<int, 2>{5, 7}));
  EXPECT_EQ(binaryTreeLinks(8, 7).parent, 6);
  // 10 ranks: 8's second child would be 12, then 10: it is 9.
  EXPECT_EQ(binaryTreeLinks(10, 8).children, (std::array<int, 2>{4, 9}));
  EXPECT_EQ(binaryTreeLinks(10, 9).parent, 8);
  EXPECT_EQ(binaryTreeLinks(1, 0).children, (std::array<int, 2>{-1, -1}));
}

TEST(DoubleBinaryTree, BothTreesAreTreesAndFewRanksAreInnerInBoth) {
  for (int count = 2; count <= 1024; ++count) {
    std::vector<TreeLinks> trees[2];
    for (int rank = 0; rank < count; ++rank) {
      const std::array<TreeLinks, 2> both = doubleBinaryTreeLinks(count, rank);
      trees[0].push_back(both[0]);
      trees[1].push_back(both[1]);
    }
    const std::string what = "count " + std::to_string(count);
    expectOneTree(trees[0], 0, ceilLog2(count) + 1, what + " tree 0");
    const int root1 = count % 2 == 0 ? count - 1 : 1;
    expectOneTree(trees[1], root1, ceilLog2(count) + 1, what + " tree 1");
    if (::testing::Test::HasFatalFailure()) return;
    // Each tree carries half the data: a rank that forwards in both would carry it all.
    int innerInBoth = 0;
    for (int rank = 0; rank < count; ++rank) {
      const bool inner0 = trees[0][rank].children[0] >= 0 || trees[0][rank].children[1] >= 0;
      const bool inner1 = trees[1][rank].children[0] >= 0 || trees[1][rank].children[1] >= 0;
      innerInBoth += inner0 && inner1 ? 1 : 0;
    }
    EXPECT_LE(innerInBoth, count % 2 == 0 ? 0 : 1) << what;
  }
}

}  // namespace
}  // namespace weft::topology
