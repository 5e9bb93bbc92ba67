#include "src/exec/direct_collectives.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "algorithms/collective_filter.h"
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

// Elements of op.count that `rank`'s send and receive buffers hold (0: a buffer the rank does not
// use, such as a non-root's Broadcast input).
algorithms::BufferElements elementsOf(const core::Op& op, int rank) {
  return algorithms::bufferElements({op.collective, op.count, op.root, op.comm->nranks(), rank});
}

// Whether a peer's buffers outside windows may be reached through cross-memory attach: an
// allreduce's only, where the probe at init found it works.
bool mayAttachAcrossProcesses(const core::Op& op) {
  return op.collective == algorithms::Collective::kAllReduce && op.comm->cmaMinBytes() > 0;
}

// Where each peer's buffers are reached in place (null: through cross-memory attach).
struct PeerBuffers {
  const char* send = nullptr;
  char* recv = nullptr;
};

// One call of runOwnPart: the op, every rank's descriptor and how this rank reaches each peer.
struct DirectPart {
  const core::Op& op;
  std::span<const DirectDescriptor> descriptors;
  std::vector<PeerBuffers> peers;
  std::vector<char>* scratch;  // holds a piece read through cross-memory attach
  size_t elementSize;
};

// Each rank's buffers as this rank reaches them; an error if some peer's are reached neither in
// place nor (an allreduce's only) through cross-memory attach.
Status reachPeers(DirectPart* part) {
  const core::Op& op = part->op;
  part->peers.assign(part->descriptors.size(), PeerBuffers{});
  for (int peer = 0; peer < static_cast<int>(part->descriptors.size()); ++peer) {
    if (peer == op.comm->rank()) continue;
    const DirectDescriptor& described = part->descriptors[static_cast<size_t>(peer)];
    const algorithms::BufferElements elements = elementsOf(op, peer);
    PeerBuffers& buffers = part->peers[static_cast<size_t>(peer)];
    buffers.send =
        inPeerWindow(*op.comm, peer, described.sendWindow, described.sendOffset, elements.send * part->elementSize);
    buffers.recv =
        inPeerWindow(*op.comm, peer, described.recvWindow, described.recvOffset, elements.recv * part->elementSize);
    // Every buffer the peer uses, though an allgather reads no peer's input and a reducescatter
    // writes no peer's output: NCCL's rule for symmetric windows, and what runsInWindows asked of
    // every rank.
    const bool reached =
        (elements.send == 0 || buffers.send != nullptr) && (elements.recv == 0 || buffers.recv != nullptr);
    if (!reached && !mayAttachAcrossProcesses(op)) {
      return invalidUsage("the %s buffers that rank %d uses are not in windows every rank reaches, while rank %d's "
                          "are: every rank's buffers must lie in such windows (ncclCommWindowRegister), or none",
                          algorithms::collectiveName(op.collective), peer, op.comm->rank());
    }
  }
  return Status::ok();
}

// `bytes` of `peer`'s input from byte `offset`: in place, or read into the scratch.
Status readPeerInput(const DirectPart& part, int peer, size_t offset, size_t bytes, const char** input) {
  const PeerBuffers& buffers = part.peers[static_cast<size_t>(peer)];
  if (buffers.send != nullptr) {
    *input = buffers.send + offset;
    return Status::ok();
  }
  WEFT_RETURN_IF_ERROR(transfer(true, part.descriptors[peer].pid, part.scratch->data(),
                                part.descriptors[peer].sendAddress + offset, bytes, peer));
  *input = part.scratch->data();
  return Status::ok();
}

