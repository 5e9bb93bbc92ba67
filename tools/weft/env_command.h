#pragma once
// `weft env`: every knob (src/base/knob_list.h) with the value a communicator made from this
// environment would read, where it comes from (the environment, a configuration file, or the
// default), and whether it parses. The text is itself a configuration file (NAME=value lines,
// `#` comments): `weft env --set` saved as ~/.nccl.conf keeps this environment's settings.

#include <CLI/CLI.hpp>

namespace weft::tools {

/// Adds the `env` subcommand to `app`; its callback sets *exitCode (1 where a set value does not
/// parse: the library would warn and use the default).
void addEnvCommand(CLI::App& app, int* exitCode);

}  // namespace weft::tools
