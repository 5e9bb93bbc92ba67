#pragma once
// Runs one program as the ranks of a job on this host, launched as Weft launches without MPI
// (RANK, WORLD_SIZE, NCCL_COMM_ID on the loopback), and watches them: the first rank that fails
// ends the others, and a job that outlives its deadline is ended. Nothing is left running.
//
// The bootstrap port stays reserved for the job (a socket bound with SO_REUSEADDR that does not
// listen): rank 0 may bind it, but no other process's bind to port 0 or outgoing connection gets
// it, so the ranks cannot meet a stranger there. Each job has its own WEFT_COMM_SECRET, so ranks of
// another job on the same port could not join it either.

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
