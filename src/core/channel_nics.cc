#include "src/core/channel_nics.h"

#include <algorithm>
#include <string>

#include "src/base/log.h"
#include "src/core/machine.h"

namespace weft::core {
namespace {

bool carries(const topology::Node& nic, const transport::NetDevice& device) {
  if (nic.pci && !device.pciBusId.empty() &&
      topology::canonicalBusId(nic.pci->busId) == topology::canonicalBusId(device.pciBusId)) {
    return true;
  }
  return std::any_of(nic.nic.ports.begin(), nic.nic.ports.end(), [&](const topology::NetPort& port) {
    return port.name == device.device || (!device.netdev.empty() && port.name == device.netdev);
  });
}

struct Candidate {
  int device = -1;  // index into the transport's devices
  int nic = -1;     // the NIC node carrying it
  int numa = -1;    // of that NIC
};

// The candidate of each channel, by channelNetDevices' rule (all unset when there is none).
std::vector<Candidate> channelCandidates(const topology::System& system,
                                         const std::vector<transport::NetDevice>& devices, const PeerInfo& self,
                                         int channels) {
  std::vector<Candidate> candidates;
  std::vector<bool> taken(devices.size(), false);
  for (int nic : system.nodesOfType(topology::NodeType::kNic)) {
    for (size_t d = 0; d < devices.size(); ++d) {
      if (taken[d] || !carries(system.node(nic), devices[d])) continue;
      taken[d] = true;
      candidates.push_back(Candidate{static_cast<int>(d), nic, system.node(nic).cpuNuma});
    }
  }
  std::vector<Candidate> chosen(channels);
  if (candidates.empty()) return chosen;
  if (self.gpuBusId[0] == '\0' && self.numaNode >= 0) {
    std::vector<Candidate> local;
    std::copy_if(candidates.begin(), candidates.end(), std::back_inserter(local),
                 [&](const Candidate& c) { return c.numa == self.numaNode; });
    if (!local.empty()) candidates.swap(local);
  }
  for (int channel = 0; channel < channels; ++channel) {
    chosen[channel] = candidates[static_cast<size_t>(channel) % candidates.size()];
  }
  return chosen;
}

}  // namespace

std::vector<int> channelNetDevices(const topology::System& system, const std::vector<transport::NetDevice>& devices,
                                   const PeerInfo& self, int channels) {
  std::vector<int> chosen;
  for (const Candidate& candidate : channelCandidates(system, devices, self, channels)) {
    chosen.push_back(candidate.device);
  }
  return chosen;
}

std::vector<int> channelNics(const topology::System& system, const std::vector<transport::NetDevice>& devices,
                             const PeerInfo& self, int channels) {
  std::vector<int> chosen;
  for (const Candidate& candidate : channelCandidates(system, devices, self, channels)) chosen.push_back(candidate.nic);
  return chosen;
}

std::vector<int> channelNetDevicesHere(const std::vector<transport::NetDevice>& devices, const PeerInfo& self,
                                       int channels) {
  std::vector<int> chosen(channels, -1);
  if (devices.empty()) return chosen;
  const Machine& machine = localMachine();
  if (!machine.status.isOk()) {
    WEFT_INFO(log::kGraph, "rank %d: the machine could not be read (%s); the network transport picks each channel's "
              "device", self.rank, machine.status.message().c_str());
    return chosen;
  }
  chosen = channelNetDevices(machine.system, devices, self, channels);
  if (chosen.empty() || chosen.front() < 0) {
    std::string names;
    for (const transport::NetDevice& device : devices) names += (names.empty() ? "" : ", ") + device.name;
    WEFT_INFO(log::kGraph, "rank %d: no NIC of %s carries a network device (%s); the network transport picks each "
              "channel's device", self.rank, machine.system.source().c_str(), names.c_str());
    return chosen;
  }
  std::string line;
  for (int channel = 0; channel < channels; ++channel) {
    line += " " + std::to_string(channel) + ":" + devices[chosen[channel]].name;
  }
  WEFT_INFO(log::kGraph, "rank %d: network device per channel, from the NICs of %s:%s", self.rank,
            machine.system.source().c_str(), line.c_str());
  return chosen;
}

}  // namespace weft::core
