#include "src/exec/call_check.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "algorithms/collective.h"
#include "algorithms/datatype.h"
#include "src/core/communicator.h"
#include "src/exec/direct_collectives.h"

namespace weft::exec {
namespace {

using algorithms::Collective;
using algorithms::hasRoot;
using algorithms::isPointToPoint;
using algorithms::reduces;

/// One collective call as every rank must make it.
struct CollectiveCall {
  int32_t collective;
  int32_t type;
  int32_t redOp;  // RedOpKind; -1 when the collective does not reduce
  int32_t root;   // -1 when the collective has none
  int32_t onDevice;  // 1: GPU buffers (the stream path), 0: host buffers
  int32_t inWindows;  // 1: runs direct in windows (direct_collectives.h: runsInWindows)
  uint64_t count;
};

constexpr int kShownCalls = 4;  // collectives described in full; the rest are hashed

struct Header {
  uint64_t firstSequence;
  uint64_t callsHash;  // of every CollectiveCall of the launch
  uint32_t collectives;
  uint32_t reserved;
  CollectiveCall shown[kShownCalls];
};

CollectiveCall describe(const core::Op& op) {
  CollectiveCall call{};
  call.collective = static_cast<int32_t>(op.collective);
  call.type = static_cast<int32_t>(op.type);
  call.redOp = reduces(op.collective) ? static_cast<int32_t>(op.reduction.kind) : -1;
  call.root = hasRoot(op.collective) ? op.root : -1;
  call.onDevice = op.onDevice ? 1 : 0;
  call.inWindows = runsInWindows(op) ? 1 : 0;
  call.count = op.count;
  return call;
}

uint64_t hashInto(uint64_t hash, const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

const char* redOpName(int32_t kind) {
  switch (static_cast<algorithms::RedOpKind>(kind)) {
    case algorithms::RedOpKind::kSum: return "sum";
    case algorithms::RedOpKind::kProd: return "prod";
    case algorithms::RedOpKind::kMax: return "max";
    case algorithms::RedOpKind::kMin: return "min";
    case algorithms::RedOpKind::kPreMulSum: return "avg or premulsum";
  }
  return "?";
}

std::string callText(const CollectiveCall& call, uint64_t sequence) {
  std::string text = std::string(algorithms::collectiveName(static_cast<Collective>(call.collective))) + " #" +
                     std::to_string(sequence) + " (count " + std::to_string(call.count) + ", " +
                     algorithms::dataTypeName(static_cast<algorithms::DataType>(call.type));
  if (call.redOp >= 0) text += std::string(", ") + redOpName(call.redOp);
  if (call.root >= 0) text += ", root " + std::to_string(call.root);
  text += call.onDevice != 0 ? ", GPU buffers" : ", host buffers";
  if (call.inWindows != 0) text += " in windows";
  return text + ")";
}

Header headerOf(std::span<const uint8_t> gathered, size_t bytes, int rank) {
  Header header;
  memcpy(&header, gathered.data() + bytes * static_cast<size_t>(rank), sizeof(header));
  return header;
}

PeerTraffic trafficOf(std::span<const uint8_t> gathered, size_t bytes, int rank, int peer) {
  PeerTraffic traffic;
  memcpy(&traffic, gathered.data() + bytes * static_cast<size_t>(rank) + sizeof(Header) + sizeof(PeerTraffic) * peer,
         sizeof(traffic));
  return traffic;
}

Status differs(const std::string& what) {
  return invalidUsage("WEFT_CHECK: the ranks' calls do not match: %s. Every rank must make the same collective "
                      "calls, in the same order, with the same count, type, operator, root and kind of buffer (GPU or host, in "
                      "windows or not), and every send "
                      "needs its receive",
                      what.c_str());
}

/// Compares rank `rank`'s collectives with rank 0's.
Status compareCollectives(const Header& first, const Header& other, int rank) {
  if (first.firstSequence == other.firstSequence && first.collectives == other.collectives &&
      first.callsHash == other.callsHash) {
    return Status::ok();
  }
  int shown = static_cast<int>(std::min<uint32_t>(std::min(first.collectives, other.collectives), kShownCalls));
  for (int i = 0; i < shown; ++i) {
    if (memcmp(&first.shown[i], &other.shown[i], sizeof(CollectiveCall)) != 0 || first.firstSequence != other.firstSequence) {
      return differs("rank 0 calls " + callText(first.shown[i], first.firstSequence + i) + " where rank " +
                     std::to_string(rank) + " calls " + callText(other.shown[i], other.firstSequence + i));
    }
  }
  if (first.collectives != other.collectives) {
    return differs("rank 0 makes " + std::to_string(first.collectives) + " collective call(s) in this launch, rank " +
                   std::to_string(rank) + " makes " + std::to_string(other.collectives));
  }
  return differs("a collective call after the first " + std::to_string(kShownCalls) +
                 " of this launch differs between rank 0 and rank " + std::to_string(rank));
}

std::string messages(uint32_t count, uint64_t bytes) {
  return std::to_string(count) + " message(s), " + std::to_string(bytes) + " bytes in all";
}

bool involvesEveryRank(std::span<const core::Op* const> ops) {
  for (const core::Op* op : ops) {
    if (!isPointToPoint(op->collective)) return true;
  }
  return false;
}

}  // namespace

std::vector<PeerTraffic> trafficByPeer(std::span<const core::Op* const> ops, int nranks) {
  std::vector<PeerTraffic> traffic(nranks);
  for (const core::Op* op : ops) {
    if (!isPointToPoint(op->collective)) continue;
    uint64_t bytes = op->count * algorithms::dataTypeSize(op->type);
    PeerTraffic& peer = traffic[op->root];
    if (op->collective == Collective::kSend) {
      ++peer.sends;
      peer.sendBytes += bytes;
    } else {
      ++peer.recvs;
      peer.recvBytes += bytes;
    }
  }
  return traffic;
}

Status compareTraffic(int from, int to, const PeerTraffic& fromToTo, const PeerTraffic& toFromFrom) {
  if (fromToTo.sends == toFromFrom.recvs && fromToTo.sendBytes == toFromFrom.recvBytes) return Status::ok();
  return differs("rank " + std::to_string(from) + " sends " + messages(fromToTo.sends, fromToTo.sendBytes) +
                 " to rank " + std::to_string(to) + ", which receives " +
                 messages(toFromFrom.recvs, toFromFrom.recvBytes) + " from rank " + std::to_string(from));
}

size_t callSignatureBytes(int nranks) { return sizeof(Header) + sizeof(PeerTraffic) * static_cast<size_t>(nranks); }

std::vector<uint8_t> buildCallSignature(std::span<const core::Op* const> ops, uint64_t firstSequence, int nranks) {
  Header header{};
  header.firstSequence = firstSequence;
  header.callsHash = 1469598103934665603ull;
  std::vector<PeerTraffic> traffic = trafficByPeer(ops, nranks);
  for (const core::Op* op : ops) {
    if (isPointToPoint(op->collective)) continue;
    CollectiveCall call = describe(*op);
    if (header.collectives < kShownCalls) header.shown[header.collectives] = call;
    ++header.collectives;
    header.callsHash = hashInto(header.callsHash, &call, sizeof(call));
  }
  std::vector<uint8_t> signature(callSignatureBytes(nranks));
  memcpy(signature.data(), &header, sizeof(header));
  memcpy(signature.data() + sizeof(header), traffic.data(), sizeof(PeerTraffic) * traffic.size());
  return signature;
}

Status compareCallSignatures(std::span<const uint8_t> gathered, int nranks) {
  const size_t bytes = callSignatureBytes(nranks);
  if (gathered.size() != bytes * static_cast<size_t>(nranks)) {
    return internalError("WEFT_CHECK: %zu signature bytes for %d ranks of %zu", gathered.size(), nranks, bytes);
  }
  const Header first = headerOf(gathered, bytes, 0);
  for (int rank = 1; rank < nranks; ++rank) {
    WEFT_RETURN_IF_ERROR(compareCollectives(first, headerOf(gathered, bytes, rank), rank));
  }
  for (int from = 0; from < nranks; ++from) {
    for (int to = 0; to < nranks; ++to) {
      WEFT_RETURN_IF_ERROR(
          compareTraffic(from, to, trafficOf(gathered, bytes, from, to), trafficOf(gathered, bytes, to, from)));
    }
  }
  return Status::ok();
}

LaunchCheck::LaunchCheck(std::span<const core::Op> ops) {
  std::vector<core::Communicator*> comms;
  for (const core::Op& op : ops) {
    if (op.comm->checksCalls() && std::find(comms.begin(), comms.end(), op.comm) == comms.end()) {
      comms.push_back(op.comm);
    }
  }
  // Sized once: the exchange ops point into the exchanges.
  exchanges_.resize(comms.size());
  for (size_t i = 0; i < comms.size(); ++i) {
    Exchange& exchange = exchanges_[i];
    exchange.comm = comms[i];
    const int nranks = exchange.comm->nranks();
    std::vector<const core::Op*> mine;
    uint64_t collectives = 0;
    for (const core::Op& op : ops) {
      if (op.comm != exchange.comm) continue;
      mine.push_back(&op);
      if (!isPointToPoint(op.collective)) ++collectives;
    }
    exchange.everyRank = involvesEveryRank(mine);
    if (exchange.everyRank) {
      exchange.signature = buildCallSignature(mine, exchange.comm->takeCollectiveNumbers(collectives), nranks);
      exchange.gathered.resize(exchange.signature.size() * static_cast<size_t>(nranks));
      addOp(exchange.comm, Collective::kAllGather, exchange.signature.data(), exchange.gathered.data(),
            exchange.signature.size(), 0);
      continue;
    }
    // Only the peers take part: each tells each of its peers what it sends to and receives from it.
    exchange.mine = trafficByPeer(mine, nranks);
    exchange.theirs.assign(nranks, PeerTraffic{});
    for (int peer = 0; peer < nranks; ++peer) {
      const PeerTraffic& traffic = exchange.mine[peer];
      if (traffic.sends == 0 && traffic.recvs == 0) continue;
      addOp(exchange.comm, Collective::kSend, &exchange.mine[peer], nullptr, sizeof(PeerTraffic), peer);
      addOp(exchange.comm, Collective::kRecv, nullptr, &exchange.theirs[peer], sizeof(PeerTraffic), peer);
    }
  }
}

void LaunchCheck::addOp(core::Communicator* comm, Collective collective, const void* send, void* recv, size_t bytes,
                        int peer) {
  core::Op op;
  op.comm = comm;
  op.collective = collective;
  op.sendbuff = send;
  op.recvbuff = recv;
  op.count = bytes;
  op.root = peer;
  op.type = algorithms::DataType::kUint8;
  op.reduction.type = algorithms::DataType::kUint8;
  op.internal = true;
  exchangeOps_.push_back(op);
}

Status LaunchCheck::compare() const {
  for (const Exchange& exchange : exchanges_) {
    const int nranks = exchange.comm->nranks();
    if (exchange.everyRank) {
      WEFT_RETURN_IF_ERROR(compareCallSignatures(exchange.gathered, nranks));
      continue;
    }
    const int me = exchange.comm->rank();
    for (int peer = 0; peer < nranks; ++peer) {
      const PeerTraffic& mine = exchange.mine[peer];
      if (mine.sends == 0 && mine.recvs == 0) continue;
      const PeerTraffic& theirs = exchange.theirs[peer];
      // The lower rank's view first, so that both ends word the same difference the same way.
      const int low = std::min(me, peer), high = std::max(me, peer);
      const PeerTraffic& lowToHigh = me == low ? mine : theirs;
      const PeerTraffic& highToLow = me == low ? theirs : mine;
      WEFT_RETURN_IF_ERROR(compareTraffic(low, high, lowToHigh, highToLow));
      WEFT_RETURN_IF_ERROR(compareTraffic(high, low, highToLow, lowToHigh));
    }
  }
  return Status::ok();
}

}  // namespace weft::exec