// Reduces `elements` elements from byte `inputOffset` of every rank's input into `result`, this
// rank's (`ownInput`) first, each scaled by its own rank's PreMulSum multiplier; the last pass also
// writes `alsoOut` (if not null). The first peer's piece meets the own input in one pass, the next
// peers' are added to the result while it is still in cache. With `stream`, the last pass writes
// `result` with non-temporal stores, and `alsoOut` too with `streamAlsoOut`.
Status reducePiece(const DirectPart& part, size_t inputOffset, const char* ownInput, char* result, char* alsoOut,
                   size_t elements, bool stream, bool streamAlsoOut = false) {
  const core::Op& op = part.op;
  const int nranks = op.comm->nranks();
  const int rank = op.comm->rank();
  const bool preMulSum = op.reduction.kind == algorithms::RedOpKind::kPreMulSum;
  int remaining = nranks - 1;
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    const char* input = nullptr;
    WEFT_RETURN_IF_ERROR(readPeerInput(part, peer, inputOffset, elements * part.elementSize, &input));
    const bool first = remaining == nranks - 1;
    const bool last = --remaining == 0;
    algorithms::Reduction peerReduction = op.reduction;
    std::memcpy(peerReduction.scalar, part.descriptors[peer].scalar, sizeof(peerReduction.scalar));
    char* out2 = last ? alsoOut : nullptr;
    const bool streams = last && stream;
    const bool streams2 = streams && streamAlsoOut;
    if (first && preMulSum) {
      // Only the local operand is scaled: the own input alone first, then the peer's onto it.
      algorithms::reduce(op.reduction, {ownInput, nullptr, result, nullptr, elements, false});
      algorithms::reduce(peerReduction, {input, result, result, out2, elements, last, streams, streams2});
    } else if (first) {
      algorithms::reduce(op.reduction, {ownInput, input, result, out2, elements, last, streams, streams2});
    } else {
      algorithms::reduce(peerReduction, {input, result, result, out2, elements, last, streams, streams2});
    }
  }
  return Status::ok();
}

// AllReduce: part `rank` of the elements, reduced over every input and written into every output.
// The last pass writes the first peer reached in place beside this rank's own output; the result,
// still in cache, is then copied into the other peers' outputs.
Status allReduceShare(const DirectPart& part, bool streamOutput) {
  const core::Op& op = part.op;
  const int nranks = op.comm->nranks();
  const int rank = op.comm->rank();
  const size_t size = part.elementSize;
  const algorithms::ElementRange share = algorithms::evenPart(op.count, static_cast<size_t>(nranks), rank);
  int alsoPeer = -1;
  for (int peer = 0; peer < nranks && alsoPeer < 0; ++peer) {
    if (peer != rank && part.peers[peer].recv != nullptr) alsoPeer = peer;
  }
  // Like this rank's own, the peer's output is streamed only out of place: in place its lines are
  // the input this rank has just read, in cache.
  const bool alsoPeerOutOfPlace =
      alsoPeer >= 0 && part.descriptors[alsoPeer].recvAddress != part.descriptors[alsoPeer].sendAddress;
  const size_t pieceElements = std::max<size_t>(kPieceBytes / size, 1);
  for (size_t begin = 0; begin < share.count; begin += pieceElements) {
    const size_t elements = std::min(pieceElements, share.count - begin);
    const size_t offset = (share.offset + begin) * size;
    const size_t bytes = elements * size;
    const char* ownInput = static_cast<const char*>(op.sendbuff) + offset;
    char* result = static_cast<char*>(op.recvbuff) + offset;
    char* alsoOut = alsoPeer >= 0 ? part.peers[alsoPeer].recv + offset : nullptr;
    // In place, the output's lines were just read as the input and are in cache: not streamed.
    WEFT_RETURN_IF_ERROR(reducePiece(part, offset, ownInput, result, alsoOut, elements,
                                     streamOutput && result != ownInput, alsoPeerOutOfPlace));
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank || peer == alsoPeer) continue;
      if (part.peers[peer].recv != nullptr) {
        algorithms::copyTo(result, part.peers[peer].recv + offset, nullptr, bytes);
      } else {
        const DirectDescriptor& described = part.descriptors[peer];
        WEFT_RETURN_IF_ERROR(transfer(false, described.pid, result, described.recvAddress + offset, bytes, peer));
      }
    }
  }
  return Status::ok();
}

