#include "src/exec/direct_allreduce.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "algorithms/even_split.h"
#include "algorithms/reduce.h"
#include "src/base/log.h"
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

// A buffer of `bytes` at `offset` in window `number` that every rank reaches, as `peer`'s window
// lies in this process; null where there is none.
char* inPeerWindow(core::Communicator& comm, int peer, uint64_t number, uint64_t offset, size_t bytes) {
  const core::Window* window = number != 0 ? comm.windows().numbered(number) : nullptr;
  if (window == nullptr || window->peerBase(peer) == nullptr || offset > window->peerBytes(peer) ||
      bytes > window->peerBytes(peer) - offset) {
    return nullptr;
  }
  return window->peerBase(peer) + offset;
}

// Where each peer's buffers are reached in place (null: through cross-memory attach).
struct PeerBuffers {
  const char* send = nullptr;
  char* recv = nullptr;
};

// Each rank's buffers as this rank reaches them; an error if some peer's are reached neither in
// place nor through cross-memory attach.
Status reachPeers(const core::Op& op, std::span<const DirectDescriptor> descriptors, std::vector<PeerBuffers>* out) {
  const size_t bytes = op.count * algorithms::dataTypeSize(op.type);
  out->assign(descriptors.size(), PeerBuffers{});
  for (int peer = 0; peer < static_cast<int>(descriptors.size()); ++peer) {
    if (peer == op.comm->rank()) continue;
    const DirectDescriptor& described = descriptors[static_cast<size_t>(peer)];
    PeerBuffers& buffers = (*out)[static_cast<size_t>(peer)];
    buffers.send = inPeerWindow(*op.comm, peer, described.sendWindow, described.sendOffset, bytes);
    buffers.recv = inPeerWindow(*op.comm, peer, described.recvWindow, described.recvOffset, bytes);
    if ((buffers.send == nullptr || buffers.recv == nullptr) && op.comm->cmaMinBytes() == 0) {
      return invalidUsage("rank %d's allreduce buffers are not both in windows every rank reaches, while rank %d's "
                          "are: every rank's buffers must lie in such windows (ncclCommWindowRegister), or none",
                          peer, op.comm->rank());
    }
  }
  return Status::ok();
}

}  // namespace

bool runsDirect(const core::Op& op) {
  // One rank has no peer to read: its output is only a copy, which the ring makes.
  if (op.onDevice || op.collective != algorithms::Collective::kAllReduce || op.comm->nranks() < 2) return false;
  const size_t cmaMinBytes = op.comm->cmaMinBytes();
  return (cmaMinBytes > 0 && op.count * algorithms::dataTypeSize(op.type) >= cmaMinBytes) || runsInWindows(op);
}

bool runsInWindows(const core::Op& op) {
  using algorithms::Collective;
  const core::Communicator& comm = *op.comm;
  if (op.onDevice || op.collective != Collective::kAllReduce || comm.nranks() < 2) return false;
  // A form of the ring with no slots, counted as Simple (as NCCL counts NVLS).
  if (!comm.algorithmFilter().allows(Collective::kAllReduce, algorithms::Algorithm::kRing) ||
      !comm.protocolFilter().allows(Collective::kAllReduce, algorithms::Protocol::kSimple)) {
    return false;
  }
  const size_t bytes = op.count * algorithms::dataTypeSize(op.type);
  const size_t windowMinBytes = comm.windowMinBytes();
  const core::WindowTable& windows = op.comm->windows();
  return windowMinBytes > 0 && bytes >= windowMinBytes && windows.reachedWindowOf(op.sendbuff, bytes) != nullptr &&
         windows.reachedWindowOf(op.recvbuff, bytes) != nullptr;
}

DirectDescriptor describeBuffers(const core::Op& op) {
  DirectDescriptor descriptor;
  descriptor.pid = static_cast<int32_t>(getpid());
  descriptor.sendAddress = reinterpret_cast<uint64_t>(op.sendbuff);
  descriptor.recvAddress = reinterpret_cast<uint64_t>(op.recvbuff);
  descriptor.count = op.count;
  std::memcpy(descriptor.scalar, op.reduction.scalar, sizeof(descriptor.scalar));
  const size_t bytes = op.count * algorithms::dataTypeSize(op.type);
  size_t offset = 0;
  if (const core::Window* window = op.comm->windows().reachedWindowOf(op.sendbuff, bytes)) {
    (void)window->offsetOf(op.sendbuff, bytes, &offset);
    descriptor.sendWindow = window->number();
    descriptor.sendOffset = offset;
  }
  if (const core::Window* window = op.comm->windows().reachedWindowOf(op.recvbuff, bytes)) {
    (void)window->offsetOf(op.recvbuff, bytes, &offset);
    descriptor.recvWindow = window->number();
    descriptor.recvOffset = offset;
  }
  return descriptor;
}

