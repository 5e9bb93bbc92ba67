#include "tests/harness/comm_clique.h"

#include "tests/harness/rank_check.h"

namespace weft::harness {

CommClique::~CommClique() { destroyAll(); }

CommClique::CommClique(CommClique&& other) noexcept : comms_(other.release()) {}

CommClique& CommClique::operator=(CommClique&& other) noexcept {
  if (this != &other) {
    destroyAll();
    comms_ = other.release();
  }
  return *this;
}

ncclResult_t CommClique::initAll(int nranks) {
  destroyAll();
  std::vector<ncclComm_t> comms(nranks, nullptr);
  ncclResult_t result = ncclCommInitAll(comms.data(), nranks, nullptr);
  if (result == ncclSuccess) comms_ = std::move(comms);
  return result;
}

ncclResult_t CommClique::initRanksInGroup(int nranks) {
  destroyAll();
  ncclUniqueId id{};
  ncclResult_t result = ncclGetUniqueId(&id);
  if (result != ncclSuccess) return result;
  std::vector<ncclComm_t> comms(nranks, nullptr);
  result = ncclGroupStart();
  if (result != ncclSuccess) return result;
  ncclResult_t first = ncclSuccess;
  for (int rank = 0; rank < nranks; ++rank) {
    ncclResult_t one = ncclCommInitRank(&comms[rank], nranks, id, rank);
    if (first == ncclSuccess) first = one;
  }
  ncclResult_t end = ncclGroupEnd();
  if (first == ncclSuccess) first = end;
  if (first == ncclSuccess) comms_ = std::move(comms);
  return first;
}

void CommClique::adopt(std::vector<ncclComm_t> comms) {
  destroyAll();
  comms_ = std::move(comms);
}

std::vector<ncclComm_t> CommClique::release() {
  std::vector<ncclComm_t> comms = std::move(comms_);
  comms_.clear();
  return comms;
}

void CommClique::destroyAll() {
  for (ncclComm_t comm : comms_) {
    if (comm != nullptr) (void)ncclCommDestroy(comm);
  }
  comms_.clear();
}

ncclResult_t runGrouped(const std::vector<ncclComm_t>& comms,
                        const std::function<ncclResult_t(int index, ncclComm_t comm)>& body) {
  ncclResult_t first = ncclGroupStart();
  if (first != ncclSuccess) return first;
  for (size_t i = 0; i < comms.size(); ++i) {
    if (comms[i] == nullptr) continue;
    ncclResult_t one = body(static_cast<int>(i), comms[i]);
    if (first == ncclSuccess) first = one;
  }
  ncclResult_t end = ncclGroupEnd();
  return first == ncclSuccess ? end : first;
}

::testing::AssertionResult ncclSucceeded(ncclResult_t result) {
  if (result == ncclSuccess) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << describeResult(result);
}

}  // namespace weft::harness