// AllGather: this rank's input, piece by piece, into part `rank` of every rank's output, so that
// each input is read once (in place, the copy into its own output is copyTo's no-op).
Status allGatherInput(const DirectPart& part, bool streamOutput) {
  const core::Op& op = part.op;
  const size_t bytes = op.count * part.elementSize;
  const size_t place = static_cast<size_t>(op.comm->rank()) * bytes;
  const auto* input = static_cast<const char*>(op.sendbuff);
  for (size_t begin = 0; begin < bytes; begin += kPieceBytes) {
    const size_t length = std::min(kPieceBytes, bytes - begin);
    algorithms::copyTo(input + begin, static_cast<char*>(op.recvbuff) + place + begin, nullptr, length, streamOutput);
    for (const PeerBuffers& peer : part.peers) {
      if (peer.recv == nullptr) continue;
      algorithms::copyTo(input + begin, peer.recv + place + begin, nullptr, length, streamOutput);
    }
  }
  return Status::ok();
}

// ReduceScatter: this rank's output, reduced over part `rank` of every rank's input.
Status reduceScatterOutput(const DirectPart& part, bool streamOutput) {
  const core::Op& op = part.op;
  const size_t size = part.elementSize;
  const size_t partOffset = static_cast<size_t>(op.comm->rank()) * op.count * size;
  const size_t pieceElements = std::max<size_t>(kPieceBytes / size, 1);
  for (size_t begin = 0; begin < op.count; begin += pieceElements) {
    const size_t elements = std::min(pieceElements, op.count - begin);
    const char* ownInput = static_cast<const char*>(op.sendbuff) + partOffset + begin * size;
    char* result = static_cast<char*>(op.recvbuff) + begin * size;
    WEFT_RETURN_IF_ERROR(reducePiece(part, partOffset + begin * size, ownInput, result, nullptr, elements,
                                     streamOutput && result != ownInput));
  }
  return Status::ok();
}

// Broadcast: part `rank` of the root's input, read once and written into every rank's output (at
// an in-place root, copyTo's no-op).
Status broadcastShare(const DirectPart& part, bool streamOutput) {
  const core::Op& op = part.op;
  const int rank = op.comm->rank();
  const size_t size = part.elementSize;
  const algorithms::ElementRange share = algorithms::evenPart(op.count, static_cast<size_t>(op.comm->nranks()), rank);
  const char* input = rank == op.root ? static_cast<const char*>(op.sendbuff) : part.peers[op.root].send;
  for (size_t begin = 0; begin < share.count * size; begin += kPieceBytes) {
    const size_t offset = share.offset * size + begin;
    const size_t length = std::min(kPieceBytes, share.count * size - begin);
    algorithms::copyTo(input + offset, static_cast<char*>(op.recvbuff) + offset, nullptr, length, streamOutput);
    for (const PeerBuffers& peer : part.peers) {
      if (peer.recv != nullptr) algorithms::copyTo(input + offset, peer.recv + offset, nullptr, length, streamOutput);
    }
  }
  return Status::ok();
}

}  // namespace

bool runsThroughCrossMemoryAttach(const core::Op& op) {
  // One rank has no peer to read: its output is only a copy, which the ring makes.
  if (op.onDevice || op.collective != algorithms::Collective::kAllReduce || op.comm->nranks() < 2) return false;
  const size_t cmaMinBytes = op.comm->cmaMinBytes();
  return cmaMinBytes > 0 && op.count * algorithms::dataTypeSize(op.type) >= cmaMinBytes;
}

bool runsInWindows(const core::Op& op) {
  const core::Communicator& comm = *op.comm;
  // The collectives NCCL_ALGO governs, each of which has a ring (this is a form of it with no
  // slots, counted as Simple, as NCCL counts NVLS), but Reduce: in windows it measured no faster
  // than its ring here (docs/PERFORMANCE.md).
  if (op.onDevice || comm.nranks() < 2 || !algorithms::governedByAlgo(op.collective) ||
      op.collective == algorithms::Collective::kReduce ||
      !comm.algorithmFilter().allows(op.collective, algorithms::Algorithm::kRing) ||
      !comm.protocolFilter().allows(op.collective, algorithms::Protocol::kSimple)) {
    return false;
  }
  const algorithms::BufferElements elements = elementsOf(op, comm.rank());
  const size_t size = algorithms::dataTypeSize(op.type);
  const size_t windowMinBytes = comm.windowMinBytes();
  const core::WindowTable& windows = op.comm->windows();
  // A buffer this rank does not use needs no window.
  auto inWindow = [&](const void* buffer, size_t elements) {
    return elements == 0 || windows.reachedWindowOf(buffer, elements * size) != nullptr;
  };
  return windowMinBytes > 0 && std::max(elements.send, elements.recv) * size >= windowMinBytes &&
         inWindow(op.sendbuff, elements.send) && inWindow(op.recvbuff, elements.recv);
}

