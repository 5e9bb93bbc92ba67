#include "src/core/machine.h"

#include <map>
#include <memory>
#include <mutex>

#include "topology/load.h"

namespace weft::core {

const Machine& localMachine() {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Machine>> loaded;
  const std::string file = topology::configuredTopologyFile();
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Machine>& entry = loaded[file];
  if (entry == nullptr) {
    entry = std::make_unique<Machine>();
    entry->file = file;
    entry->status = topology::loadSystem(file, &entry->system);
    if (entry->status.isOk()) entry->paths.emplace(entry->system);
  }
  return *entry;
}

}  // namespace weft::core
