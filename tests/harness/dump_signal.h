#pragma once
// Asking a hung test's processes what their communicators wait for before they are ended: Weft
// prints it on the signal WEFT_DUMP_SIGNAL names (README, "When something goes wrong").

#include <sys/types.h>

#include <vector>

namespace weft::harness {

/// The signal WEFT_DUMP_SIGNAL names (USR1, USR2, SIGUSR1, SIGUSR2 or a number), or 0 where it is
/// unset or names none.
int dumpSignal();

/// Sends the dump signal to each of `pids` (a process without Weft's handler dies of it: call this
/// only on processes about to be killed), then gives them a second to print. Nothing without one.
void askForProgressDumps(const std::vector<pid_t>& pids);

/// The same for this process, where Weft's handler is installed (else nothing).
void askThisProcessForProgressDump();

}  // namespace weft::harness
