#pragma once
// NCCL_IB_HCA: which verbs devices and ports to use, with NCCL's syntax.
//   "mlx5_0:1,mlx5_1"  only these (names are prefixes: "mlx5" matches mlx5_0, mlx5_1, ...);
//                      ":N" limits a device to port N
//   "^mlx5_3"          all but these
//   "=mlx5_1"          exact names ("^=" excludes exact names)
// Pure: no verbs, no environment.

#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace weft::transport::ib {

struct HcaFilter {
  struct Entry {
    std::string device;
    int port = -1;  // -1: any port
  };
  bool exclude = false;  // "^": the entries name what not to use
  bool exact = false;    // "=": device names match exactly, not as prefixes
  std::vector<Entry> entries;  // empty: everything

  /// Whether `device`'s port `port` may be used.
  bool allows(std::string_view device, int port) const;
};

/// Parses a NCCL_IB_HCA value. Fails on an empty entry or a port that is not a positive number,
/// quoting the value.
Status parseHcaFilter(std::string_view text, HcaFilter* filter);

}  // namespace weft::transport::ib
