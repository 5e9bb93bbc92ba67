#pragma once
// `weft topo`: loads or detects the system, searches its rings and prints its report
// (tools/weft/topo_report.h).

#include <CLI/CLI.hpp>

namespace weft::tools {

/// Adds the `topo` subcommand to `app`; its callback sets *exitCode.
void addTopoCommand(CLI::App& app, int* exitCode);

}  // namespace weft::tools
