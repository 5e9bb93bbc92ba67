#pragma once
// The uneven exchange of alltoallv_perf, as the AlltoAllv test of the nccl-tests family defines it
// (rccl-tests' alltoallv.cu): with a call's count argument blockCount, each rank's buffer holds
// nranks * blockCount elements, cut into one block per peer in peer order. Rank r's block for peer
// p holds ((p + r) % nranks) * chunk elements, chunk = 2 * blockCount / nranks, and the pair whose
// (p + r) % nranks is 0 also gets what the others leave, so that the blocks fill the buffer exactly.
// The pattern is symmetric: r sends to p as many elements as it receives from p.

#include <cstddef>

namespace weft::perf {

/// Elements rank sends to peer (and receives from peer) in a call with count argument blockCount.
inline size_t alltoallvPeerCount(size_t blockCount, int rank, int peer, int nranks) {
  const auto n = static_cast<size_t>(nranks);
  const size_t chunk = blockCount * 2 / n;
  const size_t turn = static_cast<size_t>(peer + rank) % n;
  const size_t leftover = blockCount * n - chunk * (n - 1) * n / 2;
  return turn * chunk + (turn == 0 ? leftover : 0);
}

/// Where rank's block for peer starts, in elements from the start of rank's buffer: the sum of its
/// blocks for peers 0 .. peer-1.
inline size_t alltoallvPeerOffset(size_t blockCount, int rank, int peer, int nranks) {
  size_t offset = 0;
  for (int p = 0; p < peer; ++p) offset += alltoallvPeerCount(blockCount, rank, p, nranks);
  return offset;
}

}  // namespace weft::perf
