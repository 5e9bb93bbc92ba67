#pragma once
// The lines nccl-tests prints before its table: versions, the options, and one "#  Rank ..." line
// per rank.

#include <string>

#include "perf/common/options.h"
#include "perf/common/process_group.h"
#include "perf/common/report.h"

namespace weft::perf {

/// From "# nccl-tests version ..." to "# Using devices": the library that was loaded, the options
/// (with options.notes), all printed by report.
void printRunHeader(const Report& report, const Options& options, int libraryVersion);

/// This process's "#  Rank ..." lines (one per -t thread; color is its NCCL_TESTS_SPLIT group).
std::string deviceLines(const Options& options, const ProcessGroup& group, int color);

}  // namespace weft::perf
