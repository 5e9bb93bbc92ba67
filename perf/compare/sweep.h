#pragma once
// The measurement loop shared by the comparison programs (the MPI and Gloo peers and the machine's
// bounds): nccl-tests' size sweep and timing scheme, and all_reduce_perf's table, so that one
// parser reads every program's output and every number means the same thing.
//
// Per size, as all_reduce_perf does: `warmup` operations, a barrier, `iters` operations timed
// together on every rank, the mean time per operation averaged over the ranks, then one checked
// operation. Iteration i works on the buffers at iterationOffset(), walking through them so that
// small sizes are not measured in a warm cache.

#include <cstddef>
#include <cstdint>
#include <string>

namespace weft::perf::compare {

/// nccl-tests' flags that the comparison programs share, with all_reduce_perf's meanings.
struct SweepOptions {
  size_t minBytes = 8;                   // -b
  size_t maxBytes = size_t{256} << 20;   // -e
  size_t stepFactor = 2;                 // -f
  int iters = 20;                        // -n
  int warmupIters = 5;                   // -w
  int ranks = 2;                         // -p: processes of the programs that fork their own
  std::string store;                     // --store: Gloo's rendezvous directory
};

/// The flags a program accepts beyond -b -e -f -n -w.
struct ExtraFlags {
  bool ranks = false;  // -p
  bool store = false;  // --store (then required)
};

/// Parses argv. On -h or a bad argument prints the usage (with what was wrong) and returns false;
/// *exitCode is then 0 for -h and 2 otherwise. summary: what the program measures, for -h.
bool parseSweepOptions(int argc, char** argv, const char* summary, ExtraFlags extra, SweepOptions* options,
                       int* exitCode);

/// What a table row says the operation works on.
struct RowLabels {
  const char* type;
  const char* op;
  size_t elementSize;
};
inline constexpr RowLabels kFloatSum{"float", "sum", sizeof(float)};
inline constexpr RowLabels kBytesMoved{"uint8", "none", 1};

/// One program's measured operation, run by every rank. Methods are called from the rank's own
/// thread, in the same order on every rank; each may block on the other ranks.
class SweepTarget {
 public:
  virtual ~SweepTarget() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  /// busbw / algbw: 2(n-1)/n for an allreduce over n ranks, 1 for a copy.
  virtual double busBandwidthFactor() const = 0;
  /// The table's type and redop columns, and the element size behind its count column.
  virtual RowLabels labels() const = 0;
  /// One operation on `bytes`, on the buffers at iterationOffset(bytes, maxBytes, iter).
  /// Returns false (after printing why) if it failed.
  virtual bool runOnce(size_t bytes, int iter) = 0;
  /// Writes known inputs, runs one operation on `bytes` at offset 0 and returns how many result
  /// elements are wrong on this rank.
  virtual int64_t checkOnce(size_t bytes) = 0;
  virtual void barrier() = 0;
  /// The sum over every rank of value.
  virtual double sumOverRanks(double value) = 0;
};

/// Runs the sweep of options over target, printing the table on rank 0 under `title` (a line
/// such as "# mpi_allreduce_perf: MPI_Allreduce, Open MPI v4.1.4"). Returns the process exit
/// status: 0, or 1 when an operation failed or a result was wrong.
int runSweep(const SweepOptions& options, const std::string& title, SweepTarget& target);

/// Where iteration `iter` of an operation on `bytes` starts in buffers of maxBytes (what
/// all_reduce_perf does).
size_t iterationOffset(size_t bytes, size_t maxBytes, int iter);

/// Page-aligned memory of at least `bytes` (one page when 0), every page touched, so that no
/// first touch is timed. Aborts with a message when memory is short.
class TouchedBuffer {
 public:
  explicit TouchedBuffer(size_t bytes);
  ~TouchedBuffer();
  TouchedBuffer(const TouchedBuffer&) = delete;
  TouchedBuffer& operator=(const TouchedBuffer&) = delete;
  char* bytes() { return data_; }
  float* floats(size_t byteOffset = 0) { return reinterpret_cast<float*>(data_ + byteOffset); }

 private:
  char* data_ = nullptr;
};

/// Rank `rank`'s input element `index` for the checked operation: a small integer, so that every
/// summation order gives the same float.
float checkInput(int rank, size_t index);
/// What element `index` of a float sum over `ranks` ranks of checkInput() must be.
float checkSum(int ranks, size_t index);
/// Fills count floats with checkInput(rank, ...).
void fillCheckInput(float* data, size_t count, int rank);
/// How many of count floats differ from checkSum(ranks, ...).
int64_t countWrongSums(const float* data, size_t count, int ranks);

/// 2(n-1)/n: how much more than the buffer a ring allreduce moves over each link.
double allReduceBusFactor(int ranks);

}  // namespace weft::perf::compare
