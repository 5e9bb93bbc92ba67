#include "tests/multirank/collective_run.h"

#include <cstring>
#include <vector>

#include "tests/harness/rank_check.h"
#include "tests/multirank/guarded_buffer.h"
#include "tests/multirank/reference.h"
#include "tests/multirank/test_inputs.h"

namespace weft::multirank {
namespace {

// A rank id no real rank has, so that the initial fill of receive buffers differs from any input.
constexpr int kFillerRank = 1 << 20;

char* elementAt(void* buffer, const ElementType& type, size_t index) {
  return static_cast<char*>(buffer) + index * type.size;
}

// Compares `count` elements; on a difference records "<what> element i of n: got .. want ..".
void checkElements(const CollectiveRun& run, const char* what, const void* got, const void* want,
                   size_t count, int ulps) {
  std::optional<Mismatch> mismatch = findMismatch(*run.type, got, want, count, ulps);
  RANK_CHECK(!mismatch.has_value())
      << run.describe() << ": " << what << " element " << mismatch->firstIndex << " of " << count
      << ": got " << formatBits(*run.type, loadBits(*run.type, got, mismatch->firstIndex))
      << " want " << formatBits(*run.type, loadBits(*run.type, want, mismatch->firstIndex))
      << (ulps > 0 ? " (beyond " + std::to_string(ulps) + " ulp)" : std::string())
      << "; " << mismatch->count << " element(s) differ";
}

void checkGuards(const CollectiveRun& run, const char* what, const GuardedBuffer& buffer) {
  std::optional<std::string> damage = buffer.damagedGuard();
  RANK_CHECK(!damage.has_value()) << run.describe() << ": wrote outside the " << what << " ("
                                  << buffer.bytes() << " bytes): " << *damage;
}

// Makes the PreMulSum op for this communicator and type when `run` needs one.
void makeOp(const CollectiveRun& run, ncclComm_t comm, ncclRedOp_t* op) {
  *op = run.op.builtinOp();
  if (run.op.kind != ReduceKind::kPreMulSum) return;
  uint64_t scalar = scalarBits(*run.type, run.op.scalar);  // little-endian: the low bytes
  RANK_CHECK_NCCL(ncclRedOpCreatePreMulSum(op, &scalar, run.type->type, ncclScalarHostImmediate,
                                           comm))
      << "for " << run.describe();
}

void destroyOp(const CollectiveRun& run, ncclComm_t comm, ncclRedOp_t op) {
  if (run.op.kind != ReduceKind::kPreMulSum) return;
  RANK_CHECK_NCCL(ncclRedOpDestroy(op, comm)) << "after " << run.describe();
}

void runInPlace(ncclComm_t comm, int nranks, int rank, const CollectiveRun& run, ncclRedOp_t op,
                const BufferLayout& layout, int ulps, BufferPlacement* placement) {
  const ElementType& type = *run.type;
  GuardedBuffer buffer(layout.inPlaceCount * type.size, run.seed);
  fillArbitraryInput(type, kFillerRank + rank, run.seed, 0, layout.inPlaceCount, buffer.data());
  fillRankInput(run, nranks, rank, 0, layout.sendCount,
                elementAt(buffer.data(), type, layout.inPlaceSendOffset));
  std::vector<char> expected(buffer.bytes());
  if (!expected.empty()) std::memcpy(expected.data(), buffer.data(), expected.size());
  expectResult(run, nranks, rank, elementAt(expected.data(), type, layout.inPlaceRecvOffset));

  void* base = placement != nullptr ? placement->place(buffer.data(), buffer.bytes()) : buffer.data();
  if (placement != nullptr) placement->ready();
  void* recv = elementAt(base, type, layout.inPlaceRecvOffset);
  const void* send = elementAt(base, type, layout.inPlaceSendOffset);
  const cudaStream_t stream = placement != nullptr ? placement->stream() : cudaStream_t{};
  RANK_CHECK_NCCL(issueCollective(run, op, send, recv, comm, nranks, rank, stream)) << "in " << run.describe();
  if (placement != nullptr) placement->finish();
  if (harness::rankFailed()) return;
  checkElements(run, "in-place buffer", buffer.data(), expected.data(), layout.inPlaceCount, ulps);
  if (harness::rankFailed()) return;
  checkGuards(run, "in-place buffer", buffer);
}

void runOutOfPlace(ncclComm_t comm, int nranks, int rank, const CollectiveRun& run, ncclRedOp_t op,
                   const BufferLayout& layout, int ulps, BufferPlacement* placement) {
  const ElementType& type = *run.type;
  GuardedBuffer send(layout.sendCount * type.size, run.seed);
  GuardedBuffer recv(layout.recvCount * type.size, ~run.seed);
  fillRankInput(run, nranks, rank, 0, layout.sendCount, send.data());
  fillArbitraryInput(type, kFillerRank + rank, run.seed, 0, layout.recvCount, recv.data());
  std::vector<char> sent(send.bytes());
  if (!sent.empty()) std::memcpy(sent.data(), send.data(), sent.size());
  std::vector<char> expected(recv.bytes());
  if (!expected.empty()) std::memcpy(expected.data(), recv.data(), expected.size());
  expectResult(run, nranks, rank, expected.data());

  void* sendAt = placement != nullptr ? placement->place(send.data(), send.bytes()) : send.data();
  void* recvAt = placement != nullptr ? placement->place(recv.data(), recv.bytes()) : recv.data();
  if (placement != nullptr) placement->ready();
  const cudaStream_t stream = placement != nullptr ? placement->stream() : cudaStream_t{};
  RANK_CHECK_NCCL(issueCollective(run, op, sendAt, recvAt, comm, nranks, rank, stream)) << "in " << run.describe();
  if (placement != nullptr) placement->finish();
  if (harness::rankFailed()) return;
  checkElements(run, "receive buffer", recv.data(), expected.data(), layout.recvCount, ulps);
  if (harness::rankFailed()) return;
  checkElements(run, "send buffer (must not change)", send.data(), sent.data(), layout.sendCount, 0);
  if (harness::rankFailed()) return;
  checkGuards(run, "receive buffer", recv);
  if (harness::rankFailed()) return;
  checkGuards(run, "send buffer", send);
}

}  // namespace

std::string CollectiveRun::describe() const {
  std::string text = std::string(collectiveName(collective)) + " " + type->name;
  if (reduces(collective)) text += " " + op.name();
  text += " count " + std::to_string(count) + " " + placementName(placement);
  if (hasRoot(collective)) text += " root " + std::to_string(root);
  return text;
}

void runAndCheck(ncclComm_t comm, int nranks, int rank, const CollectiveRun& run, BufferPlacement* placement) {
  const BufferLayout layout = layoutOf(run.collective, run.count, nranks, rank);
  const int ulps = reduces(run.collective) ? ulpTolerance(*run.type, run.op, nranks) : 0;
  ncclRedOp_t op = ncclSum;
  makeOp(run, comm, &op);
  if (harness::rankFailed()) return;
  if (run.placement == Placement::kInPlace) {
    runInPlace(comm, nranks, rank, run, op, layout, ulps, placement);
  } else {
    runOutOfPlace(comm, nranks, rank, run, op, layout, ulps, placement);
  }
  if (harness::rankFailed()) return;
  destroyOp(run, comm, op);
}

void runEveryCollective(ncclComm_t comm, int nranks, int rank, std::initializer_list<size_t> counts, int root,
                        uint64_t seed) {
  const ElementType& type = elementType(ncclInt32);
  uint64_t iteration = 0;
  for (Collective collective : allCollectives()) {
    for (size_t count : counts) {
      CollectiveRun run;
      run.collective = collective;
      run.type = &type;
      run.op = allReductionsFor(type).front();
      run.count = count;
      run.placement = placementsOf(collective).front();
      run.root = root;
      run.seed = mixBits(seed, iteration++, 0);
      harness::noteRankProgress(run.describe());
      runAndCheck(comm, nranks, rank, run);
      if (harness::rankFailed()) return;
    }
  }
}

void runEveryTypeAndOp(ncclComm_t comm, int nranks, int rank, Collective collective, std::span<const size_t> counts,
                       uint64_t seed, BufferPlacement* placement, int root) {
  uint64_t iteration = 0;
  for (const ElementType& type : allElementTypes()) {
    std::vector<Reduction> ops = allReductionsFor(type);
    if (!reduces(collective)) ops.resize(1);  // unused
    for (const Reduction& op : ops) {
      for (size_t count : counts) {
        for (Placement where : placementsOf(collective)) {
          CollectiveRun run;
          run.collective = collective;
          run.type = &type;
          run.op = op;
          run.count = count;
          run.placement = where;
          run.root = root;
          run.seed = mixBits(seed, iteration++, 0);
          harness::noteRankProgress(run.describe());
          runAndCheck(comm, nranks, rank, run, placement);
          if (harness::rankFailed()) return;
        }
      }
    }
  }
}

}  // namespace weft::multirank
