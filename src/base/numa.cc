#include "src/base/numa.h"

#include <dirent.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace weft {
namespace {

// True if `cpu` is in a Linux cpulist such as "0-3,8,10-11".
bool cpuListContains(const std::string& list, int cpu) {
  size_t begin = 0;
  while (begin < list.size()) {
    size_t comma = list.find(',', begin);
    if (comma == std::string::npos) comma = list.size();
    std::string range = list.substr(begin, comma - begin);
    int low = atoi(range.c_str());
    size_t dash = range.find('-');
    int high = dash == std::string::npos ? low : atoi(range.c_str() + dash + 1);
    if (cpu >= low && cpu <= high) return true;
    begin = comma + 1;
  }
  return false;
}

}  // namespace

int numaNodeOfAffinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
  int firstCpu = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) {
      firstCpu = cpu;
      break;
    }
  }
  if (firstCpu < 0) return -1;
  DIR* dir = opendir("/sys/devices/system/node");
  if (!dir) return -1;
  int result = -1;
  while (dirent* entry = readdir(dir)) {
    if (strncmp(entry->d_name, "node", 4) != 0) continue;
    std::ifstream in(std::string("/sys/devices/system/node/") + entry->d_name + "/cpulist");
    std::string list;
    if (std::getline(in, list) && cpuListContains(list, firstCpu)) {
      result = atoi(entry->d_name + 4);
      break;
    }
  }
  closedir(dir);
  return result;
}

}  // namespace weft
