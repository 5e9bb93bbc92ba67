#pragma once
// `weft tune`: prints the tuner's table for a communicator shape: sizes down, each algorithm's
// predicted time across, the choice marked (algorithms/tuner.h; with --gpu, the GPU path's
// allreduce between the ring and NVLS, algorithms/gpu_tuner.h).

#include <CLI/CLI.hpp>

namespace weft::tools {

/// Adds the `tune` subcommand to `app`; its callback sets *exitCode.
void addTuneCommand(CLI::App& app, int* exitCode);

}  // namespace weft::tools
