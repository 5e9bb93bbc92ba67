#pragma once
// Runs one program as the ranks of a job on this host, launched as Weft launches without MPI
// (RANK, WORLD_SIZE, NCCL_COMM_ID on the loopback), and watches them: the first rank that fails
// ends the others, and a job that outlives its deadline is ended. Each rank leads a process group
// that is killed when the rank ends, and dies with this process: nothing is left running.
//
// The bootstrap port stays reserved for the job (a socket bound with SO_REUSEADDR that does not
// listen): rank 0 may listen there, and no bind to port 0 or outgoing connection elsewhere takes
// it; only a process that binds that very port number could. Each job has its own
// WEFT_COMM_SECRET, so the ranks of another job could not join it, and a rank that reaches
// something other than the root fails once the root's welcome is overdue (src/core/bootstrap.h).

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace weft::tools {

struct LocalJob {
  std::string program;
  std::vector<std::string> arguments;
  int ranks = 2;
  /// Set in every rank, after the launch variables.
  std::vector<std::pair<std::string, std::string>> environment;
  /// Variables removed from every rank's environment.
  std::vector<std::string> unset;
  /// Ends the job, all ranks, when it runs longer.
  std::chrono::seconds deadline{180};
};

struct LocalJobResult {
  bool ok = false;
  /// Each rank's standard output and error, interleaved as written.
  std::vector<std::string> output;
  /// Why the job failed: the first rank to fail and how, or the deadline; empty when ok.
  std::string why;
};

/// Runs `job` and returns when every rank has exited or was ended.
LocalJobResult runLocalJob(const LocalJob& job);

}  // namespace weft::tools
