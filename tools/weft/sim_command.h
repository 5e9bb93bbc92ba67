#pragma once
// `weft sim`: times a collective's real schedules over a modelled fabric (sim/) of N nodes like
// one topology file, per size and algorithm, and shows where the tree overtakes the ring.

#include <CLI/CLI.hpp>

namespace weft::tools {

/// Adds the `sim` subcommand to `app`; its callback sets *exitCode.
void addSimCommand(CLI::App& app, int* exitCode);

}  // namespace weft::tools
