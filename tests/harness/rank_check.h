#pragma once
// Checks inside rank functions. A GoogleTest assertion made in a forked child or in a thread that
// the runner started cannot fail the test, so a rank records its failure here instead and returns;
// the runner (tests/harness/rank_runner.h) reports the first failing rank with its message.
//
//   RANK_CHECK(got == want) << "allreduce float sum count 7 element 3: got " << got;  // returns
//   RANK_EXPECT(n == 4) << "ncclCommCount gave " << n;                              // continues
//   RANK_CHECK_NCCL(ncclAllReduce(...));  // returns, naming the call, result and ncclGetLastError
//
// RANK_CHECK and RANK_CHECK_NCCL return from the enclosing function, which must return void;
// a helper that checks lets its caller test rankFailed() afterwards.

#include <chrono>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>

#include "nccl.h"

namespace weft::harness {

/// What one rank recorded. Thread-safe: the rank's thread writes, the runner reads at any time.
class RankRecord {
 public:
  /// `onFirstFailure` and `onNote` (either may be empty) are called on the rank's thread with the
  /// first failure's text and with each note: forked ranks use them to tell the parent at once.
  explicit RankRecord(int rank, std::function<void(const std::string&)> onFirstFailure = {},
                      std::function<void(const std::string&)> onNote = {});

  int rank() const { return rank_; }
  void addFailure(const std::string& text);
  void setNote(const std::string& text);
  /// The last note: what the rank was doing.
  std::string note() const;
  bool failed() const;
  /// The first failure's text ("rank 2: ..."), and how many failures followed it.
  std::string firstFailure() const;
  int failureCount() const;
  std::chrono::steady_clock::time_point firstFailureTime() const;

 private:
  const int rank_;
  std::function<void(const std::string&)> onFirstFailure_;
  std::function<void(const std::string&)> onNote_;
  mutable std::mutex mutex_;
  std::string note_;
  std::string firstFailure_;
  int failureCount_ = 0;
  std::chrono::steady_clock::time_point firstFailureTime_;
};

/// Binds the calling thread to `record` while it lives: checks made on this thread land there.
class RankScope {
 public:
  explicit RankScope(RankRecord* record);
  ~RankScope();
  RankScope(const RankScope&) = delete;
  RankScope& operator=(const RankScope&) = delete;

 private:
  RankRecord* previous_;
};

/// Records a failure of the calling thread's rank; the text gets the prefix "rank N: ". Outside any
/// RankScope this prints the text and aborts: a check outside a rank function is a test bug.
void recordRankFailure(const std::string& text);

/// Notes what the calling thread's rank does now ("AllReduce float32 sum count 7 in-place"): a
/// rank still running at the deadline is reported with its last note. Outside any rank function it
/// does nothing.
void noteRankProgress(const std::string& text);

/// True once the calling thread's rank has recorded a failure.
bool rankFailed();

/// The calling thread's rank, or -1 outside any rank function.
int currentRank();

/// The calling thread's rank's record, or null outside any rank function: for a rank function
/// that starts threads of its own, whose failures it passes on.
RankRecord* currentRankRecord();

/// "ncclInvalidArgument (4: invalid argument ...), last error: <ncclGetLastError(nullptr)>".
std::string describeResult(ncclResult_t result);

/// The text of one failed check, streamed by the check macros' callers.
class RankFailureMessage {
 public:
  RankFailureMessage(const char* file, int line, const char* what);
  template <typename T>
  RankFailureMessage& operator<<(const T& value) {
    detail_ << value;
    return *this;
  }
  /// "<detail> [`<what>` at <file>:<line>]"; without detail, "`<what>` failed [at <file>:<line>]".
  /// An empty `what` is left out.
  std::string text() const;

 private:
  const char* file_;
  int line_;
  const char* what_;
  std::ostringstream detail_;
};

/// Records the message assigned to it. `=` binds looser than `<<`, so the whole streamed message is
/// built before it is recorded.
struct RankFailureSink {
  void operator=(const RankFailureMessage& message) const;
};

}  // namespace weft::harness

// The switch keeps a caller's `else` from binding to the macro's `if`.
#define RANK_CHECK(condition)                  \
  switch (0)                                   \
  case 0:                                      \
  default:                                     \
    if (condition) {                           \
    } else                                     \
      return ::weft::harness::RankFailureSink() = \
                 ::weft::harness::RankFailureMessage(__FILE__, __LINE__, #condition)

#define RANK_EXPECT(condition)                 \
  switch (0)                                   \
  case 0:                                      \
  default:                                     \
    if (condition) {                           \
    } else                                     \
      ::weft::harness::RankFailureSink() =     \
          ::weft::harness::RankFailureMessage(__FILE__, __LINE__, #condition)

#define RANK_CHECK_NCCL(call)                                                         \
  switch (0)                                                                          \
  case 0:                                                                             \
  default:                                                                            \
    if (const ncclResult_t rank_check_result_ = (call); rank_check_result_ == ncclSuccess) { \
    } else                                                                            \
      return ::weft::harness::RankFailureSink() =                                     \
                 ::weft::harness::RankFailureMessage(__FILE__, __LINE__, "")           \
                 << #call << " returned " << ::weft::harness::describeResult(rank_check_result_) << " "
