#include "tests/harness/rank_runner.h"

#include <exception>

#include "tests/harness/rank_check.h"
#include "tests/harness/rank_modes.h"

namespace weft::harness {

::testing::AssertionResult runRanks(const RankRunOptions& options, const RankFunction& fn) {
  std::string label = options.label.empty() ? std::string("ranks") : options.label;
  if (options.nranks < 1) {
    return ::testing::AssertionFailure() << label << ": nranks " << options.nranks << " < 1";
  }
  const IdMaker makeId = [&options](ncclUniqueId* id) -> ::testing::AssertionResult {
    ScopedEnv env(options.env);
    ncclResult_t result = ncclGetUniqueId(id);
    if (result != ncclSuccess) {
      return ::testing::AssertionFailure() << "ncclGetUniqueId returned " << describeResult(result);
    }
    return ::testing::AssertionSuccess();
  };
  ::testing::AssertionResult outcome = ::testing::AssertionSuccess();
  if (options.mode == RankMode::kThreads) {
    ncclUniqueId id{};
    outcome = makeId(&id);
    if (outcome) outcome = runThreadRanks(options, fn, id);
  } else {
    outcome = runProcessRanks(options, fn, makeId);
  }
  if (outcome) return outcome;
  return ::testing::AssertionFailure() << label << " (" << options.nranks << " ranks as "
                                       << (options.mode == RankMode::kThreads ? "threads" : "processes")
                                       << "): " << outcome.message();
}

void runOneRank(RankRecord* record, const RankFunction& fn, int nranks, const ncclUniqueId& id) {
  RankScope scope(record);
  try {
    fn(record->rank(), nranks, id);
  } catch (const std::exception& e) {
    recordRankFailure(std::string("exception escaped the rank function: ") + e.what());
  } catch (...) {
    recordRankFailure("a non-standard exception escaped the rank function");
  }
}

std::string rankList(const std::vector<int>& ranks) {
  if (ranks.empty()) return "no rank";
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(ranks[i]);
  }
  return text;
}

ScopedComm::~ScopedComm() {
  if (comm_ == nullptr) return;
  if (rankFailed()) {
    (void)ncclCommAbort(comm_);
  } else {
    ncclResult_t result = ncclCommDestroy(comm_);
    if (currentRank() >= 0) {
      RANK_EXPECT(result == ncclSuccess) << "ncclCommDestroy returned " << describeResult(result);
    }
  }
}

ncclComm_t* ScopedComm::out() {
  if (comm_ != nullptr) (void)ncclCommDestroy(comm_);
  comm_ = nullptr;
  return &comm_;
}

ncclComm_t ScopedComm::release() {
  ncclComm_t comm = comm_;
  comm_ = nullptr;
  return comm;
}

std::string ranksAndModeLabel(int nranks, RankMode mode) {
  return std::to_string(nranks) + "ranks_" + (mode == RankMode::kThreads ? "threads" : "processes");
}

std::string ranksAndModeName(const ::testing::TestParamInfo<std::tuple<int, RankMode>>& info) {
  return ranksAndModeLabel(std::get<0>(info.param), std::get<1>(info.param));
}

}  // namespace weft::harness
