// weft: the command-line tool of Weft. `weft topo` prints the machine as the topology layer sees
// it; `weft tune` the tuner's predictions and choices; `weft sim` times schedules over a modelled
// fabric; `weft env` the knobs as the library would read them.

#include <CLI/CLI.hpp>

#include "src/base/version.h"
#include "tools/weft/env_command.h"
#include "tools/weft/sim_command.h"
#include "tools/weft/topo_command.h"
#include "tools/weft/tune_command.h"

int main(int argc, char** argv) {
  CLI::App app{weft::versionBanner()};
  app.require_subcommand(1);
  int exitCode = 0;
  weft::tools::addTopoCommand(app, &exitCode);
  weft::tools::addTuneCommand(app, &exitCode);
  weft::tools::addSimCommand(app, &exitCode);
  weft::tools::addEnvCommand(app, &exitCode);
  CLI11_PARSE(app, argc, argv);
  return exitCode;
}
