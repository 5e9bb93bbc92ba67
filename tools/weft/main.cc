// weft: the command-line tool of Weft. `weft topo` prints the machine as the topology layer sees
// it; more subcommands come with the layers they show.

#include <CLI/CLI.hpp>

#include "src/base/version.h"
#include "tools/weft/topo_command.h"

int main(int argc, char** argv) {
  CLI::App app{weft::versionBanner()};
  app.require_subcommand(1);
  int exitCode = 0;
  weft::tools::addTopoCommand(app, &exitCode);
  CLI11_PARSE(app, argc, argv);
  return exitCode;
}
