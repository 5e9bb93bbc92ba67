#include "topology/hwloc_pci_link.h"

#include <cmath>

namespace weft::topology {

namespace {

struct PcieGeneration {
  double speedGts;
  double gigabytesPerLane;  // after line encoding, as hwloc computes it
};

constexpr PcieGeneration kGenerations[] = {
    {2.5, 2.5 * 0.8 / 8},               // 8b/10b
    {5.0, 5.0 * 0.8 / 8},               // 8b/10b
    {8.0, 8.0 * 128 / 130 / 8},         // 128b/130b
    {16.0, 16.0 * 128 / 130 / 8},       // 128b/130b
    {32.0, 32.0 * 128 / 130 / 8},       // 128b/130b
    {64.0, 64.0 * 242 / 256 / 8},       // FLIT mode
};

constexpr int kWidths[] = {1, 2, 4, 8, 16};

}  // namespace

PciLink pciLinkFromHwlocSpeed(double gigabytesPerSecond) {
  if (!(gigabytesPerSecond > 0)) return {};
  for (const PcieGeneration& generation : kGenerations) {
    const double lanes = gigabytesPerSecond / generation.gigabytesPerLane;
    for (int width : kWidths) {
      // hwloc stores a float: allow its rounding, not a neighbouring width.
      if (std::fabs(lanes - width) <= 0.01 * width) return PciLink{generation.speedGts, width};
    }
  }
  return {};
}

}  // namespace weft::topology
