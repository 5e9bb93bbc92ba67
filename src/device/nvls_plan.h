#pragma once
// When an allreduce on GPU buffers can run through NVLS, and how an NVLS launch splits its bytes.
// Every build has this (the communicator and the GPU executor use it; unit tests check it anywhere).
// The multicast setup is src/device/nvls_team.h, the kernel src/device/nvls_allreduce.h.
//
// NVLS (NVLink SHARP): the NVSwitches of a Hopper or later machine reduce a load across every GPU of
// a multicast object (`multimem.ld_reduce`) and copy a store to every GPU (`multimem.st`). Each
// rank binds a staging area of its own GPU's memory to one multicast object, so that one address
// reaches the same offset of every rank's area. An allreduce then goes piece by piece: every rank
// copies its piece of the input into its area; after a barrier, each rank reduces one n-th of the
// piece across all areas and stores the result into all of them; after a second barrier, every
// rank copies the piece out of its area into its output. Each byte crosses NVLink once each way.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/datatype.h"
#include "algorithms/even_split.h"
#include "src/base/peer_info.h"

namespace weft::device {

/// The most thread blocks an NVLS launch runs; NCCL_NVLS_NCHANNELS (or ncclConfig_t.nvlsCTAs) sets
/// a communicator's count, 16 by default as in NCCL.
inline constexpr int kMaxNvlsBlocks = 32;
/// A block's staging area in every rank's memory: the largest piece.
inline constexpr size_t kNvlsAreaBytes = size_t{256} << 10;
/// Per block, in front of the staging areas: its barrier counter (which every rank's arrival
/// increments through the multicast address) and, apart, the barriers it has passed (its own
/// rank's only), each on a line of its own.
inline constexpr size_t kNvlsControlLineBytes = 128;
inline constexpr size_t kNvlsControlBytes = 2 * kMaxNvlsBlocks * kNvlsControlLineBytes;
/// A launch takes one block per this many bytes (at least one, at most the communicator's).
inline constexpr size_t kNvlsBytesPerBlock = size_t{64} << 10;

/// The bytes each rank binds to the multicast object of a communicator with `blocks` NVLS blocks
/// (before rounding up to the driver's granularity).
size_t nvlsTeamBytes(int blocks);

/// Where a launch's staging areas start, from the start of the bound memory.
inline constexpr size_t nvlsAreaOffset(int block) { return kNvlsControlBytes + block * kNvlsAreaBytes; }

struct NvlsVerdict {
  bool possible = false;
  /// Why not, naming the first rank or setting that rules it out ("" when possible).
  std::string reason;
};

/// Whether the ranks of `peers` can form a multicast team: at least two, on one host, each on a GPU
/// of its own that reports multicast (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: Hopper or later on
/// NVSwitches, with the fabric manager running) and that its process was already using when the
/// communicator was made (Weft creates no CUDA context for a host-memory program), and
/// NCCL_NVLS_ENABLE not 0 (`enabled`). The same answer on every rank.
NvlsVerdict nvlsTeamVerdict(const std::vector<PeerInfo>& peers, bool enabled);

/// Whether the switches reduce `type` with `kind` for the NVLS kernel (multimem's arithmetic on
/// sm_90): sum of 32- and 64-bit integers, half, bfloat16, float and double; min and max of 32- and
/// 64-bit integers, half and bfloat16. `divisor` > 1 (the integer average) and every other op are
/// not.
bool nvlsReduces(algorithms::DataType type, algorithms::RedOpKind kind, uint64_t divisor);

/// Blocks an NVLS allreduce of `bytes` launches on a communicator of `teamBlocks`: one per
/// kNvlsBytesPerBlock, at least one, at most teamBlocks. The same on every rank for the same call.
int nvlsLaunchBlocks(size_t bytes, int teamBlocks);

/// The bytes of each piece of a launch of `blocks` blocks for `bytes`: the blocks' even shares,
/// rounded up to 16, at least 16 and at most kNvlsAreaBytes, so that every block has work. constexpr,
/// so that the kernel computes the pieces as the host does (built with relaxed constexpr).
constexpr uint64_t nvlsPieceBytes(uint64_t bytes, int blocks) {
  const uint64_t share = (bytes + static_cast<uint64_t>(blocks) - 1) / static_cast<uint64_t>(blocks);
  const uint64_t rounded = (share + 15) / 16 * 16;
  return rounded < 16 ? 16 : rounded > kNvlsAreaBytes ? kNvlsAreaBytes : rounded;
}

/// The byte range [begin, end) of `bytes` that block `block` of `blocks` moves in its round
/// `round`: pieces of `pieceBytes` dealt to the blocks in turn. Empty (begin == end) past the end.
struct NvlsPiece {
  uint64_t begin = 0;
  uint64_t end = 0;
};
constexpr NvlsPiece nvlsPiece(uint64_t bytes, uint64_t pieceBytes, int blocks, int block, uint64_t round) {
  const uint64_t begin = (round * static_cast<uint64_t>(blocks) + static_cast<uint64_t>(block)) * pieceBytes;
  if (begin >= bytes) return {bytes, bytes};
  return {begin, begin + pieceBytes < bytes ? begin + pieceBytes : bytes};
}

/// The rounds block `block` of `blocks` runs for `bytes`: those whose piece is not empty.
constexpr uint64_t nvlsRounds(uint64_t bytes, uint64_t pieceBytes, int blocks, int block) {
  const uint64_t pieces = (bytes + pieceBytes - 1) / pieceBytes;
  const uint64_t b = static_cast<uint64_t>(block);
  return pieces > b ? (pieces - b + static_cast<uint64_t>(blocks) - 1) / static_cast<uint64_t>(blocks) : 0;
}

/// The 16-byte words of a piece of `pieceBytes` that rank `rank` of `nranks` reduces: the piece
/// rounded up to whole words, split evenly. The words past the piece's bytes reduce whatever the
/// areas hold there and are never copied out.
constexpr algorithms::ElementRange nvlsRankWords(uint64_t pieceBytes, int rank, int nranks) {
  return algorithms::evenPart((pieceBytes + 15) / 16, static_cast<size_t>(nranks), static_cast<size_t>(rank));
}

}  // namespace weft::device
