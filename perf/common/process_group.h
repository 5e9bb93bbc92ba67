#pragma once
// The processes of one benchmark run and the little they must agree on besides NCCL's own traffic:
// the unique id, the device lines, timings, error counts. Three launchers:
//   mpirun (OpenMPI)   OMPI_COMM_WORLD_SIZE or PMIX_RANK in the environment and MPI support built
//                      in: MPI_Init, rank 0 makes the id and broadcasts it;
//   environment        RANK/WORLD_SIZE (or SLURM_PROCID/SLURM_NTASKS; LOCAL_RANK or SLURM_LOCALID
//                      optional) with NCCL_COMM_ID: every process calls ncclGetUniqueId, which
//                      encodes NCCL_COMM_ID; the process-level exchanges go through NCCL itself
//                      once the communicator exists, so each process runs one rank (-t 1);
//   single process     everything else: the ranks are the -t threads of this process.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"
#include "perf/common/options.h"

namespace weft::perf {

enum class ReduceKind { kSum, kMin, kMax };

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  /// "mpi", "environment" or "single process".
  virtual const char* launcher() const = 0;
  /// This process's index and the number of processes.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Index of this process among those on the same host.
  virtual int localRank() const = 0;

  /// Collective: the processes of each color (NCCL_TESTS_SPLIT) form one communicator. Gives the
  /// processes of this process's color the same unique id and sets *commRank and *commSize to this
  /// process's index among them and their number (in process order). Only the mpi launcher splits:
  /// the others take every process as one color. Returns false (with a message in *error) when
  /// the id cannot be made.
  virtual bool shareUniqueId(int color, ncclUniqueId* id, int* commRank, int* commSize,
                             std::string* error) = 0;

  /// True when the exchanges below work only after attachComm (the environment launcher).
  virtual bool needsComm() const { return false; }
  /// Gives the group a communicator with one rank per process, for exchanges through NCCL; the
  /// comm must outlive the last exchange.
  virtual void attachComm(ncclComm_t comm) { (void)comm; }

  /// Collective: process 0 receives every process's text (any bytes) in process order; others get
  /// nothing.
  virtual std::vector<std::string> gatherToRoot(const std::string& text) = 0;
  /// Collective, called by one thread per process at a time.
  virtual void barrier() = 0;
  virtual void allReduce(double* value, ReduceKind kind) = 0;
  virtual void allReduce(int64_t* value, ReduceKind kind) = 0;

  /// Ends the run of every process with exitCode (MPI_Abort under mpirun). Does not return.
  [[noreturn]] virtual void abort(int exitCode);
  /// Called once at the end of a successful run (MPI_Finalize under mpirun).
  virtual void finalize() {}
};

/// Picks the launcher from the environment (see the file comment). May call MPI_Init with argc and
/// argv. Returns nullptr with a message in *error when the environment is inconsistent.
std::unique_ptr<ProcessGroup> createProcessGroup(int* argc, char*** argv, const Options& options,
                                                 std::string* error);

/// The MPI launcher, or nullptr when the benchmarks were built without MPI.
std::unique_ptr<ProcessGroup> createMpiProcessGroup(int* argc, char*** argv);

/// The host name up to its first dot, as nccl-tests prints it.
std::string shortHostName();

}  // namespace weft::perf
