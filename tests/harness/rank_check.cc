#include "tests/harness/rank_check.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace weft::harness {
namespace {

thread_local RankRecord* tCurrentRecord = nullptr;

const char* resultName(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "unknown ncclResult_t";
  }
}

}  // namespace

RankRecord::RankRecord(int rank, std::function<void(const std::string&)> onFirstFailure,
                       std::function<void(const std::string&)> onNote)
    : rank_(rank), onFirstFailure_(std::move(onFirstFailure)), onNote_(std::move(onNote)) {}

void RankRecord::setNote(const std::string& text) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    note_ = text;
  }
  if (onNote_) onNote_(text);
}

std::string RankRecord::note() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return note_;
}

void RankRecord::addFailure(const std::string& text) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first = failureCount_ == 0;
    if (first) {
      firstFailure_ = text;
      firstFailureTime_ = std::chrono::steady_clock::now();
    }
    ++failureCount_;
  }
  if (first && onFirstFailure_) onFirstFailure_(text);
}

bool RankRecord::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failureCount_ > 0;
}

std::string RankRecord::firstFailure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return firstFailure_;
}

int RankRecord::failureCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failureCount_;
}

std::chrono::steady_clock::time_point RankRecord::firstFailureTime() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return firstFailureTime_;
}

RankScope::RankScope(RankRecord* record) : previous_(tCurrentRecord) { tCurrentRecord = record; }

RankScope::~RankScope() { tCurrentRecord = previous_; }

void recordRankFailure(const std::string& text) {
  if (tCurrentRecord == nullptr) {
    std::fprintf(stderr, "rank check outside any rank function: %s\n", text.c_str());
    std::abort();
  }
  tCurrentRecord->addFailure("rank " + std::to_string(tCurrentRecord->rank()) + ": " + text);
}

void noteRankProgress(const std::string& text) {
  if (tCurrentRecord != nullptr) tCurrentRecord->setNote(text);
}

bool rankFailed() { return tCurrentRecord != nullptr && tCurrentRecord->failed(); }

int currentRank() { return tCurrentRecord == nullptr ? -1 : tCurrentRecord->rank(); }

RankRecord* currentRankRecord() { return tCurrentRecord; }

std::string describeResult(ncclResult_t result) {
  std::string text = resultName(result);
  text += " (";
  const char* meaning = ncclGetErrorString(result);
  text += meaning == nullptr ? "null error string" : meaning;
  text += ")";
  if (result != ncclSuccess) {
    const char* last = ncclGetLastError(nullptr);
    text += ", last error: \"";
    text += last == nullptr ? "" : last;
    text += "\"";
  }
  return text;
}

RankFailureMessage::RankFailureMessage(const char* file, int line, const char* what)
    : file_(file), line_(line), what_(what) {}

std::string RankFailureMessage::text() const {
  std::string detail = detail_.str();
  while (!detail.empty() && detail.back() == ' ') detail.pop_back();
  const char* base = std::strrchr(file_, '/');
  std::string where = std::string(base == nullptr ? file_ : base + 1) + ":" + std::to_string(line_);
  bool hasWhat = what_ != nullptr && *what_ != '\0';
  if (detail.empty()) return "`" + std::string(hasWhat ? what_ : "check") + "` failed [at " + where + "]";
  if (!hasWhat) return detail + " [at " + where + "]";
  return detail + " [`" + what_ + "` at " + where + "]";
}

void RankFailureSink::operator=(const RankFailureMessage& message) const {
  recordRankFailure(message.text());
}

}  // namespace weft::harness