Status reduceOwnShare(const core::Op& op, std::span<const DirectDescriptor> descriptors, bool streamOutput,
                      std::vector<char>* scratch) {
  const int nranks = op.comm->nranks();
  const int rank = op.comm->rank();
  for (int peer = 0; peer < nranks; ++peer) {
    if (descriptors[peer].count != op.count) {
      return invalidUsage("rank %d calls allreduce with count %llu, rank %d with count %zu: every rank must pass "
                          "the same count",
                          peer, static_cast<unsigned long long>(descriptors[peer].count), rank, op.count);
    }
  }
  std::vector<PeerBuffers> peers;
  WEFT_RETURN_IF_ERROR(reachPeers(op, descriptors, &peers));
  const auto inWindows = std::count_if(peers.begin(), peers.end(), [](const PeerBuffers& p) { return p.send != nullptr; });
  WEFT_INFO(log::kColl, "direct allreduce of %zu bytes: %d of %d peers' buffers reached in windows (any others by "
            "cross-memory attach)", op.count * algorithms::dataTypeSize(op.type), static_cast<int>(inWindows),
            nranks - 1);
  const size_t elementSize = algorithms::dataTypeSize(op.type);
  const algorithms::ElementRange share = algorithms::evenPart(op.count, static_cast<size_t>(nranks), rank);
  const size_t pieceElements = std::max<size_t>(kPieceBytes / elementSize, 1);
  scratch->resize(pieceElements * elementSize);
  const auto* ownSend = static_cast<const char*>(op.sendbuff);
  auto* ownRecv = static_cast<char*>(op.recvbuff);
  const bool preMulSum = op.reduction.kind == algorithms::RedOpKind::kPreMulSum;
  for (size_t begin = 0; begin < share.count; begin += pieceElements) {
    const size_t elements = std::min(pieceElements, share.count - begin);
    const size_t offset = (share.offset + begin) * elementSize;
    const size_t bytes = elements * elementSize;
    char* result = ownRecv + offset;
    // The first peer's piece meets this rank's own input in one pass (result = peer ⊕ own, each
    // scaled by its own rank's PreMulSum multiplier); the next peers' are added to the result,
    // which is still in cache.
    // The last pass also writes the first peer reached in place, whose output is then not copied.
    int remaining = nranks - 1;
    bool first = true;
    char* alsoOut = nullptr;
    int alsoPeer = -1;
    for (int peer = 0; peer < nranks && alsoOut == nullptr; ++peer) {
      if (peer != rank && peers[peer].recv != nullptr) {
        alsoOut = peers[peer].recv + offset;
        alsoPeer = peer;
      }
    }
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank) continue;
      const char* input = peers[peer].send != nullptr ? peers[peer].send + offset : nullptr;
      if (input == nullptr) {
        WEFT_RETURN_IF_ERROR(transfer(true, descriptors[peer].pid, scratch->data(),
                                      descriptors[peer].sendAddress + offset, bytes, peer));
        input = scratch->data();
      }
      --remaining;
      algorithms::Reduction peerReduction = op.reduction;
      std::memcpy(peerReduction.scalar, descriptors[peer].scalar, sizeof(peerReduction.scalar));
      const bool last = remaining == 0;
      char* out2 = last ? alsoOut : nullptr;
      // Both outputs are streamed (nobody reads them again soon), but in place, where their lines
      // were just read as the inputs and are in cache.
      const bool stream = last && streamOutput && op.sendbuff != op.recvbuff;
      if (first && preMulSum) {
        // Only the local operand is scaled: the own input alone first, then the peer's onto it.
        algorithms::reduce(op.reduction, {ownSend + offset, nullptr, result, nullptr, elements, false});
        algorithms::reduce(peerReduction, {input, result, result, out2, elements, last, stream, stream});
      } else if (first) {
        algorithms::reduce(op.reduction, {ownSend + offset, input, result, out2, elements, last, stream, stream});
      } else {
        algorithms::reduce(peerReduction, {input, result, result, out2, elements, last, stream, stream});
      }
      first = false;
    }
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank || peer == alsoPeer) continue;
      if (peers[peer].recv != nullptr) {
        algorithms::copyTo(result, peers[peer].recv + offset, nullptr, bytes);
      } else {
        WEFT_RETURN_IF_ERROR(transfer(false, descriptors[peer].pid, result, descriptors[peer].recvAddress + offset,
                                      bytes, peer));
      }
    }
  }
  return Status::ok();
}

}  // namespace weft::exec
