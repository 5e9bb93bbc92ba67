#include "src/exec/direct_allreduce.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "algorithms/even_split.h"
#include "algorithms/reduce.h"
#include "src/core/communicator.h"

namespace weft::exec {
namespace {

// Small enough that a piece and the peer's copy of it stay in a core's L2 between the read, the
// reduction and the writes.
constexpr size_t kPieceBytes = 256 << 10;

// Moves `bytes` between `local` and `remote` in process `pid` (readv: remote to local), looping
// over short transfers.
Status transfer(bool read, int pid, char* local, uint64_t remote, size_t bytes, int peerRank) {
  size_t done = 0;
  while (done < bytes) {
    iovec here{local + done, bytes - done};
    iovec there{reinterpret_cast<void*>(remote + done), bytes - done};
    const ssize_t moved = read ? process_vm_readv(pid, &here, 1, &there, 1, 0)
                               : process_vm_writev(pid, &here, 1, &there, 1, 0);
    if (moved < 0 && errno == EINTR) continue;
    if (moved <= 0) {
      return errnoStatus(moved < 0 ? errno : EIO, "%s rank %d's buffer (process %d) directly",
                         read ? "reading" : "writing", peerRank, pid)
          .withContext("direct allreduce; if the peer is alive, set WEFT_CMA_MIN_BYTES=0");
    }
    done += static_cast<size_t>(moved);
  }
  return Status::ok();
}

}  // namespace

bool runsDirect(const core::Op& op) {
  const size_t minBytes = op.comm->cmaMinBytes();
  return minBytes > 0 && !op.onDevice && op.collective == algorithms::Collective::kAllReduce &&
         op.count * algorithms::dataTypeSize(op.type) >= minBytes;
}

DirectDescriptor describeBuffers(const core::Op& op) {
  DirectDescriptor descriptor;
  descriptor.pid = static_cast<int32_t>(getpid());
  descriptor.sendAddress = reinterpret_cast<uint64_t>(op.sendbuff);
  descriptor.recvAddress = reinterpret_cast<uint64_t>(op.recvbuff);
  descriptor.count = op.count;
  std::memcpy(descriptor.scalar, op.reduction.scalar, sizeof(descriptor.scalar));
  return descriptor;
}

Status reduceOwnShare(const core::Op& op, std::span<const DirectDescriptor> descriptors, std::vector<char>* scratch) {
  const int nranks = op.comm->nranks();
  const int rank = op.comm->rank();
  for (int peer = 0; peer < nranks; ++peer) {
    if (descriptors[peer].count != op.count) {
      return invalidUsage("rank %d calls allreduce with count %llu, rank %d with count %zu: every rank must pass "
                          "the same count",
                          peer, static_cast<unsigned long long>(descriptors[peer].count), rank, op.count);
    }
  }
  const size_t elementSize = algorithms::dataTypeSize(op.type);
  const algorithms::ElementRange share = algorithms::evenPart(op.count, static_cast<size_t>(nranks), rank);
  const size_t pieceElements = std::max<size_t>(kPieceBytes / elementSize, 1);
  scratch->resize(pieceElements * elementSize);
  const auto* ownSend = static_cast<const char*>(op.sendbuff);
  auto* ownRecv = static_cast<char*>(op.recvbuff);
  for (size_t begin = 0; begin < share.count; begin += pieceElements) {
    const size_t elements = std::min(pieceElements, share.count - begin);
    const size_t offset = (share.offset + begin) * elementSize;
    const size_t bytes = elements * elementSize;
    char* result = ownRecv + offset;
    // The first peer's piece meets this rank's own input in one pass (result = peer ⊕ own, each
    // scaled by its own rank's PreMulSum multiplier); the next peers' are added to the result,
    // which is still in cache.
    int remaining = nranks - 1;
    bool first = true;
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank) continue;
      WEFT_RETURN_IF_ERROR(transfer(true, descriptors[peer].pid, scratch->data(),
                                    descriptors[peer].sendAddress + offset, bytes, peer));
      --remaining;
      algorithms::Reduction peerReduction = op.reduction;
      std::memcpy(peerReduction.scalar, descriptors[peer].scalar, sizeof(peerReduction.scalar));
      if (first) {
        if (op.reduction.kind == algorithms::RedOpKind::kPreMulSum) {
          algorithms::reduce(peerReduction, {scratch->data(), nullptr, scratch->data(), nullptr, elements, false});
        }
        algorithms::reduce(op.reduction, {ownSend + offset, scratch->data(), result, nullptr, elements, remaining == 0});
        first = false;
      } else {
        algorithms::reduce(peerReduction, {scratch->data(), result, result, nullptr, elements, remaining == 0});
      }
    }
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank) continue;
      WEFT_RETURN_IF_ERROR(transfer(false, descriptors[peer].pid, result, descriptors[peer].recvAddress + offset,
                                    bytes, peer));
    }
  }
  return Status::ok();
}

}  // namespace weft::exec
