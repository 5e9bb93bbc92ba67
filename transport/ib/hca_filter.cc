#include "transport/ib/hca_filter.h"

#include <charconv>

namespace weft::transport::ib {

bool HcaFilter::allows(std::string_view device, int port) const {
  if (entries.empty()) return true;
  bool listed = false;
  for (const Entry& entry : entries) {
    bool nameMatches = exact ? device == entry.device : device.starts_with(entry.device);
    if (nameMatches && (entry.port < 0 || entry.port == port)) listed = true;
  }
  return listed != exclude;
}

Status parseHcaFilter(std::string_view text, HcaFilter* filter) {
  *filter = HcaFilter{};
  const std::string quoted(text);
  if (text.starts_with('^')) {
    filter->exclude = true;
    text.remove_prefix(1);
  }
  if (text.starts_with('=')) {
    filter->exact = true;
    text.remove_prefix(1);
  }
  if (text.empty()) {
    if (filter->exclude || filter->exact) {
      return invalidArgument("NCCL_IB_HCA=%s names no device; give names such as mlx5_0:1,mlx5_1", quoted.c_str());
    }
    return Status::ok();
  }
  while (true) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    HcaFilter::Entry entry;
    size_t colon = item.find(':');
    entry.device = std::string(item.substr(0, colon));
    if (entry.device.empty()) {
      return invalidArgument("NCCL_IB_HCA=%s has an empty device name; give names such as mlx5_0:1,mlx5_1",
                             quoted.c_str());
    }
    if (colon != std::string_view::npos) {
      std::string_view port = item.substr(colon + 1);
      auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), entry.port);
      if (error != std::errc() || end != port.data() + port.size() || entry.port <= 0) {
        return invalidArgument("NCCL_IB_HCA=%s: port \"%.*s\" of %s is not a port number (1, 2, ...)",
                               quoted.c_str(), static_cast<int>(port.size()), port.data(), entry.device.c_str());
      }
    }
    filter->entries.push_back(std::move(entry));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return Status::ok();
}

}  // namespace weft::transport::ib