DirectDescriptor describeBuffers(const core::Op& op) {
  DirectDescriptor descriptor;
  descriptor.pid = static_cast<int32_t>(getpid());
  descriptor.root = op.root;
  descriptor.sendAddress = reinterpret_cast<uint64_t>(op.sendbuff);
  descriptor.recvAddress = reinterpret_cast<uint64_t>(op.recvbuff);
  descriptor.count = op.count;
  std::memcpy(descriptor.scalar, op.reduction.scalar, sizeof(descriptor.scalar));
  const algorithms::BufferElements elements = elementsOf(op, op.comm->rank());
  const size_t size = algorithms::dataTypeSize(op.type);
  size_t offset = 0;
  if (const core::Window* window =
          elements.send > 0 ? op.comm->windows().reachedWindowOf(op.sendbuff, elements.send * size) : nullptr) {
    (void)window->offsetOf(op.sendbuff, elements.send * size, &offset);
    descriptor.sendWindow = window->number();
    descriptor.sendOffset = offset;
  }
  if (const core::Window* window =
          elements.recv > 0 ? op.comm->windows().reachedWindowOf(op.recvbuff, elements.recv * size) : nullptr) {
    (void)window->offsetOf(op.recvbuff, elements.recv * size, &offset);
    descriptor.recvWindow = window->number();
    descriptor.recvOffset = offset;
  }
  return descriptor;
}

Status runOwnPart(const core::Op& op, std::span<const DirectDescriptor> descriptors, bool streamOutput,
                  std::vector<char>* scratch) {
  const int nranks = op.comm->nranks();
  const int rank = op.comm->rank();
  const char* name = algorithms::collectiveName(op.collective);
  for (int peer = 0; peer < nranks; ++peer) {
    if (descriptors[peer].count != op.count) {
      return invalidUsage("rank %d calls %s with count %llu, rank %d with count %zu: every rank must pass the same "
                          "count",
                          peer, name, static_cast<unsigned long long>(descriptors[peer].count), rank, op.count);
    }
    if (descriptors[peer].root != op.root) {
      return invalidUsage("rank %d calls %s with root %d, rank %d with root %d: every rank must pass the same root",
                          peer, name, descriptors[peer].root, rank, op.root);
    }
  }
  DirectPart part{op, descriptors, {}, scratch, algorithms::dataTypeSize(op.type)};
  const algorithms::BufferElements elements = elementsOf(op, rank);
  WEFT_RETURN_IF_ERROR(reachPeers(&part));
  const auto inWindows = std::count_if(part.peers.begin(), part.peers.end(),
                                       [](const PeerBuffers& p) { return p.send != nullptr || p.recv != nullptr; });
  WEFT_INFO(log::kColl, "direct %s of %zu bytes: %d of %d peers' buffers reached in windows (any others by "
            "cross-memory attach)", name, std::max(elements.send, elements.recv) * part.elementSize,
            static_cast<int>(inWindows), nranks - 1);
  if (mayAttachAcrossProcesses(op)) {
    scratch->resize(std::max<size_t>(kPieceBytes / part.elementSize, 1) * part.elementSize);
  }
  switch (op.collective) {
    case algorithms::Collective::kAllGather: return allGatherInput(part, streamOutput);
    case algorithms::Collective::kReduceScatter: return reduceScatterOutput(part, streamOutput);
    case algorithms::Collective::kBroadcast: return broadcastShare(part, streamOutput);
    case algorithms::Collective::kAllReduce: return allReduceShare(part, streamOutput);
    default: return internalError("%s has no direct form", name);
  }
}

}  // namespace weft::exec
